/**
 * A plan's custom action on the real servers: the example plan's `x-backup`, run by an admin through
 * the admin API and the command line on an instance provisioned through OSB. The action runs as a
 * run of the instance's workflow (found in Temporal by its search attributes), applies its template
 * on the instance's cluster (the example operator takes a backup into a ConfigMap), waits for the
 * status template's `x-backup` section, and records how it ended in the instance's
 * `status.lastAction`, while the state OSB reports of the instance's operations stays as it was.
 */
import { randomUUID } from 'node:crypto';
import { BACKUP_ANNOTATION, POSTGRESQL, backupConfigMapName } from '../../examples/operator/operator.js';
import { createRecord, getRecord, patchRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { ensureNamespace } from '../../src/kube/objects.js';
import {
  ANNOTATIONS,
  instanceNamespace,
  instanceWorkflowId,
  resourceName,
} from '../../src/resources/names.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../../src/resources/types.js';
import {
  adminLandscape,
  callAdmin,
  POSTGRESQL_PLAN_ID,
  POSTGRESQL_SERVICE_ID,
  runBuiltCli,
} from '../support/admin.js';
import { clusters, environment, eventually, temporalClient } from '../support/env.js';
import { untilSettled, type OsbClient } from '../support/osb.js';

const SERVICE_ID = POSTGRESQL_SERVICE_ID;
const PLAN_ID = POSTGRESQL_PLAN_ID;
/** How long a backup the tests watch "while it runs" takes at the example operator. */
const SLOW_BACKUP_MS = 6000;

interface Started {
  readonly instanceId: string;
  readonly action: string;
  readonly workflowId: string;
  readonly runId: string;
  readonly operation: string;
}

describe('custom actions of a plan', () => {
  const [master] = clusters();
  // GIVEN an instance of the example plan, provisioned through the OSB API
  const instanceId = randomUUID();
  const landscape = adminLandscape([instanceId]);
  const osb: OsbClient = (...args) => landscape.osb(...args);
  const namespace = instanceNamespace(instanceId);

  const admin = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    callAdmin(landscape.system.url, method, path, body !== undefined ? { body } : {});

  const runAction = (id: string, action: string, parameters?: Record<string, unknown>) =>
    admin('POST', `/admin/instances/${id}/actions/${action}`, parameters ? { parameters } : undefined);

  /** Polls the run's state until it is no longer in progress. */
  const settledAction = (started: Started) =>
    eventually(
      `${started.action} run ${started.runId} to end`,
      async () => {
        const res = await admin(
          'GET',
          `/admin/instances/${started.instanceId}/actions/${started.action}/${started.runId}`,
        );
        expect(res.status).toBe(200);
        return res.body.state === 'in progress' ? undefined : res.body;
      },
      60_000,
    );

  const record = async () =>
    (await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, namespace, resourceName(instanceId)))!;

  /** The instance's workflow runs Temporal lists for this query. */
  async function listed(query: string): Promise<{ runId: string; state: string | undefined }[]> {
    const raw = await temporalClient();
    try {
      const { executions } = await raw.client.workflowService.listWorkflowExecutions({
        namespace: environment().temporal.namespace,
        query,
      });
      return executions.map((e) => {
        const state = e.searchAttributes?.indexedFields?.OsbState?.data;
        return {
          runId: e.execution?.runId ?? '',
          state: state ? (JSON.parse(Buffer.from(state).toString('utf8')) as string) : undefined,
        };
      });
    } finally {
      await raw.close();
    }
  }

  const cli = (...args: string[]) => runBuiltCli(landscape.system.url, ...args);

  test('x-backup runs as a run of the instance’s workflow: the operator takes the backup, the record and Temporal show it, and no other operation runs beside it', async () => {
    // WHEN an admin runs x-backup with parameters
    const res = await runAction(instanceId, 'x-backup', { label: 'nightly', delayMs: SLOW_BACKUP_MS });
    expect(res.status).toBe(202);
    const started = res.body as unknown as Started;
    expect(started).toMatchObject({
      instanceId,
      action: 'x-backup',
      workflowId: instanceWorkflowId(instanceId),
      operation: `x-backup:${started.runId}`,
    });

    // THEN while it runs, the record shows it apart from the last OSB operation
    const running = await eventually('the record to show the action', async () => {
      const status = (await record()).status;
      return status?.lastAction?.runId === started.runId ? status : undefined;
    });
    expect(running.lastAction).toMatchObject({
      operation: 'x-backup',
      state: 'in progress',
      requestedBy: 'alice (ops)',
    });
    expect(running).toMatchObject({ operation: 'provision', state: 'succeeded' });
    // AND no OSB operation starts on the instance: an update and a bind get 422 ConcurrencyError
    const update = await osb('PATCH', `/v2/service_instances/${instanceId}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      parameters: { foo: 'other' },
    });
    expect(update.status).toBe(422);
    expect(update.body).toMatchObject({ error: 'ConcurrencyError' });
    expect(String(update.body.description)).toContain('x-backup');
    const bind = await osb('PUT', `/v2/service_instances/${instanceId}/service_bindings/${randomUUID()}`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    });
    expect(bind.status).toBe(422);
    expect(bind.body).toMatchObject({ error: 'ConcurrencyError' });
    // AND neither does the admin's update, nor the same action again
    const adminUpdate = await admin('POST', `/admin/instances/${instanceId}/update`);
    expect(adminUpdate.status).toBe(422);
    const again = await runAction(instanceId, 'x-backup');
    expect(again.status).toBe(409);
    expect(String(again.body.description)).toContain(started.runId);
    // AND a platform polling the instance's last operation still reads its provision's outcome
    const last = await osb('GET', `/v2/service_instances/${instanceId}/last_operation`);
    expect(last.body).toMatchObject({ state: 'succeeded' });
    // (all of the above while the action still ran)
    const stillRunning = await admin(
      'GET',
      `/admin/instances/${instanceId}/actions/x-backup/${started.runId}`,
    );
    expect(stillRunning.body).toMatchObject({ state: 'in progress' });

    // WHEN the operator has taken the backup, THEN the action succeeded with its description
    const ended = await settledAction(started);
    expect(ended).toMatchObject({ state: 'succeeded', runId: started.runId });
    const pgName = `sapcp-${resourceName(instanceId)}`;
    const configMapName = backupConfigMapName(pgName, started.runId);
    expect(ended.description).toBe(`backup taken in ConfigMap ${configMapName}`);
    // AND the backup is on the instance's cluster, owned by the postgresql
    const configMap = await master!.core.readNamespacedConfigMap({ namespace, name: configMapName });
    expect(configMap.data).toMatchObject({ label: 'nightly' });
    expect(configMap.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: POSTGRESQL.kind, name: pgName }),
    ]);
    const pg = (await master!.custom.getNamespacedCustomObject({
      group: POSTGRESQL.group,
      version: POSTGRESQL.version,
      plural: POSTGRESQL.plural,
      namespace,
      name: pgName,
    })) as { metadata: { annotations: Record<string, string> }; status: { backup: { state: string } } };
    expect(JSON.parse(pg.metadata.annotations[BACKUP_ANNOTATION]!)).toEqual({
      id: started.runId,
      label: 'nightly',
      delayMs: SLOW_BACKUP_MS,
    });
    expect(pg.status.backup.state).toBe('Succeeded');
    // AND the record tells how it ended, the last OSB operation untouched
    const status = (await record()).status!;
    expect(status.lastAction).toMatchObject({
      operation: 'x-backup',
      state: 'succeeded',
      runId: started.runId,
      description: `backup taken in ConfigMap ${configMapName}`,
    });
    expect(status.lastAction?.finishedAt).toEqual(expect.any(String));
    expect(status).toMatchObject({ operation: 'provision', state: 'succeeded' });
    // AND the admin listing shows it
    const listing = await admin('GET', `/admin/instances?plan=${PLAN_ID}&limit=1000`);
    const summary = (listing.body.items as { instanceId: string; lastAction?: unknown }[]).find(
      (i) => i.instanceId === instanceId,
    );
    expect(summary?.lastAction).toMatchObject({
      action: 'x-backup',
      state: 'succeeded',
      runId: started.runId,
    });
    // AND the Temporal UI finds the run by the instance and the action, succeeded
    const runs = await eventually('the action listed in Temporal', async () => {
      const found = await listed(`OsbInstanceId = "${instanceId}" AND OsbOperation = "x-backup"`);
      return found.some((r) => r.runId === started.runId && r.state === 'succeeded') ? found : undefined;
    });
    expect(runs.map((r) => r.runId)).toContain(started.runId);
  });

  test('an action waits for a binding operation that is being started: the binding’s claim on the record refuses it with 422', async () => {
    // GIVEN a bind of the instance being started: its claim is on the instance's record, its
    // workflow not running yet (the moment between a broker's claim and its start)
    const bindingId = randomUUID();
    const claims = JSON.stringify({
      bindings: { [bindingId]: { operation: 'bind', at: new Date().toISOString() } },
    });
    const annotate = (value: string | null) =>
      patchRecord(master!, SFSERVICEINSTANCE, namespace, resourceName(instanceId), {
        metadata: { annotations: { [ANNOTATIONS.operationClaims]: value } },
      });
    await annotate(claims);
    try {
      // WHEN an admin runs x-backup THEN it is refused as an OSB update would be, naming the binding
      const res = await runAction(instanceId, 'x-backup');
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ error: 'ConcurrencyError' });
      expect(String(res.body.description)).toContain(bindingId);
      // AND no run of the action started
      const run = await temporalClient();
      try {
        const { executions } = await run.client.workflowService.listWorkflowExecutions({
          namespace: environment().temporal.namespace,
          query: `OsbInstanceId = "${instanceId}" AND OsbOperation = "x-backup" AND ExecutionStatus = "Running"`,
        });
        expect(executions).toHaveLength(0);
      } finally {
        await run.close();
      }
    } finally {
      await annotate(null);
    }
  });

  test('an action the plan lacks, a name that is no custom action, and an unknown instance get clear errors', async () => {
    const lacking = await runAction(instanceId, 'x-restart');
    expect(lacking.status).toBe(404);
    expect(lacking.body.description).toBe(
      'Plan v9.6-xxsmall has no action x-restart; its actions are x-backup, x-restore.',
    );
    const osbAction = await runAction(instanceId, 'provision');
    expect(osbAction.status).toBe(400);
    expect(String(osbAction.body.description)).toContain('is an OSB action');
    const malformed = await runAction(instanceId, 'backup');
    expect(malformed.status).toBe(400);
    expect(String(malformed.body.description)).toContain('x-<name>');
    const badBody = await admin('POST', `/admin/instances/${instanceId}/actions/x-backup`, { label: 'x' });
    expect(badBody.status).toBe(400);
    expect(String(badBody.body.description)).toContain('Unknown field label');
    const unknown = await runAction(randomUUID(), 'x-backup');
    expect(unknown.status).toBe(404);
    expect(unknown.body.description).toBe('The service instance does not exist.');
    const noRun = await admin('GET', `/admin/instances/${instanceId}/actions/x-backup/${randomUUID()}`);
    expect(noRun.status).toBe(404);
  });

  test('an instance whose provision failed cannot run an action, and says why', async () => {
    // GIVEN the record of an instance whose provision failed
    const failedId = randomUUID();
    const failedNamespace = instanceNamespace(failedId);
    await ensureNamespace(master!, failedNamespace);
    await createRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, {
      apiVersion: SFSERVICEINSTANCE.apiVersion,
      kind: SFSERVICEINSTANCE.kind,
      metadata: { name: resourceName(failedId), namespace: failedNamespace },
      spec: { instanceId: failedId, serviceId: SERVICE_ID, planId: PLAN_ID },
    });
    await patchRecordStatus(master!, SFSERVICEINSTANCE, failedNamespace, resourceName(failedId), {
      operation: 'provision',
      state: 'failed',
      description: 'the operator failed it',
    });
    // WHEN an admin runs x-backup on it THEN 409 says why
    const res = await runAction(failedId, 'x-backup');
    expect(res.status).toBe(409);
    expect(res.body.description).toBe(
      'x-backup cannot run: the provision of the service instance failed; there is nothing to run the action on.',
    );
  });

  test('a backup the operator fails ends failed with its reason, and the instance stays usable', async () => {
    // WHEN an admin runs x-backup with the label the example operator fails
    const res = await runAction(instanceId, 'x-backup', { label: 'fail' });
    expect(res.status).toBe(202);
    const started = res.body as unknown as Started;
    // THEN it fails with the operator's reason
    const ended = await settledAction(started);
    expect(ended).toMatchObject({
      state: 'failed',
      description: 'backup failed: the example operator was told to fail this backup (label fail)',
    });
    const status = (await record()).status!;
    expect(status.lastAction).toMatchObject({ operation: 'x-backup', state: 'failed', runId: started.runId });
    expect(status).toMatchObject({ operation: 'provision', state: 'succeeded' });
    const failed = await eventually('the failed action listed in Temporal', async () => {
      const found = await listed(
        `OsbInstanceId = "${instanceId}" AND OsbOperation = "x-backup" AND OsbState = "failed"`,
      );
      return found.some((r) => r.runId === started.runId) ? found : undefined;
    });
    expect(failed.map((r) => r.runId)).toContain(started.runId);
    // AND the platform's view of the instance is as before: its last operation succeeded
    const last = await osb('GET', `/v2/service_instances/${instanceId}/last_operation`);
    expect(last.body).toMatchObject({ state: 'succeeded' });
    // AND it is still usable: an OSB update runs to its end
    const update = await osb('PATCH', `/v2/service_instances/${instanceId}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      parameters: { foo: 'after-the-backup' },
    });
    expect(update.status).toBe(202);
    const updated = await untilSettled(
      osb,
      `/v2/service_instances/${instanceId}/last_operation?operation=${encodeURIComponent(String(update.body.operation))}`,
    );
    expect(updated.body.state).toBe('succeeded');
    // AND what the backup asked for stays on the postgresql (the update's apply neither took nor dropped it)
    const pg = (await master!.custom.getNamespacedCustomObject({
      group: POSTGRESQL.group,
      version: POSTGRESQL.version,
      plural: POSTGRESQL.plural,
      namespace,
      name: `sapcp-${resourceName(instanceId)}`,
    })) as { metadata: { annotations: Record<string, string> } };
    expect(JSON.parse(pg.metadata.annotations[BACKUP_ANNOTATION]!)).toMatchObject({ id: started.runId });
  });

  test('the command line runs the action and waits: exit 0 when it succeeded, 1 when it failed', async () => {
    const ok = await cli(
      'instance',
      'action',
      instanceId,
      'x-backup',
      '--param',
      'label=cli',
      '--wait',
      '--interval',
      '0.5',
    );
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/^x-backup on .* started: run [0-9a-f-]+ of workflow instance\//);
    expect(ok.stdout).toMatch(/x-backup on .* succeeded: backup taken in ConfigMap /);

    const failed = await cli(
      'instances',
      'action',
      instanceId,
      'x-backup',
      '--param',
      'label=fail',
      '--wait',
      '--interval',
      '0.5',
    );
    expect(failed.status).toBe(1);
    expect(failed.stdout).toContain(
      'failed: backup failed: the example operator was told to fail this backup (label fail)',
    );

    const lacking = await cli('instance', 'action', instanceId, 'x-restart');
    expect(lacking.status).toBe(1);
    expect(lacking.stderr).toContain('has no action x-restart');
  });
});
