/**
 * Moving an instance between clusters, on the real servers: a landscape of its own (its own
 * registry namespace, SFClusters for the master and the two sisters, its own catalog), the example
 * operator on every cluster, and the broker and worker as one process with the admin API.
 *
 * A move runs as a run of the instance's workflow (`OsbOperation` = `move`): the platform's
 * operations on the instance and its bindings get 422 meanwhile, reads keep answering; the
 * instance ends on the target with its bindings, and nothing of it is left on the source. A move
 * that fails before the switch leaves the source as it was and the target clean.
 *
 * Nothing probes these SFClusters: the test writes their `status.phase` (running) itself, as the
 * cluster health workflow does in a landscape.
 */
import { randomUUID } from 'node:crypto';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { dataConfigMapName } from '../../examples/operator/operator.js';
import { installCatalog } from '../../dev/catalog.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { deleteRecord, getRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { bindingSecretName, instanceWorkflowId, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type SFCluster,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import {
  clusters,
  environment,
  eventually,
  temporalClient,
  unique,
  untilNamespaceGone,
} from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { applyPlanCopy } from '../support/plans.js';
import { startOperator, startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLANS = {
  /** Moves by provisioning anew on the target: `migrate: {}`. */
  stateless: 'c0ffee00-0000-4000-8000-00000000b001',
  /** Says its instances never move. */
  fixed: 'c0ffee00-0000-4000-8000-00000000b002',
  /** The example plan: backed up on the source, restored on the target (data and users' passwords). */
  stateful: 'c0ffee00-0000-4000-8000-00000000b003',
  /** The example plan, whose restore the example operator fails. */
  failingRestore: 'c0ffee00-0000-4000-8000-00000000b004',
} as const;

describe('moving instances between clusters', () => {
  const all = clusters();
  const master = all[0]!;
  const ids = environment().clusters.map((c) => c.id);
  const [masterId, sister1, sister2] = ids as [string, string, string];
  const registry = unique('mv');
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;

  const clusterOf = (id: string): ClusterClient => all[ids.indexOf(id)]!;
  const admin = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    callAdmin(system.url, method, path, body !== undefined ? { body } : {});
  const instancePath = (instanceId: string) => `/v2/service_instances/${instanceId}`;

  beforeAll(async () => {
    for (const c of environment().clusters) {
      await registerCluster(master, registry, c.id, c.kubeconfigPath);
      await patchRecordStatus(master, SFCLUSTER, registry, c.id, { phase: 'running' });
    }
    const installed = await installCatalog(master, registry, ['examples/postgresql']);
    const design = installed.find((o) => o.kind === 'SFPlan') as SFPlan;
    const plan = (id: string, name: string, extra: Partial<SFPlan['spec']>) =>
      applyPlanCopy(master, registry, design, id, name, extra);
    await plan(PLANS.stateless, 'stateless', { migrate: {} });
    await plan(PLANS.fixed, 'fixed', {
      migrate: { movable: false, reason: 'its data lives on local disks' },
    });
    expect(design.spec.migrate).toEqual({ backup: 'x-backup', restore: 'x-restore' });
    await plan(PLANS.stateful, 'stateful', {});
    const failing = design.spec.templates.map((t) =>
      t.action === 'x-restore'
        ? {
            ...t,
            content: String(t.content).replace('"backup" $backup }}', '"backup" $backup "label" "fail" }}'),
          }
        : t,
    );
    expect(JSON.stringify(failing)).toContain('\\"label\\" \\"fail\\"');
    await plan(PLANS.failingRestore, 'failing-restore', { templates: failing });
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
    await eventually('the landscape catalog', async () => {
      const text = JSON.stringify((await osb('GET', '/v2/catalog')).body);
      return Object.values(PLANS).every((id) => text.includes(id)) ? true : undefined;
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
    for (const id of ids) await deleteRecord(master, SFCLUSTER, registry, id).catch(() => undefined);
    await master.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  async function provision(planId: string): Promise<string> {
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
    );
    expect(done.body.state).toBe('succeeded');
    return instanceId;
  }

  async function bind(
    instanceId: string,
    planId: string,
  ): Promise<{ bindingId: string; credentials: Record<string, string> }> {
    const bindingId = randomUUID();
    const bound = await osb('PUT', `${instancePath(instanceId)}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: planId,
    });
    expect(bound.status).toBe(201);
    return { bindingId, credentials: bound.body.credentials as Record<string, string> };
  }

  const record = async (instanceId: string) =>
    (await getRecord<SFServiceInstance>(
      master,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    ))!;

  /** The example operator's postgresql of the instance on one cluster; undefined when it is not there. */
  async function postgresqlOn(clusterId: string, instanceId: string) {
    try {
      return (await clusterOf(clusterId).custom.getNamespacedCustomObject({
        group: 'acid.zalan.do',
        version: 'v1',
        plural: 'postgresqls',
        namespace: `sf-${instanceId}`,
        name: `sapcp-${instanceId}`,
      })) as { spec: { users?: Record<string, unknown> } };
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  /** The password of a user's Secret the example operator made on one cluster (compared, never printed). */
  async function passwordOn(
    clusterId: string,
    instanceId: string,
    user: string,
  ): Promise<string | undefined> {
    const name = `${user.replace(/_/g, '-')}.sapcp-${instanceId}.credentials.postgresql.acid.zalan.do`;
    try {
      const secret = await clusterOf(clusterId).core.readNamespacedSecret({
        namespace: `sf-${instanceId}`,
        name,
      });
      return Buffer.from(secret.data?.password ?? '', 'base64').toString('utf8');
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  /** The example operator's data marker of the instance's postgresql on one cluster (standing in for its rows). */
  const dataOn = async (clusterId: string, instanceId: string) =>
    (
      await clusterOf(clusterId).core.readNamespacedConfigMap({
        namespace: `sf-${instanceId}`,
        name: dataConfigMapName(`sapcp-${instanceId}`),
      })
    ).data;

  /** Writes rows: a marker in the data ConfigMap of the instance's postgresql on one cluster. */
  async function writeRows(clusterId: string, instanceId: string, rows: Record<string, string>) {
    await eventually(
      'the data ConfigMap',
      async () =>
        await dataOn(clusterId, instanceId).then(
          () => true,
          () => undefined,
        ),
    );
    await clusterOf(clusterId).core.patchNamespacedConfigMap(
      { namespace: `sf-${instanceId}`, name: dataConfigMapName(`sapcp-${instanceId}`), body: { data: rows } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /** The credentials in a binding's response Secret on the master. */
  async function responseOf(instanceId: string, bindingId: string): Promise<Record<string, string>> {
    const secret = await master.core.readNamespacedSecret({
      namespace: `sf-${instanceId}`,
      name: bindingSecretName(resourceName(bindingId)),
    });
    const text = Buffer.from(secret.data?.response ?? '', 'base64').toString('utf8');
    return (JSON.parse(text) as { credentials: Record<string, string> }).credentials;
  }

  /** Starts a move through the admin API; returns its run. */
  async function startMove(instanceId: string, cluster?: string): Promise<string> {
    const started = await admin('POST', `/admin/instances/${instanceId}/move`, cluster ? { cluster } : {});
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ action: 'move', workflowId: instanceWorkflowId(instanceId) });
    return String(started.body.runId);
  }

  /** Waits until the move's run ends; returns its final state. */
  async function ended(instanceId: string, runId: string) {
    const end = await eventually(
      `the move of ${instanceId}`,
      async () => {
        const res = await admin('GET', `/admin/instances/${instanceId}/actions/move/${runId}`);
        expect(res.status).toBe(200);
        return res.body.state === 'in progress' ? undefined : res.body;
      },
      120_000,
    );
    return { runId, state: end.state, description: String(end.description) };
  }

  /** Starts a move through the admin API and waits until it ends; returns its final state. */
  const move = async (instanceId: string, cluster?: string) =>
    ended(instanceId, await startMove(instanceId, cluster));

  test('an instance with bindings moves from the master to a sister, and on to the other sister', async () => {
    // GIVEN an instance of a plan that moves by provisioning anew, on the master, with two bindings
    const instanceId = await provision(PLANS.stateless);
    expect((await record(instanceId)).spec.clusterId).toBe(masterId);
    const first = await bind(instanceId, PLANS.stateless);
    const second = await bind(instanceId, PLANS.stateless);

    // WHEN an admin moves it to the first sister
    const moving = await startMove(instanceId, sister1);
    // THEN meanwhile the platform's operations on the instance and its bindings get 422, reads answer
    const updateMeanwhile = await osb('PATCH', `${instancePath(instanceId)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.stateless,
      parameters: { foo: 'meanwhile' },
    });
    expect([updateMeanwhile.status, updateMeanwhile.body.error]).toEqual([422, 'ConcurrencyError']);
    const bindMeanwhile = await osb('PUT', `${instancePath(instanceId)}/service_bindings/${randomUUID()}`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.stateless,
    });
    expect([bindMeanwhile.status, bindMeanwhile.body.error]).toEqual([422, 'ConcurrencyError']);
    const fetched = await osb('GET', `${instancePath(instanceId)}/service_bindings/${first.bindingId}`);
    expect(fetched.status).toBe(200);
    const moved = await ended(instanceId, moving);

    // THEN it is there, with both bindings' users, and gone from the master
    expect(moved).toMatchObject({
      state: 'succeeded',
      description: `Moved from cluster ${masterId} to cluster ${sister1}`,
    });
    const after = await record(instanceId);
    expect(after.spec.clusterId).toBe(sister1);
    expect(after.metadata.labels?.['interoperator.servicefabrik.io/cluster-id']).toBe(sister1);
    expect(after.metadata.annotations?.['interoperator.servicefabrik.io/placement']).toMatch(
      new RegExp(`^moved from ${masterId} to ${sister1} \\(moved by alice \\(ops\\)\\)`),
    );
    expect(after.status?.lastAction).toMatchObject({
      operation: 'move',
      state: 'succeeded',
      runId: moved.runId,
    });
    expect(Object.keys((await postgresqlOn(sister1, instanceId))?.spec.users ?? {}).sort()).toEqual(
      expect.arrayContaining([first.bindingId, second.bindingId]),
    );
    expect(await postgresqlOn(masterId, instanceId)).toBeUndefined();
    // the bindings' responses carry the credentials the target gives
    for (const { bindingId } of [first, second]) {
      const credentials = await responseOf(instanceId, bindingId);
      expect(credentials.username).toBe(bindingId.replace(/-/g, '_'));
      expect(credentials.password === (await passwordOn(sister1, instanceId, credentials.username!))).toBe(
        true,
      );
    }
    // the platform's operations work on the instance where it is now
    const updating = await osb('PATCH', `${instancePath(instanceId)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.stateless,
      parameters: { foo: 'baz' },
    });
    expect(updating.status).toBe(202);
    const updated = await untilSettled(
      osb,
      `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(updating.body.operation))}`,
    );
    expect(updated.body.state).toBe('succeeded');
    expect((await record(instanceId)).spec.clusterId).toBe(sister1);

    // WHEN it moves on, sister to sister, with the scheduler choosing among the others
    const onward = await move(instanceId);
    expect(onward.state).toBe('succeeded');
    const chosen = (await record(instanceId)).spec.clusterId!;
    expect([masterId, sister2]).toContain(chosen);
    // THEN nothing of it is left on the first sister: not its namespace, not its copies
    await untilNamespaceGone(clusterOf(sister1), `sf-${instanceId}`, 60_000);
    expect(await postgresqlOn(chosen, instanceId)).toBeDefined();
    // and its reservation, if any, is where it is now
    for (const id of ids.filter((i) => i !== chosen)) {
      const cluster = await getRecord<SFCluster>(master, SFCLUSTER, registry, id);
      expect(cluster?.status?.reserved?.[instanceId]).toBeUndefined();
    }

    // Temporal lists the moves of the instance
    const raw = await temporalClient();
    try {
      const { executions } = await raw.client.workflowService.listWorkflowExecutions({
        namespace: environment().temporal.namespace,
        query: `WorkflowId = '${instanceWorkflowId(instanceId)}' AND OsbOperation = 'move'`,
      });
      expect(executions.map((e) => e.execution?.runId).sort()).toEqual([moved.runId, onward.runId].sort());
    } finally {
      await raw.close();
    }

    // the platform deprovisions it where it is: nothing is left anywhere
    const deleting = await osb(
      'DELETE',
      `${instancePath(instanceId)}?service_id=${SERVICE_ID}&plan_id=${PLANS.stateless}&accepts_incomplete=true`,
    );
    expect([200, 202]).toContain(deleting.status);
    for (const id of ids) await untilNamespaceGone(clusterOf(id), `sf-${instanceId}`, 60_000);
  }, 300_000);

  test('an instance of the example plan moves with its rows and its users’ passwords: backed up, restored, bindings unchanged', async () => {
    // GIVEN an instance on the master with a binding, and rows written
    const instanceId = await provision(PLANS.stateful);
    const { bindingId, credentials } = await bind(instanceId, PLANS.stateful);
    await writeRows(masterId, instanceId, { rows: 'alpha,beta' });

    // WHEN it moves to the first sister
    const moved = await move(instanceId, sister1);

    // THEN its rows are there, its binding's credentials are the ones the platform holds, and work there
    expect(moved).toMatchObject({
      state: 'succeeded',
      description: `Moved from cluster ${masterId} to cluster ${sister1}`,
    });
    expect(await dataOn(sister1, instanceId)).toEqual({ rows: 'alpha,beta' });
    const after = await responseOf(instanceId, bindingId);
    expect(after.username).toBe(credentials.username);
    expect(after.password === credentials.password).toBe(true);
    expect((await passwordOn(sister1, instanceId, credentials.username!)) === credentials.password).toBe(
      true,
    );
    const moved_ = await record(instanceId);
    expect(moved_.spec.clusterId).toBe(sister1);
    expect(moved_.status?.lastBackup).toMatchObject({
      action: 'x-backup',
      id: moved.runId,
      clusterId: masterId,
    });
    expect(await postgresqlOn(masterId, instanceId)).toBeUndefined();
    // the platform's GET of the binding answers with them
    const fetched = await osb('GET', `${instancePath(instanceId)}/service_bindings/${bindingId}`);
    expect(fetched.status).toBe(200);
    expect((fetched.body.credentials as Record<string, string>).password === credentials.password).toBe(true);
  }, 300_000);

  test('a move that fails at the restore leaves the source untouched and answering, and the target clean', async () => {
    // GIVEN an instance on the master with a binding and rows
    const instanceId = await provision(PLANS.failingRestore);
    const { bindingId, credentials } = await bind(instanceId, PLANS.failingRestore);
    await writeRows(masterId, instanceId, { rows: 'gamma' });

    // WHEN it is moved to the second sister, and the operator fails the restore there
    const moved = await move(instanceId, sister2);

    // THEN the move failed, saying why and where the instance is
    expect(moved.state).toBe('failed');
    expect(moved.description).toMatch(
      new RegExp(
        `^The move to cluster ${sister2} failed: restore failed: .*; the instance stays on cluster ${masterId}$`,
      ),
    );
    // the source is untouched: the record, the postgresql, its rows and the binding's credentials
    const source = await record(instanceId);
    expect(source.spec.clusterId).toBe(masterId);
    expect(source.status?.lastAction).toMatchObject({ operation: 'move', state: 'failed' });
    expect(await postgresqlOn(masterId, instanceId)).toBeDefined();
    expect(await dataOn(masterId, instanceId)).toEqual({ rows: 'gamma' });
    expect((await responseOf(instanceId, bindingId)).password === credentials.password).toBe(true);
    expect((await passwordOn(masterId, instanceId, credentials.username!)) === credentials.password).toBe(
      true,
    );
    // and the target is clean: no namespace, no reservation
    await untilNamespaceGone(clusterOf(sister2), `sf-${instanceId}`, 60_000);
    const target = await getRecord<SFCluster>(master, SFCLUSTER, registry, sister2);
    expect(target?.status?.reserved?.[instanceId]).toBeUndefined();
    // the platform's operations work again
    const updating = await osb('PATCH', `${instancePath(instanceId)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.failingRestore,
      parameters: { foo: 'after' },
    });
    expect(updating.status).toBe(202);
  }, 300_000);

  test('a move is refused when the plan says its instances never move, or the instance is where it is asked to go', async () => {
    const instanceId = await provision(PLANS.fixed);
    const refused = await admin('POST', `/admin/instances/${instanceId}/move`, { cluster: sister1 });
    expect(refused.status).toBe(409);
    expect(refused.body.description).toBe(
      'The instance cannot move: plan fixed says its instances cannot move: its data lives on local disks.',
    );
    const movable = await provision(PLANS.stateless);
    const already = await admin('POST', `/admin/instances/${movable}/move`, { cluster: masterId });
    expect(already.status).toBe(409);
    expect(already.body.description).toBe(`The instance is on cluster ${masterId} already.`);
    const malformed = await admin('POST', `/admin/instances/${movable}/move`, { to: sister1 });
    expect(malformed.status).toBe(400);
    const unknown = await move(movable, 'no-such-cluster');
    expect(unknown.state).toBe('failed');
    expect(unknown.description).toContain('cluster no-such-cluster is not registered');
    expect((await record(movable)).spec.clusterId).toBe(masterId);
    expect(await postgresqlOn(masterId, movable)).toBeDefined();
  }, 180_000);
});
