/**
 * Instances on sister clusters, on the real servers: a landscape of its own (its own registry
 * namespace, its own SFClusters for the master and the two sisters, its own catalog), whose
 * schedulers place instances by the plan. Provision, bind, update, unbind and deprovision of an
 * instance on a sister through the OSB API; each scheduler's placements; 20 concurrent provisions
 * against declared capacity; cordoning.
 *
 * Nothing probes these SFClusters: the test writes their `status.phase` (running) itself, through
 * the status subresource, as the cluster health workflow does in a landscape, so the schedulers
 * see the phase they would see there (rather than accepting clusters never probed).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { EncryptionCodec, parsePayloadKeys } from '../../src/temporal/codec.js';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../dev/local/processes.js';
import { installCatalog } from '../../dev/catalog.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { deleteRecord, getRecord, patchRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { bindingSecretName, instanceWorkflowId, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFCluster,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import {
  clusters,
  environment,
  eventually,
  temporalClient,
  unique,
  untilGone,
  untilNamespaceGone,
} from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
/** Plans of this landscape, each a copy of the design document's plan, placed by its own scheduler. */
const PLANS = {
  /** label-selector, with the clusterSelector template in the original's style. */
  selector: 'b5a0c1de-0000-4000-8000-00000000a001',
  /** label-selector, whose selector no cluster matches. */
  nowhere: 'b5a0c1de-0000-4000-8000-00000000a002',
  roundRobin: 'b5a0c1de-0000-4000-8000-00000000a003',
  leastUtilized: 'b5a0c1de-0000-4000-8000-00000000a004',
  /** resource-aware; requests 1 CPU and 512Mi (the design document's `context.requests`). */
  resourceAware: 'b5a0c1de-0000-4000-8000-00000000a005',
  /** label-selector, placed on the cluster labelled `reach=later`. */
  later: 'b5a0c1de-0000-4000-8000-00000000a006',
  /** resource-aware; requests 3 CPUs and 1Gi. */
  resourceAwareLarge: 'b5a0c1de-0000-4000-8000-00000000a007',
  /** resource-aware; requests 8 CPUs, more than any cluster of the test declares. */
  resourceAwareHuge: 'b5a0c1de-0000-4000-8000-00000000a008',
} as const;

/** The clusterSelector template of the original inter-operator: the plan's id as a label. */
const CLUSTER_SELECTOR = `{{- $planId := "" }}
{{- with .plan.spec.id }} {{ $planId = . }} {{ end }}
plan={{ $planId }}`;

/** A cluster of the landscape whose apiserver does not answer at first. */
const UNREACHABLE = 'sister-later';

