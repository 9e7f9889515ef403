/**
 * Draining a cluster on the real servers: a landscape of its own (its own registry namespace,
 * SFClusters for the master and the two sisters, its own catalog), the example operator on every
 * cluster, and the broker and worker as one process with the admin API.
 *
 * Three instances are placed on the first sister (the others cordoned meanwhile, the landscape's
 * scheduler `least-utilized`): two of a plan that moves by provisioning anew (`migrate: {}`), with
 * a binding each, and one of a plan that does not say how its instances move. The drain, one move
 * at a time with a canary and a soak, cordons the sister, moves the two off it (the platform's
 * update of one gets 422 while it moves), lists the third as unmovable with why, and ends
 * `blocked`; the sister's `Drained` condition says why it is not drained.
 *
 * Nothing probes these SFClusters: the test writes their `status.phase` (running) itself, as the
 * cluster health workflow does in a landscape.
 */
import { randomUUID } from 'node:crypto';
import { clusterActivities } from '../../src/activities/clusters.js';
import { installCatalog } from '../../dev/catalog.js';
import { clusterDirectory } from '../../src/kube/cluster-directory.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { deleteRecord, getRecord, patchRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { bindingSecretName, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFCluster,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { startOperator, startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLANS = {
  /** Moves by provisioning anew on the target: `migrate: {}`. */
  movable: 'c0ffee00-0000-4000-8000-00000000d001',
  /** Says nothing of how its instances move: they stay. */
  unsaid: 'c0ffee00-0000-4000-8000-00000000d002',
} as const;

