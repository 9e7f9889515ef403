/**
 * The dry run of a plan change on the real servers: a landscape of its own (broker and worker as
 * one process, with admin credentials), the example operator, and instances of a copy of the
 * design document's plan provisioned through the OSB API. A dry run of a new spec reports, per
 * instance, the operator's resource changed in exactly the field the new spec changes and a new
 * Secret added, without its value, and applies nothing: no object, record, label or update
 * workflow changes. Once the same spec is applied and rolled out, the live objects differ from
 * before in exactly the fields the dry run reported. A spec whose template fails is reported per
 * instance, not as a crash; the command line prints the same dry run as a diff.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { comparable, fieldChanges } from '../../src/activities/object-diff.js';
import type { ObjectChange, PlanDryRunReport } from '../../src/admin/dry-run.js';
import { readObject } from '../../src/kube/objects.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { patchRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { LABELS, planRevision, resourceName } from '../../src/resources/names.js';
import { SFCLUSTER, type SFPlan } from '../../src/resources/types.js';
import { ADMIN, callAdmin, runBuiltCli } from '../support/admin.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, type OsbClient } from '../support/osb.js';
import { installDesignPlan, planHelpers } from '../support/plans.js';
import { startOperator, startProcess, systemSettings, type SystemProcess } from '../support/system.js';

/** What the new spec puts in the Secret it adds: never to be seen in a report or a log. */
const SECRET_VALUE = `dry-run-secret-${unique('v')}`;

