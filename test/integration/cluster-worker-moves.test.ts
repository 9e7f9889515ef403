/**
 * Moving instances to, from and between clusters that have workers of their own, on the real
 * servers: a landscape of its own whose two sisters are each registered with a task queue and no
 * kubeconfig, served by a worker that holds that sister's kubeconfig, its identity on the master
 * (the catalog, its own SFCluster, Secrets in its drop box: never the records) and the payload
 * keys derived for its cluster. The landscape's process reaches only the master.
 *
 * An instance with generated Secrets and a binding moves from the master to the first sister, on
 * to the second, and back to the master. Its generated Secrets keep their values on every
 * cluster: they are handed over through the drop boxes on the master, their names alone in the
 * history, and nothing is left in the drop boxes. Each cluster it leaves keeps nothing of it, the
 * master keeps no reservation or leaving label of it there. A sister that comes back after its
 * worker was gone loses the copies of instances that are placed elsewhere now: its worker lists
 * them, the landscape decides, its worker removes them.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { installCatalog } from '../../dev/catalog.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { deleteRecord, getRecord } from '../../src/kube/custom-objects.js';
import { LABELS, dropBoxNamespace, instanceWorkflowId, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type SFCluster,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { deriveClusterKey, formatPayloadKeys, parsePayloadKeys } from '../../src/temporal/codec.js';
import { clusterHealthWorkflowId } from '../../src/workflows/messages.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import {
  clusterWorkerGrants,
  issueNamespacedIdentity,
  removeRegistry,
  scheduledSteps,
  stopClusterHealth,
  type Identity,
} from '../support/clusters.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { applyPlanCopy } from '../support/plans.js';
import { sweepForSecrets } from '../support/secrets-sweep.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
/** The plan of examples/generated-secrets. */
const GENERATED_SECRETS_PLAN = 'd0c9dbe9-eb7f-4e28-9f3f-8c9b4e084f34';
/** A copy of examples/generated-secrets that moves by being provisioned anew on the target. */
const PLAN_ID = 'b5a0c1de-0000-4000-8000-00000000c0a1';

/** A sister served by a worker of its own. */
interface OwnWorkerCluster {
  readonly id: string;
  readonly taskQueue: string;
  readonly admin: ClusterClient;
  readonly kubeconfigPath: string;
  identity?: Identity;
  identityKubeconfig?: string;
  worker?: SystemProcess;
}