describe('draining a cluster', () => {
  const all = clusters();
  const master = all[0]!;
  const ids = environment().clusters.map((c) => c.id);
  const [masterId, sister1, sister2] = ids as [string, string, string];
  const registry = unique('dr');
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;

  const admin = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    callAdmin(system.url, method, path, body !== undefined ? { body } : {});
  const instancePath = (instanceId: string) => `/v2/service_instances/${instanceId}`;
  const cordon = (clusterId: string, schedulingDisabled: boolean) =>
    patchRecord(master, SFCLUSTER, registry, clusterId, { spec: { schedulingDisabled } });
  const sfcluster = async (clusterId: string) =>
    (await getRecord<SFCluster>(master, SFCLUSTER, registry, clusterId))!;

  beforeAll(async () => {
    for (const c of environment().clusters) {
      await registerCluster(master, registry, c.id, c.kubeconfigPath);
      await patchRecordStatus(master, SFCLUSTER, registry, c.id, { phase: 'running' });
    }
    const installed = await installCatalog(master, registry, ['examples/postgresql']);
    const design = installed.find((o) => o.kind === 'SFPlan') as SFPlan;
    const { migrate: _none, ...spec } = design.spec;
    const plan = (id: string, name: string, extra: Partial<SFPlan['spec']>) =>
      applyObject(master, {
        apiVersion: design.apiVersion,
        kind: design.kind,
        metadata: { name: id, namespace: registry },
        spec: { ...spec, id, name, ...extra },
      } as KubeObject);
    await plan(PLANS.movable, 'movable', { migrate: {} });
    await plan(PLANS.unsaid, 'unsaid', {});
    operator = await startOperator();
    system = await startProcess(
      'all',
      await systemSettings({
        INTEROP_NAMESPACE: registry,
        INTEROP_SCHEDULER: 'least-utilized',
        INTEROP_ADMIN_USERNAME: ADMIN.username,
        INTEROP_ADMIN_PASSWORD: ADMIN.password,
      }),
    );
    osb = osbClient(system.url);
    await eventually('the landscape catalog', async () => {
      const text = JSON.stringify((await osb('GET', '/v2/catalog')).body);
      return text.includes(PLANS.movable) && text.includes(PLANS.unsaid) ? true : undefined;
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

  async function bind(instanceId: string, planId: string): Promise<string> {
    const bindingId = randomUUID();
    const bound = await osb('PUT', `${instancePath(instanceId)}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: planId,
    });
    expect(bound.status).toBe(201);
    return bindingId;
  }

  const record = async (instanceId: string) =>
    (await getRecord<SFServiceInstance>(
      master,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    ))!;

  /** The credentials in a binding's response Secret on the master. */
  async function responseOf(instanceId: string, bindingId: string): Promise<Record<string, string>> {
    const secret = await master.core.readNamespacedSecret({
      namespace: `sf-${instanceId}`,
      name: bindingSecretName(resourceName(bindingId)),
    });
    const text = Buffer.from(secret.data?.response ?? '', 'base64').toString('utf8');
    return (JSON.parse(text) as { credentials: Record<string, string> }).credentials;
  }

  test('a drain moves the movable instances off the cluster, one at a time, and ends blocked by the one that cannot move', async () => {
    // GIVEN three instances on the first sister (the others cordoned while they are placed)
    await cordon(masterId, true);
    await cordon(sister2, true);
    const movable = [await provision(PLANS.movable), await provision(PLANS.movable)];
    const unsaid = await provision(PLANS.unsaid);
    for (const id of [...movable, unsaid]) expect((await record(id)).spec.clusterId).toBe(sister1);
    const bindings = new Map<string, string>();
    for (const id of movable) bindings.set(id, await bind(id, PLANS.movable));
    await cordon(masterId, false);
    await cordon(sister2, false);

    // WHEN an admin drains it: a canary alone, a soak after it, then one move at a time
    const unknown = await admin('POST', '/admin/clusters/no-such-cluster/drain', {});
    expect([unknown.status, unknown.body.error]).toEqual([404, 'NotFound']);
    const started = await admin('POST', `/admin/clusters/${sister1}/drain`, {
      canary: 1,
      maxConcurrency: 1,
      soakSeconds: 600,
      maxFailures: 0,
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ drain: { clusterId: sister1 }, revision: sister1 });
    expect(started.body.planId).toBeUndefined();
    // THEN the cluster is cordoned at once
    expect((await sfcluster(sister1)).spec.schedulingDisabled).toBe(true);
    // and the rollouts list the drain by its id
    const listed = await admin('GET', '/admin/rollouts');
    const drain = (listed.body.items as { id: string; kind: string; drain?: { clusterId: string } }[]).find(
      (r) => r.kind === 'drain' && r.drain?.clusterId === sister1,
    );
    expect(drain?.id).toBe(`rollout/${registry}/drain/${sister1}`);
    const drainPath = `/admin/rollouts/${encodeURIComponent(drain!.id)}`;
    const progress = async () => {
      const res = await admin('GET', drainPath);
      expect(res.status).toBe(200);
      return res.body as {
        state: string;
        done: number;
        failed: number;
        unmovable?: number;
        total: number;
        inFlight: number;
        results: Record<string, { state: string; description?: string }>;
      };
    };

    // THEN the canary moves: the platform's update of it gets 422 while it does
    const canary = await eventually('the canary move in flight', async () => {
      const p = await progress();
      return Object.entries(p.results).find(([, r]) => r.state === 'in flight')?.[0];
    });
    expect(movable).toContain(canary);
    const meanwhile = await osb('PATCH', `${instancePath(canary)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.movable,
      parameters: { foo: 'meanwhile' },
    });
    expect([meanwhile.status, meanwhile.body.error]).toEqual([422, 'ConcurrencyError']);
    // and the drain soaks after it, showing the unmovable instance with why, and the condition Draining
    const soaking = await eventually(
      'the drain soaking after its canary',
      async () => {
        const p = await progress();
        return p.state === 'soaking' ? p : undefined;
      },
      180_000,
    );
    expect(soaking).toMatchObject({ done: 1, failed: 0, unmovable: 1, total: 3, inFlight: 0 });
    expect(soaking.results[canary]).toEqual({ state: 'moved' });
    expect(soaking.results[unsaid]).toEqual({
      state: 'unmovable',
      description: 'plan unsaid does not say how its instances move (its spec.migrate)',
    });
    const draining = (await sfcluster(sister1)).status?.conditions?.find((c) => c.type === 'Drained');
    expect(draining).toMatchObject({ status: 'False', reason: 'Draining' });

    // WHEN an admin pauses it during the soak, THEN it is paused and refuses a second pause
    const paused = await admin('POST', `${drainPath}/pause`);
    expect([paused.status, paused.body.state]).toEqual([200, 'paused']);
    const again = await admin('POST', `${drainPath}/pause`);
    expect([again.status, again.body.description]).toEqual([
      409,
      `The drain of cluster ${sister1} is already paused.`,
    ]);
    // WHEN resumed, THEN it goes on without the rest of the soak: the next wave moves the other one,
    // and it soaks after it as after every wave
    const resumed = await admin('POST', `${drainPath}/resume`);
    expect(resumed.status).toBe(200);
    await eventually(
      'the drain soaking after its first wave',
      async () => {
        const p = await progress();
        return p.state === 'soaking' && p.done === 2 ? p : undefined;
      },
      180_000,
    );
    // WHEN paused and resumed again, THEN it finds nothing more to move, and ends blocked
    expect((await admin('POST', `${drainPath}/pause`)).status).toBe(200);
    expect((await admin('POST', `${drainPath}/resume`)).status).toBe(200);
    const ended = await eventually(
      'the drain to end',
      async () => {
        const p = await progress();
        return ['done', 'blocked', 'halted', 'aborted'].includes(p.state) ? p : undefined;
      },
      180_000,
    );
    expect(ended).toMatchObject({
      state: 'blocked',
      done: 2,
      failed: 0,
      unmovable: 1,
      total: 3,
      inFlight: 0,
    });

    // THEN the movable instances are on other clusters, their bindings' responses there
    for (const id of movable) {
      expect(ended.results[id]).toEqual({ state: 'moved' });
      const moved = await record(id);
      expect([masterId, sister2]).toContain(moved.spec.clusterId);
      expect(moved.metadata.annotations?.['interoperator.servicefabrik.io/placement']).toContain(
        `drain of cluster ${sister1}`,
      );
      const credentials = await responseOf(id, bindings.get(id)!);
      expect(credentials.username).toBe(bindings.get(id)!.replace(/-/g, '_'));
    }
    // the platform's update of a moved instance works again, where it is now
    const updating = await osb('PATCH', `${instancePath(canary)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.movable,
      parameters: { foo: 'after' },
    });
    expect(updating.status).toBe(202);
    const updated = await untilSettled(
      osb,
      `${instancePath(canary)}/last_operation?operation=${encodeURIComponent(String(updating.body.operation))}`,
    );
    expect(updated.body.state).toBe('succeeded');
    // Temporal lists the drain by its operation and cluster
    const raw = await temporalClient();
    try {
      const { executions } = await raw.client.workflowService.listWorkflowExecutions({
        namespace: environment().temporal.namespace,
        query: `OsbOperation = 'drain' AND OsbClusterId = '${sister1}' AND WorkflowId = '${drain!.id}'`,
      });
      expect(executions.length).toBe(1);
    } finally {
      await raw.close();
    }
    // the unmovable one stays, and the cluster says why it is not drained
    expect((await record(unsaid)).spec.clusterId).toBe(sister1);
    const cluster = await sfcluster(sister1);
    expect(cluster.spec.schedulingDisabled).toBe(true);
    expect(cluster.status?.conditions?.find((c) => c.type === 'Drained')).toMatchObject({
      status: 'False',
      reason: 'Blocked',
      message:
        'The drain ended with instances it could not move: 1 instance left on the cluster, 2 moved, 1 cannot move (their plan says so).',
    });
    // an ended drain refuses an abort, with why
    const abort = await admin('POST', `${drainPath}/abort`);
    expect(abort.status).toBe(409);
    expect(abort.body.description).toContain(`The drain of cluster ${sister1} ended blocked`);

    // WHEN the unmovable instance is deprovisioned and the cluster drained again, THEN it is drained
    const deleting = await osb(
      'DELETE',
      `${instancePath(unsaid)}?service_id=${SERVICE_ID}&plan_id=${PLANS.unsaid}&accepts_incomplete=true`,
    );
    expect([200, 202]).toContain(deleting.status);
    await eventually(
      'the unmovable instance gone',
      async () =>
        (await getRecord(master, SFSERVICEINSTANCE, `sf-${unsaid}`, resourceName(unsaid))) ? undefined : true,
      120_000,
    );
    const second = await admin('POST', `/admin/clusters/${sister1}/drain`, {});
    expect(second.status).toBe(202);
    const drained = await eventually(
      'the second drain to end',
      async () => {
        const p = await progress();
        return p.state === 'done' ? p : undefined;
      },
      60_000,
    );
    expect(drained).toMatchObject({ total: 0, done: 0, unmovable: 0 });
    expect((await sfcluster(sister1)).status?.conditions?.find((c) => c.type === 'Drained')).toMatchObject({
      status: 'True',
      reason: 'Drained',
    });
  }, 600_000);

  test('a health probe of a cluster keeps the Drained condition a drain wrote while the probe ran', async () => {
    // GIVEN a probe of the master, during which (between its read of the SFCluster and its write)
    // a drain writes the cluster's Drained condition, as a drain's step does
    const drained = {
      type: 'Drained',
      status: 'False',
      reason: 'Draining',
      message: 'Moving the instances off the cluster: 1 instance left on the cluster, 0 moved.',
      lastTransitionTime: new Date().toISOString(),
    };
    const directory = clusterDirectory(master, registry, { masterId });
    let written = false;
    const duringProbe: typeof directory = Object.create(directory) as typeof directory;
    duringProbe.get = async (clusterId: string) => {
      if (!written) {
        written = true;
        const before = await sfcluster(masterId);
        const others = (before.status?.conditions ?? []).filter((c) => c.type !== 'Drained');
        await patchRecordStatus(
          master,
          SFCLUSTER,
          registry,
          masterId,
          { conditions: [...others, drained] },
          before.metadata.resourceVersion,
        );
      }
      return directory.get(clusterId);
    };
    // WHEN the probe writes the cluster's health
    const report = await clusterActivities({ clusters: duringProbe }).recordClusterHealth(masterId, 60_000);
    // THEN the health is written, and the drain's condition is still there
    expect(written).toBe(true);
    expect(report.phase).toBe('running');
    const cluster = await sfcluster(masterId);
    expect(cluster.status?.conditions?.find((c) => c.type === 'Drained')).toMatchObject({
      status: 'False',
      reason: 'Draining',
    });
    expect(cluster.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True' });
  }, 60_000);
});
