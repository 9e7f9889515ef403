/**
 * The cluster registry and its health against the real servers: the health workflow probes the
 * clusters of this test's own registry (the master, a shared sister, and an apiserver of the test's
 * own that it stops and starts), writes their status, refuses the deletion of a cluster that still
 * holds an instance, and keeps the catalog's copies on the running sisters in step. The directory
 * follows a rotated kubeconfig without a restart.
 */
import { NetworkingV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { NativeConnection, Worker } from '@temporalio/worker';
import { installCatalog } from '../../dev/catalog.js';
import { SERVICE_CLUSTER_IP_RANGE, type ExtraCluster } from '../../dev/local/kube-control-plane.js';
import { clusterActivities } from '../../src/activities/clusters.js';
import { clusterClientFromKubeconfig, type ClusterClient } from '../../src/kube/clients.js';
import { clusterDirectory } from '../../src/kube/cluster-directory.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import {
  deleteRecord,
  getRecord,
  listRecords,
  patchRecord,
  patchRecordStatus,
} from '../../src/kube/custom-objects.js';
import { CLUSTER_FINALIZER, LABELS, labelValue } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFPLAN,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFCluster,
  type SFPlan,
} from '../../src/resources/types.js';
import { clusterHealthWorkflowId, type ClusterHealthSettings } from '../../src/workflows/messages.js';
import { issueIdentity, startOwnCluster } from '../support/clusters.js';
import { waitableCondition } from '../support/conditions.js';
import { startProcess, systemSettings } from '../support/system.js';
import {
  builtWorkflows,
  clusters,
  environment,
  eventually,
  temporalClient,
  unique,
  untilGone,
} from '../support/env.js';

const SETTINGS: ClusterHealthSettings = { probeSeconds: 1, offlineSeconds: 3, stabilizationSeconds: 4 };
const DECLARED = { cpu: '4', memory: '8Gi' };
/** Nodes or pods the probe reads in one request. */
const PAGE_SIZE = 2;

const namespace = unique('registry');
const ownId = unique('own');
const [master, sister] = clusters() as [ClusterClient, ClusterClient];
const directory = clusterDirectory(master, namespace);

let own: { extra: ExtraCluster; admin: ClusterClient };
let worker: Worker;
let running: Promise<void>;
let temporal: Awaited<ReturnType<typeof temporalClient>>;
let connection: NativeConnection;

const readCluster = (id: string) => getRecord<SFCluster>(master, SFCLUSTER, namespace, id);

/** Waits until the SFCluster's status satisfies `check`; returns it. */
const untilCluster = (id: string, what: string, check: (c: SFCluster) => boolean, timeoutMs = 30_000) =>
  eventually(
    `SFCluster ${id} ${what}`,
    async () => {
      const cluster = await readCluster(id);
      return cluster && check(cluster) ? cluster : undefined;
    },
    timeoutMs,
  );

const plansOn = async (cluster: ClusterClient) =>
  (await listRecords<SFPlan>(cluster, SFPLAN, namespace, `${LABELS.replicaOf}=1`))
    .map((p) => p.metadata.name!)
    .sort();

beforeAll(async () => {
  own = await startOwnCluster(ownId);
  const env = environment();
  await registerCluster(master, namespace, '1', env.clusters[0]!.kubeconfigPath);
  await registerCluster(master, namespace, sister.id, env.clusters[1]!.kubeconfigPath);
  await registerCluster(
    master,
    namespace,
    ownId,
    { text: own.extra.cluster.kubeconfig },
    { totalCapacity: DECLARED },
  );
  await installCatalog(master, namespace, ['examples/postgresql', 'examples/mustache']);

  connection = await NativeConnection.connect({ address: env.temporal.address });
  temporal = await temporalClient();
  const taskQueue = unique('health');
  worker = await Worker.create({
    connection,
    namespace: env.temporal.namespace,
    taskQueue,
    ...builtWorkflows(),
    // Pages far smaller than the test's clusters, so that every listing of theirs takes several.
    activities: clusterActivities({ clusters: directory, probePageSize: PAGE_SIZE }),
  });
  running = worker.run();
  await temporal.client.workflow.start('clusterHealthWorkflow', {
    workflowId: clusterHealthWorkflowId(namespace),
    taskQueue,
    args: [SETTINGS],
  });
});