describe('moves to, from and between clusters with workers of their own', () => {
  const [master, first, second] = clusters();
  const env = environment();
  const registry = unique('cwm');
  const masterId = env.clusters[0]!.id;
  const sisters: OwnWorkerCluster[] = [
    {
      id: unique('own-a'),
      taskQueue: unique('queue-a'),
      admin: first!,
      kubeconfigPath: env.clusters[1]!.kubeconfigPath,
    },
    {
      id: unique('own-b'),
      taskQueue: unique('queue-b'),
      admin: second!,
      kubeconfigPath: env.clusters[2]!.kubeconfigPath,
    },
  ];
  const [a, b] = sisters as [OwnWorkerCluster, OwnWorkerCluster];
  let landscape: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  let settings: SystemSettings;

  const clusterOf = (id: string): ClusterClient => sisters.find((s) => s.id === id)?.admin ?? master!;
  const admin = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    callAdmin(landscape.url, method, path, body !== undefined ? { body } : {});

  /** Starts the worker of a sister with its own identity on the master and its derived keys. */
  async function startClusterWorker(sister: OwnWorkerCluster): Promise<SystemProcess> {
    return startProcess('worker', {
      ...settings,
      payloadKeys: formatPayloadKeys(
        parsePayloadKeys(settings.payloadKeys).map((key) => deriveClusterKey(key, sister.id)),
      ),
      extraEnv: {
        ...settings.extraEnv,
        INTEROP_CLUSTER_ID: sister.id,
        INTEROP_CLUSTER_KUBECONFIG: sister.kubeconfigPath,
        INTEROP_MASTER_KUBECONFIG: sister.identityKubeconfig!,
      },
    });
  }

  beforeAll(async () => {
    await registerCluster(master!, registry, masterId, env.clusters[0]!.kubeconfigPath);
    const [design] = (
      await installCatalog(master!, registry, ['examples/postgresql', 'examples/generated-secrets'])
    ).filter((o) => o.kind === 'SFPlan' && o.metadata.name === GENERATED_SECRETS_PLAN) as SFPlan[];
    await applyPlanCopy(master!, registry, design!, PLAN_ID, 'moving-generated-secrets', { migrate: {} });
    const adminKubeconfig = readFileSync(env.clusters[0]!.kubeconfigPath, 'utf8');
    for (const sister of sisters) {
      await registerCluster(master!, registry, sister.id, { taskQueue: sister.taskQueue });
      await master!.core.createNamespace({
        body: { metadata: { name: dropBoxNamespace(registry, sister.id) } },
      });
      sister.identity = await issueNamespacedIdentity(
        master!,
        adminKubeconfig,
        unique('cluster-worker'),
        clusterWorkerGrants(registry, sister.id),
      );
      sister.identityKubeconfig = path.join(
        mkdtempSync(path.join(tmpdir(), 'cluster-worker-')),
        'master.kubeconfig',
      );
      writeFileSync(sister.identityKubeconfig, sister.identity.kubeconfig);
    }
    operator = await startOperator();
    settings = await systemSettings({
      INTEROP_NAMESPACE: registry,
      INTEROP_ADMIN_USERNAME: ADMIN.username,
      INTEROP_ADMIN_PASSWORD: ADMIN.password,
      INTEROP_CLUSTER_PROBE_SECONDS: '1',
      INTEROP_CLUSTER_OFFLINE_SECONDS: '5',
      // A sister back from offline is running (and loses its leftovers) after 2 s of answers, not the default minute.
      INTEROP_CLUSTER_STABILIZATION_SECONDS: '2',
    });
    landscape = await startProcess('all', settings);
    for (const sister of sisters) sister.worker = await startClusterWorker(sister);
    osb = osbClient(landscape.url);
    await eventually('the landscape catalog', async () => {
      const text = JSON.stringify((await osb('GET', '/v2/catalog')).body);
      return text.includes(PLAN_ID) ? true : undefined;
    });
    for (const sister of sisters)
      await eventually(
        `cluster ${sister.id} probed by its own worker`,
        async () =>
          (await getRecord<SFCluster>(master!, SFCLUSTER, registry, sister.id))?.status?.phase ===
            'running' || undefined,
        60_000,
      );
  }, 240_000);

  afterAll(async () => {
    await stopClusterHealth(registry);
    for (const sister of sisters) await sister.worker?.stop();
    await landscape?.stop();
    await operator?.stop();
    for (const sister of sisters) {
      await sister.identity?.revoke();
      await master!.core
        .deleteNamespace({ name: dropBoxNamespace(registry, sister.id) })
        .catch(() => undefined);
      await sister.admin.core.deleteNamespace({ name: registry }).catch(() => undefined);
    }
    await removeRegistry(master!, registry);
  });

  const instancePath = (instanceId: string) => `/v2/service_instances/${instanceId}`;

  const record = async (instanceId: string) =>
    (await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    ))!;

  /** The instance's generated Secrets on one cluster, by name, as digests of their data (never the values). */
  async function generatedOn(clusterId: string, instanceId: string): Promise<Record<string, string>> {
    const listed = await clusterOf(clusterId)
      .core.listNamespacedSecret({
        namespace: `sf-${instanceId}`,
        labelSelector: LABELS.generatedSecret,
      })
      .catch((err: { code?: number }) => {
        if (err.code === 404) return { items: [] };
        throw err;
      });
    return Object.fromEntries(
      listed.items.map((secret) => [
        secret.metadata!.name!,
        createHash('sha256')
          .update(JSON.stringify(secret.data ?? {}))
          .digest('hex'),
      ]),
    );
  }

  /** What the drop boxes on the master hold, by cluster. */
  async function dropBoxes(): Promise<Record<string, string[]>> {
    const held: Record<string, string[]> = {};
    for (const sister of sisters) {
      const listed = await master!.core.listNamespacedSecret({
        namespace: dropBoxNamespace(registry, sister.id),
      });
      held[sister.id] = listed.items.map((secret) => secret.metadata!.name!);
    }
    return held;
  }

  /** The example operator's postgresql of the instance on one cluster; undefined when it is not there. */
  async function postgresqlOn(clusterId: string, instanceId: string) {
    try {
      return await clusterOf(clusterId).custom.getNamespacedCustomObject({
        group: 'acid.zalan.do',
        version: 'v1',
        plural: 'postgresqls',
        namespace: `sf-${instanceId}`,
        name: `sapcp-${instanceId}`,
      });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  /** Moves the instance through the admin API to `cluster` and waits until the move ends. */
  async function move(instanceId: string, cluster: string) {
    const started = await admin('POST', `/admin/instances/${instanceId}/move`, { cluster });
    expect(started.status).toBe(202);
    const runId = String(started.body.runId);
    return eventually(
      `the move of ${instanceId} to ${cluster}`,
      async () => {
        const res = await admin('GET', `/admin/instances/${instanceId}/actions/move/${runId}`);
        expect(res.status).toBe(200);
        return res.body.state === 'in progress'
          ? undefined
          : (res.body as { state: string; description: string });
      },
      150_000,
    );
  }

  /** Provisions an instance of the plan through the OSB API (on the master, the default scheduler's choice). */
  async function provision(): Promise<string> {
    const instanceId = randomUUID();
    const accepted = await osb(
      'PUT',
      `${instancePath(instanceId)}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, {}),
    );
    expect(accepted.status).toBe(202);
    const provisioned = await untilSettled(
      osb,
      `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      90_000,
    );
    expect(provisioned.body.state).toBe('succeeded');
    return instanceId;
  }

  test('an instance moves from the master to one sister, on to the other, and back, its generated Secrets with it', async () => {
    // GIVEN an instance with generated Secrets and a binding, on the master
    const instanceId = await provision();
    expect((await record(instanceId)).spec.clusterId).toBe(masterId);
    const generated = await generatedOn(masterId, instanceId);
    expect(Object.keys(generated).sort()).toEqual(
      ['admin', 'ca', 'tls'].map((s) => `sapcp-${instanceId}-${s}-v1`),
    );
    const bindingId = randomUUID();
    const bound = await osb('PUT', `${instancePath(instanceId)}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    });
    expect(bound.status).toBe(201);
    const { password } = bound.body.credentials as { password: string };
    const adminPassword = Buffer.from(
      (
        await master!.core.readNamespacedSecret({
          namespace: `sf-${instanceId}`,
          name: `sapcp-${instanceId}-admin-v1`,
        })
      ).data!.password!,
      'base64',
    ).toString('utf8');

    let from = masterId;
    for (const to of [a.id, b.id, masterId]) {
      // WHEN an admin moves it on
      const moved = await move(instanceId, to);
      // THEN it is there, its generated Secrets with the values they had, and nothing of it is left where it was
      expect(moved).toMatchObject({
        state: 'succeeded',
        description: `Moved from cluster ${from} to cluster ${to}`,
      });
      const after = await record(instanceId);
      expect(after.spec.clusterId).toBe(to);
      expect(after.metadata.labels?.[LABELS.leavingCluster]).toBeUndefined();
      expect(await generatedOn(to, instanceId)).toEqual(generated);
      expect(await postgresqlOn(to, instanceId)).toBeDefined();
      expect(await postgresqlOn(from, instanceId)).toBeUndefined();
      expect(await generatedOn(from, instanceId)).toEqual({});
      // the drop boxes hold nothing of it
      expect(await dropBoxes()).toEqual({ [a.id]: [], [b.id]: [] });
      // the master keeps its reservation only where it is
      for (const id of [masterId, a.id, b.id].filter((c) => c !== to)) {
        const cluster = await getRecord<SFCluster>(master!, SFCLUSTER, registry, id);
        expect(cluster?.status?.reserved?.[instanceId]).toBeUndefined();
      }
      // and its binding's credentials are read where it is now
      const fetched = await osb('GET', `${instancePath(instanceId)}/service_bindings/${bindingId}`);
      expect(fetched.status).toBe(200);
      expect((fetched.body.credentials as { username: string }).username).toBe(bindingId.replace(/-/g, '_'));
      // the steps on a sister ran on its worker's queue
      const steps = await scheduledSteps(instanceWorkflowId(instanceId));
      const handOver = steps.filter((s) => s.step === 'handOverGeneratedSecrets');
      const takeOver = steps.filter((s) => s.step === 'takeOverGeneratedSecrets');
      if (from !== masterId)
        expect(handOver.map((s) => s.taskQueue)).toEqual([sisters.find((s) => s.id === from)!.taskQueue]);
      if (to !== masterId)
        expect(takeOver.map((s) => s.taskQueue)).toEqual([sisters.find((s) => s.id === to)!.taskQueue]);
      expect(steps.filter((s) => s.step === 'copyGeneratedSecrets')).toEqual([]);
      from = to;
    }

    // THEN no generated value and no credential went through Temporal
    const sweep = await sweepForSecrets({
      taskQueue: settings.taskQueue,
      payloadKeys: settings.payloadKeys,
      credentials: [
        ['the generated admin password', adminPassword],
        ['the binding’s password', password],
      ],
    });
    expect(sweep.hits).toEqual([]);
  }, 600_000);

  test('a drain of a sister with a worker of its own moves its instances off it, their generated Secrets with them', async () => {
    // GIVEN two instances moved to the second sister
    const instances = [await provision(), await provision()];
    const generated = new Map<string, Record<string, string>>();
    for (const instanceId of instances) {
      generated.set(instanceId, await generatedOn(masterId, instanceId));
      expect(await move(instanceId, b.id)).toMatchObject({ state: 'succeeded' });
    }
    // WHEN an admin drains it
    const started = await admin('POST', `/admin/clusters/${b.id}/drain`, {
      canary: 0,
      maxConcurrency: 2,
      soakSeconds: 0,
      maxFailures: 0,
    });
    expect(started.status).toBe(202);
    const listed = await admin('GET', '/admin/rollouts');
    const drain = (listed.body.items as { id: string; kind: string; drain?: { clusterId: string } }[]).find(
      (r) => r.kind === 'drain' && r.drain?.clusterId === b.id,
    );
    const ended = await eventually(
      'the drain to end',
      async () => {
        const res = await admin('GET', `/admin/rollouts/${encodeURIComponent(drain!.id)}`);
        expect(res.status).toBe(200);
        const state = String(res.body.state);
        return ['done', 'blocked', 'halted', 'aborted'].includes(state) ? res.body : undefined;
      },
      180_000,
    );
    // THEN every instance is on another cluster with its generated Secrets, and nothing of it is left on the sister
    expect(ended).toMatchObject({ state: 'done', done: 2, failed: 0, total: 2 });
    for (const instanceId of instances) {
      const where = (await record(instanceId)).spec.clusterId!;
      expect([masterId, a.id]).toContain(where);
      expect(await generatedOn(where, instanceId)).toEqual(generated.get(instanceId));
      expect(await postgresqlOn(b.id, instanceId)).toBeUndefined();
      expect(await generatedOn(b.id, instanceId)).toEqual({});
    }
    expect(await dropBoxes()).toEqual({ [a.id]: [], [b.id]: [] });
    const sfcluster = await getRecord<SFCluster>(master!, SFCLUSTER, registry, b.id);
    expect(sfcluster?.status?.conditions?.find((c) => c.type === 'Drained')).toMatchObject({
      status: 'True',
    });
  }, 600_000);

  test('a sister with a worker of its own that comes back loses the copies of instances placed elsewhere', async () => {
    // GIVEN on the first sister a copy of an instance record whose master record names the master
    const instanceId = await provision();
    const namespace = `sf-${instanceId}`;
    const { metadata, spec } = await record(instanceId);
    await a.admin.core.createNamespace({ body: { metadata: { name: namespace } } });
    await a.admin.custom.createNamespacedCustomObject({
      group: 'osb.servicefabrik.io',
      version: 'v1alpha1',
      plural: 'sfserviceinstances',
      namespace,
      body: {
        apiVersion: 'osb.servicefabrik.io/v1alpha1',
        kind: 'SFServiceInstance',
        metadata: {
          name: metadata.name,
          namespace,
          labels: { ...metadata.labels, [LABELS.clusterId]: a.id, OWNER_INTEROPERATOR_NAMESPACE: registry },
        },
        spec: { ...spec, clusterId: a.id },
      },
    });
    // WHEN its worker is gone until the cluster is offline, and then back
    await a.worker!.stop();
    await eventually(
      'the first sister offline',
      async () =>
        (await getRecord<SFCluster>(master!, SFCLUSTER, registry, a.id))?.status?.phase === 'offline' ||
        undefined,
      120_000,
    );
    a.worker = await startClusterWorker(a);
    // THEN the copy and its namespace go from the sister (only its worker reaches it), and the instance stays on the master
    await eventually(
      'the leftover copy gone',
      async () => {
        try {
          await a.admin.core.readNamespace({ name: namespace });
          return undefined;
        } catch (err) {
          return (err as { code?: number }).code === 404 || undefined;
        }
      },
      120_000,
    );
    expect((await record(instanceId)).spec.clusterId).toBe(masterId);
    expect(await postgresqlOn(masterId, instanceId)).toBeDefined();
  }, 400_000);

  test('deleting the SFCluster of a sister with a worker of its own drains it through that worker, then lets the deletion finish', async () => {
    // GIVEN an instance on the first sister (back after the test before)
    await eventually(
      'the first sister running',
      async () =>
        (await getRecord<SFCluster>(master!, SFCLUSTER, registry, a.id))?.status?.phase === 'running' ||
        undefined,
      60_000,
    );
    const instanceId = await provision();
    const generated = await generatedOn(masterId, instanceId);
    expect(await move(instanceId, a.id)).toMatchObject({ state: 'succeeded' });
    // WHEN its SFCluster is deleted
    await deleteRecord(master!, SFCLUSTER, registry, a.id);
    // THEN the drain the deletion starts moves the instance off it (to the master: the other sister is drained), and the SFCluster goes
    await eventually(
      'the SFCluster gone',
      async () => ((await getRecord<SFCluster>(master!, SFCLUSTER, registry, a.id)) ? undefined : true),
      180_000,
    );
    const moved = await eventually('the move recorded as ended', async () => {
      const read = await record(instanceId);
      return read.status?.lastAction?.state !== 'in progress' ? read : undefined;
    });
    expect(moved.spec.clusterId).toBe(masterId);
    expect(moved.status?.lastAction).toMatchObject({ operation: 'move', state: 'succeeded' });
    expect(moved.metadata.labels?.[LABELS.leavingCluster]).toBeUndefined();
    expect(await generatedOn(masterId, instanceId)).toEqual(generated);
    expect(await postgresqlOn(masterId, instanceId)).toBeDefined();
    expect(await generatedOn(a.id, instanceId)).toEqual({});
    expect(await dropBoxes()).toEqual({ [a.id]: [], [b.id]: [] });
    // and its worker probed and released it with its own identity: no probe of it failed
    expect(await failedSteps(clusterHealthWorkflowId(registry), a.taskQueue)).toEqual([]);
  }, 400_000);

  /** The steps on `taskQueue` that failed (after their retries) in any run of a workflow. */
  async function failedSteps(workflowId: string, taskQueue: string): Promise<string[]> {
    const temporal = await temporalClient();
    try {
      const failed: string[] = [];
      for await (const run of temporal.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
        const history = await temporal.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
        const scheduled = new Map<string, { step: string; taskQueue: string }>();
        for (const e of history.events ?? []) {
          const attrs = e.activityTaskScheduledEventAttributes;
          if (attrs)
            scheduled.set(String(e.eventId), {
              step: attrs.activityType?.name ?? '',
              taskQueue: attrs.taskQueue?.name ?? '',
            });
          const failure = e.activityTaskFailedEventAttributes;
          const step = failure && scheduled.get(String(failure.scheduledEventId));
          if (step?.taskQueue === taskQueue) failed.push(step.step);
        }
      }
      return failed;
    } finally {
      await temporal.close();
    }
  }
});