describe('the dry run of a plan change', () => {
  const [master] = clusters();
  const registry = unique('dry-run');
  let design: SFPlan;
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  let temporal: Awaited<ReturnType<typeof temporalClient>>;
  const { readPlan, planCopy, provisionMany, changePlan, recordOf, postgresqlOf } = planHelpers({
    master: master!,
    registry,
    osb: () => osb,
    design: () => design,
  });

  beforeAll(async () => {
    design = await installDesignPlan(master!, registry);
    operator = await startOperator();
    system = await startProcess(
      'all',
      await systemSettings({
        INTEROP_NAMESPACE: registry,
        INTEROP_ADMIN_USERNAME: ADMIN.username,
        INTEROP_ADMIN_PASSWORD: ADMIN.password,
      }),
    );
    osb = osbClient(system.url);
    temporal = await temporalClient();
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
    await temporal?.close();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  const dryRun = (planId: string, body: unknown, query = '') =>
    callAdmin(system.url, 'POST', `/admin/plans/${planId}/dry-run${query}`, { body });

  /** The update workflows started for the plan's instances. */
  const updatesOf = async (planId: string): Promise<number> =>
    (await temporal.client.workflow.count(`WorkflowType = 'updateWorkflow' AND OsbPlanId = '${planId}'`))
      .count;

  /** The plan's spec with `context.maxConnections` 120 and a Secret added to the provision template. */
  function newSpec(plan: SFPlan): SFPlan['spec'] {
    const secret = [
      '',
      '---',
      'apiVersion: v1',
      'kind: Secret',
      'metadata:',
      '  name: {{ $namePrefix }}-{{ $instanceID }}-extra',
      'stringData:',
      `  password: ${SECRET_VALUE}`,
      '',
    ].join('\n');
    return {
      ...plan.spec,
      context: { ...plan.spec.context, maxConnections: 120 },
      templates: plan.spec.templates.map((t) =>
        t.action === 'provision' ? { ...t, content: `${t.content!.trimEnd()}${secret}` } : t,
      ),
    };
  }

  /** What the apiserver holds of the instance: its operator's resource and its record. */
  async function stateOf(instanceId: string) {
    const record = await recordOf(instanceId);
    return {
      postgresql: await postgresqlOf(instanceId),
      recordVersion: record?.metadata.resourceVersion,
      revision: record?.metadata.labels?.[LABELS.planRevision],
      extraSecret: await readObject(master!, {
        apiVersion: 'v1',
        kind: 'Secret',
        name: `sapcp-${instanceId}-extra`,
        namespace: `sf-${instanceId}`,
      }),
    };
  }

  test('reports exactly what the rollout then changes, and applies nothing', async () => {
    // GIVEN three instances of a copy of the design plan
    const planId = await planCopy('dry-run');
    const instances = await provisionMany(planId, 3);
    const plan = (await readPlan(planId))!;
    const before = Object.fromEntries(
      await Promise.all(instances.map(async (id) => [id, await stateOf(id)])),
    );
    const spec = newSpec(plan);

    // WHEN the new spec is dry run
    const res = await dryRun(planId, { spec });

    // THEN each instance's operator resource changes in max_connections alone, and a Secret is added
    expect(res.status).toBe(200);
    const report = res.body as unknown as PlanDryRunReport;
    expect(report).toMatchObject({
      planId,
      revision: planRevision(spec),
      currentRevision: plan.status!.specHash,
      summary: { changed: 3, unchanged: 0, failed: 0 },
    });
    expect(report.continue).toBeUndefined();
    expect(report.instances.map((i) => i.instanceId).sort()).toEqual([...instances].sort());
    for (const instance of report.instances) {
      const id = instance.instanceId;
      expect(instance).toMatchObject({ clusterId: '1', revision: plan.status!.specHash });
      expect(instance.error).toBeUndefined();
      expect(instance.objects).toEqual([
        {
          apiVersion: 'acid.zalan.do/v1',
          kind: 'postgresql',
          name: `sapcp-${id}`,
          namespace: `sf-${id}`,
          change: 'changed',
          fields: [{ path: 'spec.postgresql.parameters.max_connections', old: '100', new: '120' }],
        },
        {
          apiVersion: 'v1',
          kind: 'Secret',
          name: `sapcp-${id}-extra`,
          namespace: `sf-${id}`,
          change: 'added',
        },
      ]);
    }
    expect(JSON.stringify(report)).not.toContain(SECRET_VALUE);

    // AND nothing was applied: objects, records and revision labels as they were, no update started
    for (const id of instances) expect(await stateOf(id)).toEqual(before[id]);
    expect((await readPlan(planId))?.status?.specHash).toBe(plan.status!.specHash);
    expect(await updatesOf(planId)).toBe(0);

    // AND the command line prints the same dry run as a diff, from the whole SFPlan in YAML
    const file = join(mkdtempSync(join(tmpdir(), 'dry-run-')), 'plan.yaml');
    writeFileSync(
      file,
      stringify({ apiVersion: plan.apiVersion, kind: 'SFPlan', metadata: plan.metadata, spec }),
    );
    const cli = await runBuiltCli(system.url, 'plan', 'dry-run', planId, '--file', file, '--limit', '2');
    expect([cli.status, cli.stderr]).toEqual([0, '']);
    for (const id of instances) {
      expect(cli.stdout).toContain(
        `instance ${id} (cluster 1, revision ${plan.status!.specHash} → ${report.revision}):\n` +
          `  ~ postgresql sf-${id}/sapcp-${id}\n` +
          '      ~ spec.postgresql.parameters.max_connections: "100" → "120"\n' +
          `  + Secret sf-${id}/sapcp-${id}-extra (added)\n`,
      );
    }
    expect(cli.stdout).toContain(
      `plan ${planId}: revision ${plan.status!.specHash} → ${report.revision}; 3 instances: 3 would change, 0 unchanged, 0 failed; nothing was applied\n`,
    );
    expect(await updatesOf(planId)).toBe(0);

    // WHEN the same spec is applied and rolled out by an admin
    expect(await changePlan(planId, { context: spec.context, templates: spec.templates })).toBe(
      report.revision,
    );
    await eventually('the new revision recorded', async () =>
      (await readPlan(planId))?.status?.specHash === report.revision ? true : undefined,
    );
    // (a 409 while the broker's catalog has the spec but not yet the workers' record of it)
    const started = await eventually('the rollout started', async () => {
      const res = await callAdmin(system.url, 'POST', `/admin/plans/${planId}/rollout`, { body: {} });
      return res.status === 409 ? undefined : res;
    });
    expect({ status: started.status, revision: started.body.revision }).toEqual({
      status: 202,
      revision: report.revision,
    });
    await eventually(
      'the rollout done',
      async () => {
        const progress = await callAdmin(system.url, 'GET', `/admin/plans/${planId}/rollout`);
        return progress.body.revision === report.revision && progress.body.state === 'done'
          ? progress.body
          : undefined;
      },
      180_000,
    );

    // THEN the live objects differ from before in exactly the fields the dry run reported
    for (const { instanceId: id, objects } of report.instances) {
      const after = await stateOf(id);
      const reported = objects.find((o) => o.kind === 'postgresql') as ObjectChange;
      expect(fieldChanges(comparable(before[id]!.postgresql), comparable(after.postgresql))).toEqual(
        reported.fields,
      );
      expect(after.extraSecret).toBeDefined();
      expect(before[id]!.extraSecret).toBeUndefined();
      expect(after.revision).toBe(report.revision);
    }
    expect(await updatesOf(planId)).toBe(3);

    // AND the secret's value reached no log line
    expect(readFileSync(system.logFile, 'utf8')).not.toContain(SECRET_VALUE);
  }, 400_000);

  test('a spec whose template fails is reported per instance; bad input is a 400; the command line exits 3', async () => {
    const planId = await planCopy('dry-run-failing');
    const instances = await provisionMany(planId, 2);
    const plan = (await readPlan(planId))!;
    const failing: SFPlan['spec'] = {
      ...plan.spec,
      templates: plan.spec.templates.map((t) =>
        t.action === 'provision' ? { ...t, content: '{{ fail "this plan is not ready" }}' } : t,
      ),
    };

    // WHEN dry run THEN 200, each instance with the template's error, nothing else
    const res = await dryRun(planId, { spec: failing }, '?limit=1');
    expect(res.status).toBe(200);
    const first = res.body as unknown as PlanDryRunReport;
    expect(first.instances).toHaveLength(1);
    expect(first.continue).toBeDefined();
    expect(first.summary).toEqual({ changed: 0, unchanged: 0, failed: 1 });
    expect(first.instances[0]).toMatchObject({
      objects: [],
      error: expect.stringMatching(
        /provision template of plan dry-run-failing failed.*this plan is not ready/,
      ),
    });
    const second = (
      await dryRun(planId, { spec: failing }, `?limit=1&continue=${encodeURIComponent(first.continue!)}`)
    ).body as unknown as PlanDryRunReport;
    expect([...first.instances, ...second.instances].map((i) => i.instanceId).sort()).toEqual(
      [...instances].sort(),
    );

    // AND a spec of another plan, or an unknown plan, is refused in the admin error shape
    const other = await dryRun(planId, { spec: { ...failing, id: 'another-plan' } });
    expect([other.status, other.body.error]).toEqual([400, 'BadRequest']);
    const renamed = await dryRun(planId, { spec: { ...failing, description: '' } });
    expect([renamed.status, renamed.body.description]).toEqual([
      400,
      expect.stringMatching(/catalog would leave/),
    ]);
    expect((await dryRun('no-such-plan', { spec: { ...failing, id: 'no-such-plan' } })).status).toBe(404);

    // AND the command line prints each failure and exits 3
    const file = join(mkdtempSync(join(tmpdir(), 'dry-run-')), 'spec.json');
    writeFileSync(file, JSON.stringify(failing));
    const cli = await runBuiltCli(system.url, 'plan', 'dry-run', planId, '-f', file);
    expect(cli.status).toBe(3);
    for (const id of instances) expect(cli.stdout).toMatch(new RegExp(`instance ${id} \\(.*\\): FAILED: `));
    expect(await updatesOf(planId)).toBe(0);
  }, 300_000);
});

describe('the dry run of a plan change on a sister cluster', () => {
  const [master, ...sisters] = clusters();
  const [, sisterId] = environment().clusters.map((c) => c.id) as [string, string];
  const sister = sisters[0]!;
  const registry = unique('dry-run-mc');
  let design: SFPlan;
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  const { readPlan, planCopy, provisionMany, recordOf, postgresqlOf } = planHelpers({
    master: master!,
    registry,
    osb: () => osb,
    design: () => design,
  });

  beforeAll(async () => {
    design = await installDesignPlan(master!, registry);
    for (const c of environment().clusters) {
      await registerCluster(master!, registry, c.id, c.kubeconfigPath);
      await patchRecordStatus(master!, SFCLUSTER, registry, c.id, { phase: 'running' });
    }
    await patchRecord(master!, SFCLUSTER, registry, sisterId, { spec: { labels: { dryrun: 'here' } } });
    operator = await startOperator();
    system = await startProcess(
      'all',
      await systemSettings({
        INTEROP_NAMESPACE: registry,
        INTEROP_SCHEDULER: 'label-selector',
        INTEROP_ADMIN_USERNAME: ADMIN.username,
        INTEROP_ADMIN_PASSWORD: ADMIN.password,
      }),
    );
    osb = osbClient(system.url);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  test('reads the objects on the sister and writes nothing there: not even the record’s copy', async () => {
    // GIVEN an instance placed on the sister
    const planId = await planCopy('dry-run-on-sister', {
      templates: [
        ...design.spec.templates,
        { action: 'clusterSelector', type: 'gotemplate', content: 'dryrun=here' },
      ],
    });
    const [id] = await provisionMany(planId, 1);
    expect((await recordOf(id!))?.spec.clusterId).toBe(sisterId);
    const copyRef = {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFServiceInstance',
      name: resourceName(id!),
      namespace: `sf-${id}`,
    };
    const before = { postgresql: await postgresqlOf(id!, sister), copy: await readObject(sister, copyRef) };
    expect(before.copy).toBeDefined();
    const plan = (await readPlan(planId))!;

    // WHEN a new spec is dry run
    const res = await callAdmin(system.url, 'POST', `/admin/plans/${planId}/dry-run`, {
      body: { spec: { ...plan.spec, context: { ...plan.spec.context, maxConnections: 90 } } },
    });

    // THEN the sister's object is compared, and neither it nor the record's copy there changed
    expect(res.status).toBe(200);
    expect((res.body as unknown as PlanDryRunReport).instances).toEqual([
      {
        instanceId: id,
        clusterId: sisterId,
        revision: plan.status!.specHash,
        objects: [
          {
            apiVersion: 'acid.zalan.do/v1',
            kind: 'postgresql',
            name: `sapcp-${id}`,
            namespace: `sf-${id}`,
            change: 'changed',
            fields: [{ path: 'spec.postgresql.parameters.max_connections', old: '100', new: '90' }],
          },
        ],
      },
    ]);
    expect({ postgresql: await postgresqlOf(id!, sister), copy: await readObject(sister, copyRef) }).toEqual(
      before,
    );
  }, 300_000);
});