afterAll(async () => {
  await temporal?.client.workflow
    .getHandle(clusterHealthWorkflowId(namespace))
    .terminate('test over')
    .catch(() => undefined);
  worker?.shutdown();
  await running;
  await connection?.close();
  await temporal?.close();
  await own?.extra.stop();
  // Let the registry's namespace go: the SFClusters' finalizer is the health round's to remove.
  for (const cluster of await listRecords<SFCluster>(master, SFCLUSTER, namespace)) {
    await patchRecord(master, SFCLUSTER, namespace, cluster.metadata.name!, {
      metadata: { finalizers: null },
    });
  }
  await master.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  await sister.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

describe('the cluster health workflow', () => {
  test('a probe turns the clusters running, with the version, declared capacity and the finalizer', async () => {
    for (const id of ['1', sister.id])
      await untilCluster(id, 'running', (c) => c.status?.phase === 'running');
    const cluster = await untilCluster(ownId, 'running', (c) => c.status?.phase === 'running');
    expect(cluster.status?.version).toMatch(/^v1\.\d+/);
    expect(cluster.status?.capacity).toEqual(DECLARED);
    expect(cluster.status?.allocatable).toEqual(DECLARED);
    expect(cluster.status?.serviceInstanceCount).toBe(0);
    expect(cluster.metadata.finalizers).toContain(CLUSTER_FINALIZER);
    expect(cluster.status?.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'Ready', status: 'True', reason: 'Reachable' }),
        expect.objectContaining({ type: 'Schedulable', status: 'True' }),
        expect.objectContaining({ type: 'Reconciling', status: 'False' }),
        expect.objectContaining({ type: 'Stalled', status: 'False' }),
      ]),
    );
    // kstatus: current and Ready, what kubectl wait --for=condition=Ready reads
    expect(cluster.status?.observedGeneration).toBe(cluster.metadata.generation);
    expect(waitableCondition(cluster, 'Ready')).toBe('True');
  });

  test('a cordoned cluster stays running and shows it is not schedulable', async () => {
    await patchRecord(master, SFCLUSTER, namespace, sister.id, { spec: { schedulingDisabled: true } });
    const cordoned = await untilCluster(sister.id, 'cordoned', (c) =>
      Boolean(
        c.status?.conditions?.some((x) => x.type === 'Schedulable' && x.reason === 'SchedulingDisabled'),
      ),
    );
    expect(cordoned.status?.phase).toBe('running');
    // Cordoned is still Ready, for the generation that cordons it.
    expect(cordoned.status?.observedGeneration).toBe(cordoned.metadata.generation);
    expect(waitableCondition(cordoned, 'Ready')).toBe('True');
    await patchRecord(master, SFCLUSTER, namespace, sister.id, { spec: { schedulingDisabled: null } });
    await untilCluster(sister.id, 'schedulable again', (c) =>
      Boolean(c.status?.conditions?.some((x) => x.type === 'Schedulable' && x.status === 'True')),
    );
  });

  test('requests count the pods outside instance namespaces, read a page at a time; the pods of instances are booked by their reservations alone', async () => {
    // GIVEN on the own cluster (no nodes: its pods stay pending) more pods than a page: 5 of 100m in
    // a team's namespace, one there that has finished, and 2 of 1 CPU of a placed instance, whose
    // reservation books them
    const team = unique('team');
    const instanceId = unique('placed');
    const instanceNs = `sf-${instanceId}`;
    for (const ns of [team, instanceNs])
      await own.admin.core.createNamespace({ body: { metadata: { name: ns } } });
    const pod = (ns: string, name: string, cpu: string) =>
      own.admin.core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name },
          spec: { containers: [{ name: 'c', image: 'none', resources: { requests: { cpu } } }] },
        },
      });
    for (let i = 0; i < 5; i++) await pod(team, `p${i}`, '100m');
    await pod(team, 'finished', '1');
    await own.admin.core.patchNamespacedPodStatus(
      { name: 'finished', namespace: team, body: { status: { phase: 'Succeeded' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    for (let i = 0; i < 2; i++) await pod(instanceNs, `db-${i}`, '1');
    await patchRecordStatus(master, SFCLUSTER, namespace, ownId, {
      reserved: { [instanceId]: { cpu: '2' } },
    });
    try {
      // THEN the probe's requests are the team's unfinished pods alone, and the reservation stays
      const probed = await untilCluster(
        ownId,
        'requests of the team’s pods',
        (c) => c.status?.requests?.cpu === '500m',
      );
      expect(probed.status?.requests).toEqual({ cpu: '500m' });
      expect(probed.status?.reserved).toEqual({ [instanceId]: { cpu: '2' } });
    } finally {
      await patchRecordStatus(master, SFCLUSTER, namespace, ownId, { reserved: { [instanceId]: null } });
      for (const ns of [team, instanceNs])
        await own.admin.core.deleteNamespace({ name: ns }).catch(() => undefined);
    }
  });

  test('allocatable sums the nodes, read a page at a time, when no capacity is declared', async () => {
    // GIVEN the own cluster with no declared capacity and more nodes than a page, one of them cordoned
    const names = [0, 1, 2, 3, 4].map((i) => unique(`node-${i}`));
    for (const [i, name] of names.entries()) {
      await own.admin.core.createNode({
        body: { metadata: { name }, spec: { unschedulable: i === 4 } },
      });
      await own.admin.core.patchNodeStatus(
        {
          name,
          body: {
            status: { capacity: { cpu: '2', memory: '2Gi' }, allocatable: { cpu: '500m', memory: '1Gi' } },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    await patchRecord(master, SFCLUSTER, namespace, ownId, { spec: { totalCapacity: null } });
    try {
      // THEN capacity counts all five nodes, allocatable the four schedulable ones
      const probed = await untilCluster(
        ownId,
        'the nodes’ allocatable',
        (c) => c.status?.allocatable?.cpu === '2',
      );
      expect([probed.status?.capacity, probed.status?.allocatable]).toEqual([
        { cpu: '10', memory: '10Gi' },
        { cpu: '2', memory: '4Gi' },
      ]);
    } finally {
      await patchRecord(master, SFCLUSTER, namespace, ownId, { spec: { totalCapacity: DECLARED } });
      for (const name of names) await own.admin.core.deleteNode({ name }).catch(() => undefined);
    }
    await untilCluster(
      ownId,
      'its declared capacity again',
      (c) => c.status?.allocatable?.cpu === DECLARED.cpu,
    );
  });

  test('the catalog is copied to the running sisters and follows a change and a deletion', async () => {
    const originals = (await listRecords<SFPlan>(master, SFPLAN, namespace))
      .map((p) => p.metadata.name!)
      .sort();
    expect(originals.length).toBeGreaterThan(1);
    for (const cluster of [sister, own.admin])
      await eventually(`the plans on ${cluster.id}`, async () =>
        JSON.stringify(await plansOn(cluster)) === JSON.stringify(originals) ? true : undefined,
      );
    // The master's originals are not marked as copies.
    expect(await plansOn(master)).toEqual([]);

    const [changed, removed] = originals as [string, string];
    await patchRecord(master, SFPLAN, namespace, changed, { spec: { description: 'changed in the master' } });
    await deleteRecord(master, SFPLAN, namespace, removed);
    for (const cluster of [sister, own.admin]) {
      await eventually(`the change on ${cluster.id}`, async () => {
        const copy = await getRecord<SFPlan>(cluster, SFPLAN, namespace, changed);
        return copy?.spec.description === 'changed in the master' ? true : undefined;
      });
      await untilGone(`the deleted plan on ${cluster.id}`, () =>
        cluster.custom.getNamespacedCustomObject({
          group: SFPLAN.group,
          version: SFPLAN.version,
          plural: SFPLAN.plural,
          namespace,
          name: removed,
        }),
      );
    }
  });

  test('a stopped apiserver turns offline within the threshold, and running again once it has answered for the stabilization window, catching up on the catalog', async () => {
    await own.extra.stop();
    const stoppedAt = Date.now();
    const offline = await untilCluster(ownId, 'offline', (c) => c.status?.phase === 'offline');
    // The threshold plus a round or two for the probe and the write.
    expect(Date.now() - stoppedAt).toBeLessThan(
      (SETTINGS.offlineSeconds + 3 * SETTINGS.probeSeconds + 5) * 1000,
    );
    expect(offline.status?.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Unreachable' }),
        expect.objectContaining({ type: 'Schedulable', status: 'False', reason: 'Offline' }),
        expect.objectContaining({ type: 'Stalled', status: 'True', reason: 'Unreachable' }),
      ]),
    );
    expect(waitableCondition(offline, 'Ready')).toBe('False');

    // Meanwhile the master's catalog changes.
    const plan = (await listRecords<SFPlan>(master, SFPLAN, namespace))[0]!;
    await patchRecord(master, SFPLAN, namespace, plan.metadata.name!, {
      spec: { description: 'changed while away' },
    });

    await own.extra.start();
    // Answering again, it stays offline and unschedulable through the stabilization window.
    const stabilizing = await untilCluster(
      ownId,
      'answering again, still offline',
      (c) => c.status?.phase === 'offline' && Boolean(c.status.answeringSince),
    );
    expect(stabilizing.status?.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Reachable' }),
        expect.objectContaining({
          type: 'Schedulable',
          status: 'False',
          reason: 'Stabilizing',
          message: `the cluster answers again since ${stabilizing.status!.answeringSince}; it is scheduled onto once it has answered for 4 s`,
        }),
      ]),
    );
    const again = await untilCluster(ownId, 'running again', (c) => c.status?.phase === 'running');
    expect(waitableCondition(again, 'Ready')).toBe('True');
    const runningSince = again.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
    expect(again.status?.answeringSince).toBe(stabilizing.status?.answeringSince);
    expect(Date.parse(runningSince!) - Date.parse(again.status!.answeringSince!)).toBeGreaterThanOrEqual(
      SETTINGS.stabilizationSeconds! * 1000,
    );
    expect(again.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Stalled', status: 'False' }),
    );
    await eventually('the offline sister to catch up', async () => {
      const copy = await getRecord<SFPlan>(own.admin, SFPLAN, namespace, plan.metadata.name!);
      return copy?.spec.description === 'changed while away' ? true : undefined;
    });
  });
});