describe('instances on sister clusters', () => {
  const [master, ...sisters] = clusters();
  const ids = environment().clusters.map((c) => c.id);
  const [masterId, sister1, sister2] = ids as [string, string, string];
  const registry = unique('mc');
  let system: SystemProcess;
  let settings: SystemSettings;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;

  const sisterClient = (id: string) => sisters[ids.indexOf(id) - 1]!;

  async function setCluster(id: string, spec: Record<string, unknown>) {
    await patchRecord(master!, SFCLUSTER, registry, id, { spec });
  }
  const readCluster = (id: string) => getRecord<SFCluster>(master!, SFCLUSTER, registry, id);

  async function installPlans() {
    const installed = await installCatalog(master!, registry, ['examples/postgresql']);
    const design = installed.find((o) => o.kind === 'SFPlan') as SFPlan;
    const plan = (id: string, name: string, extra: Partial<SFPlan['spec']> = {}) =>
      applyObject(master!, {
        apiVersion: design.apiVersion,
        kind: design.kind,
        metadata: { name: id, namespace: registry },
        spec: { ...design.spec, id, name, ...extra },
      } as KubeObject);
    const selector = (text: string) => ({
      templates: [
        ...design.spec.templates,
        { action: 'clusterSelector' as const, type: 'gotemplate' as const, content: text },
      ],
    });
    await plan(PLANS.selector, 'on-labelled', selector(CLUSTER_SELECTOR));
    await plan(PLANS.nowhere, 'on-nothing', selector('plan=none'));
    await plan(PLANS.roundRobin, 'round-robin');
    await plan(PLANS.leastUtilized, 'least-utilized');
    await plan(PLANS.resourceAware, 'resource-aware');
    await plan(PLANS.later, 'on-reach-later', selector('reach=later'));
    const requesting = (requests: Record<string, string>) => ({
      context: { ...design.spec.context, requests },
    });
    await plan(PLANS.resourceAwareLarge, 'resource-aware-large', requesting({ cpu: '3', memory: '1Gi' }));
    await plan(PLANS.resourceAwareHuge, 'resource-aware-huge', requesting({ cpu: '8' }));
  }

  beforeAll(async () => {
    for (const c of environment().clusters) {
      await registerCluster(master!, registry, c.id, c.kubeconfigPath);
      await patchRecordStatus(master!, SFCLUSTER, registry, c.id, { phase: 'running' });
    }
    await installPlans();
    operator = await startOperator();
    settings = await systemSettings({
      INTEROP_NAMESPACE: registry,
      INTEROP_SCHEDULER: 'label-selector',
      INTEROP_PLAN_SCHEDULERS: [
        `${PLANS.roundRobin}=round-robin`,
        `${PLANS.leastUtilized}=least-utilized`,
        `${PLANS.resourceAware}=resource-aware`,
        `${PLANS.resourceAwareLarge}=resource-aware`,
        `${PLANS.resourceAwareHuge}=resource-aware`,
      ].join(','),
    });
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    await eventually('the landscape catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      return services?.some((s) => s.plans.some((p) => p.id === PLANS.resourceAware)) ? true : undefined;
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
    for (const id of [...ids, UNREACHABLE])
      await deleteRecord(master!, SFCLUSTER, registry, id).catch(() => undefined);
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  afterEach(async () => {
    for (const id of ids)
      await setCluster(id, { labels: null, totalCapacity: null, schedulingDisabled: null });
  });

  const instancePath = (instanceId: string) => `/v2/service_instances/${instanceId}`;

  /** Provisions an instance of the plan and waits until it settles; returns its id and last_operation. */
  async function provision(planId: string, timeoutMs = 60_000) {
    const instanceId = randomUUID();
    const accepted = await osb(
      'PUT',
      `${instancePath(instanceId)}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, planId, { foo: 'bar' }),
    );
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      timeoutMs,
    );
    return { instanceId, planId, state: done.body.state, description: String(done.body.description) };
  }

  /** Where the instance was placed, and why. */
  async function placement(instanceId: string) {
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    );
    return {
      clusterId: record?.spec.clusterId,
      why: record?.metadata.annotations?.['interoperator.servicefabrik.io/placement'],
    };
  }

  /** Deprovisions the instance, waits until it is gone, and checks nothing of it is left on any cluster. */
  async function deprovision(instanceId: string, planId: string, timeoutMs = 60_000) {
    const deleting = await osb(
      'DELETE',
      `${instancePath(instanceId)}?service_id=${SERVICE_ID}&plan_id=${planId}&accepts_incomplete=true`,
    );
    expect([200, 202]).toContain(deleting.status);
    if (deleting.status === 202) {
      const gone = await untilSettled(
        osb,
        `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
        timeoutMs,
      );
      expect(gone.body.state).toBe('succeeded');
    }
    for (const cluster of [master!, ...sisters])
      await untilNamespaceGone(cluster, `sf-${instanceId}`, timeoutMs);
    for (const id of ids) expect((await readCluster(id))?.status?.reserved?.[instanceId]).toBeUndefined();
  }

  test('an instance on a sister: provision, bind, update, unbind, deprovision through the OSB API', async () => {
    // GIVEN the second sister labelled for the plan, as its clusterSelector template asks
    await setCluster(sister2, { labels: { plan: PLANS.selector } });
    const { instanceId, state, description } = await provision(PLANS.selector);
    expect([state, description]).toEqual(['succeeded', 'The instance is provisioned']);
    const placed = await placement(instanceId);
    expect(placed.clusterId).toBe(sister2);
    expect(placed.why).toMatch(new RegExp(`^label-selector: chose ${sister2}`));
    expect(placed.why).toMatch(new RegExp(`${sister1}: .*plan`));
    const namespace = `sf-${instanceId}`;
    const name = resourceName(instanceId);
    const sister = sisterClient(sister2);

    // the record's copy on the sister has no parameters, and owns the operator's resource there
    const copy = await getRecord<SFServiceInstance>(sister, SFSERVICEINSTANCE, namespace, name);
    expect(copy?.spec).toMatchObject({ planId: PLANS.selector, clusterId: sister2 });
    expect(copy?.spec.parameters).toBeUndefined();
    const readPg = (cluster = sister) =>
      cluster.custom.getNamespacedCustomObject({
        group: 'acid.zalan.do',
        version: 'v1',
        plural: 'postgresqls',
        namespace,
        name: `sapcp-${instanceId}`,
      }) as Promise<{ metadata: { ownerReferences?: { uid: string }[] }; spec: { users?: object } }>;
    const pg = await readPg();
    expect(pg.metadata.ownerReferences?.map((o) => o.uid)).toEqual([copy!.metadata.uid]);
    await expect(readPg(master)).rejects.toMatchObject({ code: 404 });
    // the status came back to the master's record
    const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, namespace, name);
    expect(record?.status).toMatchObject({ state: 'succeeded', operation: 'provision' });
    expect(record?.status?.resources).toEqual([
      expect.objectContaining({ kind: 'postgresql', name: `sapcp-${instanceId}`, namespace }),
    ]);

    // bind: the credentials come from the sister's resource, the Secret is in the master
    const bindingId = randomUUID();
    const bindingPath = `${instancePath(instanceId)}/service_bindings/${bindingId}`;
    const bound = await osb('PUT', bindingPath, { service_id: SERVICE_ID, plan_id: PLANS.selector });
    expect(bound.status).toBe(201);
    const credentials = bound.body.credentials as Record<string, string>;
    expect(credentials).toMatchObject({
      dbname: 'main',
      port: '5432',
      username: bindingId.replace(/-/g, '_'),
    });
    expect(credentials.password).toMatch(/.{16,}/);
    expect(credentials.uri).toBe(
      `postgres://${credentials.username}:${credentials.password}@${credentials.hostname}:5432/main?sslmode=require`,
    );
    const bindingName = resourceName(bindingId);
    await master!.core.readNamespacedSecret({ namespace, name: bindingSecretName(bindingName) });
    await expect(
      sister.core.readNamespacedSecret({ namespace, name: bindingSecretName(bindingName) }),
    ).rejects.toMatchObject({ code: 404 });
    const bindingCopy = await getRecord(sister, SFSERVICEBINDING, namespace, bindingName);
    expect(bindingCopy?.metadata.ownerReferences?.map((o) => o.uid)).toEqual([copy!.metadata.uid]);
    expect(Object.keys((await readPg()).spec.users ?? {})).toContain(bindingId);

    // update: it stays where it is
    const updating = await osb('PATCH', `${instancePath(instanceId)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.selector,
      parameters: { foo: 'baz' },
    });
    expect(updating.status).toBe(202);
    const updated = await untilSettled(
      osb,
      `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(updating.body.operation))}`,
    );
    expect(updated.body.state).toBe('succeeded');
    expect((await placement(instanceId)).clusterId).toBe(sister2);

    // unbind: the copy and the user go
    const unbound = await osb('DELETE', `${bindingPath}?service_id=${SERVICE_ID}&plan_id=${PLANS.selector}`);
    expect(unbound.status).toBe(200);
    await untilGone('the binding copy', () =>
      sister.custom.getNamespacedCustomObject({
        group: SFSERVICEBINDING.group,
        version: SFSERVICEBINDING.version,
        plural: SFSERVICEBINDING.plural,
        namespace,
        name: bindingName,
      }),
    );
    expect(Object.keys((await readPg()).spec.users ?? {})).not.toContain(bindingId);

    // deprovision: nothing of it is left on either cluster
    await deprovision(instanceId, PLANS.selector);
  }, 180_000);

  test('no cluster matches the plan’s selector: the provision fails with the reasons', async () => {
    await setCluster(sister1, { labels: { plan: 'other' } });
    const { instanceId, state, description } = await provision(PLANS.nowhere);
    expect(state).toBe('failed');
    expect(description).toMatch(/^label-selector: no eligible cluster: /);
    expect(description).toContain(`${sister1}: plan=other, not none`);
    expect(description).toContain(`${masterId}: no label plan`);
    await deprovision(instanceId, PLANS.nowhere);
  }, 120_000);

  test('round-robin takes the clusters in turn; least-utilized the one with the fewest instances', async () => {
    const turns: string[] = [];
    const placed: { instanceId: string; planId: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const p = await provision(PLANS.roundRobin);
      expect(p.state).toBe('succeeded');
      placed.push(p);
      turns.push((await placement(p.instanceId)).clusterId!);
    }
    // each cluster once, in id order from wherever the turn stood
    const start = ids.indexOf(turns[0]!);
    expect(turns).toEqual([0, 1, 2].map((k) => ids[(start + k) % 3]));

    // least-utilized: every cluster holds one instance now; taking one off the second sister makes it the emptiest
    const removed = placed[turns.indexOf(sister2)]!;
    await deprovision(removed.instanceId, removed.planId);
    const least = await provision(PLANS.leastUtilized);
    expect(least.state).toBe('succeeded');
    const where = await placement(least.instanceId);
    expect(where.clusterId).toBe(sister2);
    expect(where.why).toMatch(new RegExp(`^least-utilized: chose ${sister2}`));
    placed.push(least);

    // cordoned clusters take no new instances
    await setCluster(sister2, { schedulingDisabled: true });
    await setCluster(masterId, { schedulingDisabled: true });
    const next = await provision(PLANS.leastUtilized);
    expect(next.state).toBe('succeeded');
    expect((await placement(next.instanceId)).clusterId).toBe(sister1);
    placed.push(next);
    await setCluster(sister1, { schedulingDisabled: true });
    const none = await provision(PLANS.leastUtilized);
    expect(none.state).toBe('failed');
    expect(none.description).toBe(
      `least-utilized: no eligible cluster: ${ids.map((id) => `${id}: cordoned`).join('; ')}`,
    );
    placed.push(none);

    await Promise.all(placed.filter((p) => p !== removed).map((p) => deprovision(p.instanceId, p.planId)));
  }, 300_000);

  test('resource-aware: 20 concurrent provisions never exceed the declared capacity', async () => {
    const capacity: Record<string, number> = { [masterId]: 2, [sister1]: 3, [sister2]: 4 };
    for (const id of ids)
      await setCluster(id, { totalCapacity: { cpu: String(capacity[id]), memory: '64Gi' } });
    const results = await Promise.all(
      Array.from({ length: 20 }, () => provision(PLANS.resourceAware, 120_000)),
    );
    const succeeded = results.filter((r) => r.state === 'succeeded');
    const failed = results.filter((r) => r.state !== 'succeeded');
    // every provision that found room succeeded: all the room is taken, and no more
    expect(succeeded).toHaveLength(9);
    const perCluster: Record<string, number> = {};
    for (const r of succeeded) {
      const { clusterId } = await placement(r.instanceId);
      perCluster[clusterId!] = (perCluster[clusterId!] ?? 0) + 1;
    }
    expect(perCluster).toEqual(capacity);
    for (const id of ids)
      expect(Object.keys((await readCluster(id))?.status?.reserved ?? {})).toHaveLength(capacity[id]!);
    for (const r of failed) {
      expect(r.state).toBe('failed');
      expect(r.description).toMatch(/^resource-aware: no eligible cluster: /);
      expect(r.description).toMatch(new RegExp(`${sister2}: needs 1 CPU`));
    }
    await Promise.all(results.map((r) => deprovision(r.instanceId, r.planId, 120_000)));
  }, 400_000);

  test('resource-aware: a plan change books the new plan, one that does not fit is refused, and a lost booking is made again', async () => {
    for (const id of ids) await setCluster(id, { totalCapacity: { cpu: '4', memory: '64Gi' } });
    // GIVEN an instance of the plan of 1 CPU, booked on its cluster
    const instance = await provision(PLANS.resourceAware);
    expect(instance.state).toBe('succeeded');
    const { clusterId } = await placement(instance.instanceId);
    const booked = async () => (await readCluster(clusterId!))?.status?.reserved?.[instance.instanceId];
    expect(await booked()).toEqual({ cpu: '1', memory: '512Mi' });
    const update = async (planId: string, previous: string) => {
      const updating = await osb('PATCH', `${instancePath(instance.instanceId)}?accepts_incomplete=true`, {
        service_id: SERVICE_ID,
        plan_id: planId,
        previous_values: { plan_id: previous },
        parameters: { foo: 'bar' },
      });
      expect(updating.status).toBe(202);
      const done = await untilSettled(
        osb,
        `${instancePath(instance.instanceId)}/last_operation?operation=${encodeURIComponent(String(updating.body.operation))}`,
      );
      return { state: done.body.state, description: String(done.body.description) };
    };

    // WHEN it changes to the plan of 3 CPUs THEN its booking is the new plan's
    expect((await update(PLANS.resourceAwareLarge, PLANS.resourceAware)).state).toBe('succeeded');
    expect(await booked()).toEqual({ cpu: '3', memory: '1Gi' });

    // WHEN it changes to a plan of 8 CPUs THEN the update is refused, saying what is short, and the
    // instance keeps its plan and its booking
    const refused = await update(PLANS.resourceAwareHuge, PLANS.resourceAwareLarge);
    expect(refused.state).toBe('failed');
    expect(refused.description).toMatch(
      new RegExp(
        `^resource-aware: plan resource-aware-huge does not fit on cluster ${clusterId}, where the instance is placed: needs 8 CPU, \\d+ CPU free`,
      ),
    );
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instance.instanceId}`,
      resourceName(instance.instanceId),
    );
    expect(record?.spec.planId).toBe(PLANS.resourceAwareLarge);
    expect(await booked()).toEqual({ cpu: '3', memory: '1Gi' });

    // WHEN its booking is lost (as a provision that failed releases it) THEN the next placement books it again
    await patchRecordStatus(master!, SFCLUSTER, registry, clusterId!, {
      reserved: { [instance.instanceId]: null },
    });
    expect((await update(PLANS.resourceAwareLarge, PLANS.resourceAwareLarge)).state).toBe('succeeded');
    expect(await booked()).toEqual({ cpu: '3', memory: '1Gi' });

    await deprovision(instance.instanceId, PLANS.resourceAwareLarge);
    expect(await booked()).toBeUndefined();
  }, 300_000);

  test('a sister that does not answer: the step waits, says why, and the provision completes once it answers', async () => {
    // GIVEN a running cluster, labelled for the plan, whose kubeconfig names a port nothing listens on
    const sister1Config = environment().clusters.find((c) => c.id === sister1)!.kubeconfigPath;
    const deadConfig = path.join(environment().workDir, `${registry}-unreachable.kubeconfig`);
    writeFileSync(
      deadConfig,
      readFileSync(sister1Config, 'utf8').replace(
        /server: *https:\/\/[^\s]+/,
        `server: https://127.0.0.1:${await freePort()}`,
      ),
    );
    await registerCluster(master!, registry, UNREACHABLE, deadConfig);
    await patchRecordStatus(master!, SFCLUSTER, registry, UNREACHABLE, { phase: 'running' });
    await setCluster(UNREACHABLE, { labels: { reach: 'later' } });

    const instanceId = randomUUID();
    const accepted = await osb(
      'PUT',
      `${instancePath(instanceId)}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLANS.later, { foo: 'bar' }),
    );
    expect(accepted.status).toBe(202);
    const lastOperation = `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`;

    // THEN the step waits queued, and Temporal shows which cluster it waits for and why
    const temporal = await temporalClient();
    try {
      const pending = await eventually(
        'the replication to wait queued',
        async () => {
          const described = await temporal.client.workflowService.describeWorkflowExecution({
            namespace: environment().temporal.namespace,
            execution: { workflowId: instanceWorkflowId(instanceId) },
          });
          const step = described.pendingActivities?.[0];
          return step?.lastFailure?.message ? step : undefined;
        },
        60_000,
      );
      expect(pending.activityType?.name).toBe('replicateInstance');
      // Its message is encrypted with the payloads; the UI reads it through the codec endpoint.
      expect(pending.lastFailure?.message).toBe('Encoded failure');
      const codec = new EncryptionCodec(parsePayloadKeys(settings.payloadKeys));
      const [attributes] = await codec.decode([pending.lastFailure!.encodedAttributes!]);
      expect((defaultPayloadConverter.fromPayload(attributes!) as { message: string }).message).toMatch(
        new RegExp(`^waiting for cluster ${UNREACHABLE}: `),
      );
      const waiting = (await osb('GET', lastOperation)).body;
      expect(waiting.state).toBe('in progress');
      expect(waiting.description).toMatch(new RegExp(`^waiting for cluster ${UNREACHABLE}: `));
      // The platform is not told where the cluster is.
      expect(waiting.description).not.toMatch(/\d+\.\d+\.\d+\.\d+|localhost|ECONNREFUSED|:\d{2,5}\b/);
    } finally {
      await temporal.close();
    }
    expect((await placement(instanceId)).clusterId).toBe(UNREACHABLE);

    // WHEN the cluster answers (its kubeconfig Secret now names the first sister's apiserver; the
    // running worker reads it on its next call), THEN the provision completes there
    await registerCluster(master!, registry, UNREACHABLE, sister1Config);
    const done = await untilSettled(osb, lastOperation, 90_000);
    expect(done.body.state).toBe('succeeded');
    await sisterClient(sister1).custom.getNamespacedCustomObject({
      group: 'acid.zalan.do',
      version: 'v1',
      plural: 'postgresqls',
      namespace: `sf-${instanceId}`,
      name: `sapcp-${instanceId}`,
    });
    await deprovision(instanceId, PLANS.later);
    await deleteRecord(master!, SFCLUSTER, registry, UNREACHABLE);
  }, 240_000);
});