describe('the cluster directory', () => {
  test('a replaced kubeconfig Secret is used by the next call, without a restart', async () => {
    const first = await issueIdentity(own.admin, own.extra.cluster.kubeconfig, unique('first'));
    const second = await issueIdentity(own.admin, own.extra.cluster.kubeconfig, unique('second'));
    // Re-registering replaces the kubeconfig in the cluster's Secret.
    const replaceSecret = (kubeconfig: string) =>
      registerCluster(master, namespace, ownId, { text: kubeconfig }, { totalCapacity: DECLARED });
    const works = async () => (await directory.get(ownId)).core.listNamespace();

    await replaceSecret(first.kubeconfig);
    await works();
    await replaceSecret(second.kubeconfig);
    await first.revoke();
    const revokedAt = new Date().toISOString();
    // The old credentials really are refused.
    await eventually('the first identity to be refused', async () => {
      try {
        await clusterClientFromKubeconfig(ownId, first.kubeconfig).core.listNamespace();
        return undefined;
      } catch (err) {
        return (err as { code?: number }).code === 401 ? true : undefined;
      }
    });
    await expect(works()).resolves.toBeDefined();
    // The health round reaches the cluster with the new identity too.
    await untilCluster(ownId, 'probed with the new identity', (c) =>
      Boolean(
        c.status?.conditions?.some(
          (x) => x.type === 'Ready' && x.status === 'True' && (x.lastProbeTime ?? '') > revokedAt,
        ),
      ),
    );
    await second.revoke();
  });
});

describe('removing a cluster', () => {
  test('deleting an SFCluster that holds an instance is refused until the instance is gone; then it is no longer used', async () => {
    const instanceNamespace = unique('placed');
    await master.core.createNamespace({ body: { metadata: { name: instanceNamespace } } });
    const instance: KubeObject = {
      apiVersion: SFSERVICEINSTANCE.apiVersion,
      kind: SFSERVICEINSTANCE.kind,
      metadata: {
        name: 'placed',
        namespace: instanceNamespace,
        labels: { [LABELS.clusterId]: labelValue(ownId) },
      },
      spec: { serviceId: 'svc', planId: 'plan', clusterId: ownId },
    } as KubeObject;
    await master.custom.createNamespacedCustomObject({
      group: SFSERVICEINSTANCE.group,
      version: SFSERVICEINSTANCE.version,
      plural: SFSERVICEINSTANCE.plural,
      namespace: instanceNamespace,
      body: instance,
    });
    await untilCluster(ownId, 'counting the instance', (c) => c.status?.serviceInstanceCount === 1);

    await deleteRecord(master, SFCLUSTER, namespace, ownId);
    await untilCluster(ownId, 'terminated', (c) => c.status?.phase === 'terminated');
    // A few rounds later it is still there, held by the instance.
    await new Promise((r) => setTimeout(r, 3 * SETTINGS.probeSeconds * 1000));
    expect((await readCluster(ownId))?.metadata.finalizers).toContain(CLUSTER_FINALIZER);

    await deleteRecord(master, SFSERVICEINSTANCE, instanceNamespace, 'placed');
    await untilGone(`SFCluster ${ownId}`, async () => {
      if (!(await readCluster(ownId))) throw Object.assign(new Error('gone'), { code: 404 });
    });
    await expect(directory.get(ownId)).rejects.toThrow(/not registered/);
    await master.core.deleteNamespace({ name: instanceNamespace });
  });
});

describe('the worker', () => {
  test('starts the landscape health workflow when absent, and a second worker does not start another', async () => {
    const landscape = unique('landscape');
    await registerCluster(master, landscape, '1', environment().clusters[0]!.kubeconfigPath);
    const settings = await systemSettings({
      INTEROP_NAMESPACE: landscape,
      INTEROP_CLUSTER_PROBE_SECONDS: '1',
    });
    const workers = [await startProcess('worker', settings)];
    const handle = temporal.client.workflow.getHandle(clusterHealthWorkflowId(landscape));
    try {
      await eventually('the master of the landscape to run', async () => {
        const cluster = await getRecord<SFCluster>(master, SFCLUSTER, landscape, '1');
        return cluster?.status?.phase === 'running' ? cluster : undefined;
      });
      const { runId } = await handle.describe();
      workers.push(await startProcess('worker', settings));
      const after = await handle.describe();
      expect(after.status.name).toBe('RUNNING');
      expect(after.runId).toBe(runId);
    } finally {
      await handle.terminate('test over').catch(() => undefined);
      for (const worker of workers) await worker.stop();
      await patchRecord(master, SFCLUSTER, landscape, '1', { metadata: { finalizers: null } });
      await master.core.deleteNamespace({ name: landscape });
    }
  });
});

describe('the local clusters', () => {
  test("every apiserver the harness starts has room for a landscape's Services (a ServiceCIDR of 65,534 addresses, ready)", async () => {
    for (const cluster of [master, sister, own.admin]) {
      const cidrs = await cluster.kubeConfig.makeApiClient(NetworkingV1Api).listServiceCIDR();
      const ready = cidrs.items.filter((c) =>
        c.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True'),
      );
      const ranges = ready.flatMap((c) => c.spec?.cidrs ?? []);
      expect({ cluster: cluster.id, ranges }).toEqual({
        cluster: cluster.id,
        ranges: expect.arrayContaining([SERVICE_CLUSTER_IP_RANGE]) as unknown,
      });
      expect(Number(SERVICE_CLUSTER_IP_RANGE.split('/')[1])).toBeLessThanOrEqual(16);
    }
  });
});
