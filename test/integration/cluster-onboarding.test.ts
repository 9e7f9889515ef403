/**
 * Onboarding and offboarding a sister against the real servers: a fresh apiserver of the test's
 * own, WITHOUT our CRDs, is registered as an SFCluster on the master. While the identity the
 * master holds may not install CRDs there, its SFCluster says so and no scheduler chooses it;
 * once the identity may, the health round installs our CRDs there (Established), reports
 * CrdsInstalled and copies the catalog, and an instance provisioned through the OSB API is placed
 * there. Deleting the SFCluster while that instance is there is held by its finalizer, the status
 * saying how many instances must go first; once it is deprovisioned, the SFCluster goes and our
 * CRDs stay on the cluster.
 */
import { randomUUID } from 'node:crypto';
import { RbacAuthorizationV1Api, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { NativeConnection, Worker } from '@temporalio/worker';
import { installCatalog } from '../../dev/catalog.js';
import { crdFiles } from '../../dev/local/environment.js';
import { startExampleOperator, type ExampleOperator } from '../../examples/operator/operator.js';
import type { ExtraCluster } from '../../dev/local/kube-control-plane.js';
import { clusterActivities } from '../../src/activities/clusters.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { clusterDirectory } from '../../src/kube/cluster-directory.js';
import { kubeconfigSecretName, registerCluster } from '../../src/kube/cluster-registry.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { deleteRecord, getRecord, listRecords } from '../../src/kube/custom-objects.js';
import { isNotFound } from '../../src/kube/errors.js';
import { CLUSTER_FINALIZER, LABELS, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFPLAN,
  SFSERVICEINSTANCE,
  type ClusterCondition,
  type SFCluster,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { schedule } from '../../src/scheduling/registry.js';
import { clusterSnapshot } from '../../src/scheduling/snapshot.js';
import { clusterHealthWorkflowId, type ClusterHealthSettings } from '../../src/workflows/messages.js';
import { issueIdentity, removeRegistry, startOwnCluster, type Identity } from '../support/clusters.js';
import {
  builtWorkflows,
  clusters,
  environment,
  eventually,
  temporalClient,
  unique,
  untilNamespaceGone,
} from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const SETTINGS: ClusterHealthSettings = { probeSeconds: 1, offlineSeconds: 30 };
const OUR_CRDS = [
  'sfplans.osb.servicefabrik.io',
  'sfservicebindings.osb.servicefabrik.io',
  'sfserviceinstances.osb.servicefabrik.io',
  'sfservices.osb.servicefabrik.io',
];

/** The mustache plan of the example operator (examples/mustache). */
const SERVICE_ID = '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01';
const PLAN_ID = '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02';

const namespace = unique('onboard');
const freshId = unique('fresh');
const [master] = clusters() as [ClusterClient];
const directory = clusterDirectory(master, namespace);

let fresh: { extra: ExtraCluster; admin: ClusterClient };
let identity: Identity;
let worker: Worker;
let running: Promise<void>;
let temporal: Awaited<ReturnType<typeof temporalClient>>;
let connection: NativeConnection;
let system: SystemProcess | undefined;
let operator: ExampleOperator | undefined;
let osb: OsbClient;
/** The instance provisioned on the onboarded cluster. */
let instanceId: string;

const readCluster = () => getRecord<SFCluster>(master, SFCLUSTER, namespace, freshId);
const conditionOf = (cluster: SFCluster | undefined, type: string): ClusterCondition | undefined =>
  cluster?.status?.conditions?.find((c) => c.type === type);

/** Waits until the SFCluster satisfies `check`; returns it. */
const untilCluster = (what: string, check: (c: SFCluster) => boolean, timeoutMs = 60_000) =>
  eventually(
    `SFCluster ${freshId} ${what}`,
    async () => {
      const cluster = await readCluster();
      return cluster && check(cluster) ? cluster : undefined;
    },
    timeoutMs,
  );

/** Our CRDs on the fresh cluster, by name: whether each is Established; absent ones left out. */
async function ourCrdsThere(): Promise<Record<string, boolean>> {
  const found: Record<string, boolean> = {};
  for (const name of OUR_CRDS) {
    try {
      const crd = await fresh.admin.apiextensions.readCustomResourceDefinition({ name });
      found[name] = Boolean(
        (crd as V1CustomResourceDefinition).status?.conditions?.some(
          (c) => c.type === 'Established' && c.status === 'True',
        ),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return found;
}

beforeAll(async () => {
  fresh = await startOwnCluster(freshId, { crds: false });
  // What the master holds of the cluster: an identity that may read but not install CRDs.
  identity = await issueIdentity(fresh.admin, fresh.extra.cluster.kubeconfig, unique('onboarder'), 'view');
  await registerCluster(
    master,
    namespace,
    freshId,
    { text: identity.kubeconfig },
    { totalCapacity: { cpu: '4', memory: '8Gi' } },
  );
  await installCatalog(master, namespace, ['examples/mustache']);

  const env = environment();
  connection = await NativeConnection.connect({ address: env.temporal.address });
  temporal = await temporalClient();
  const taskQueue = unique('onboarding');
  worker = await Worker.create({
    connection,
    namespace: env.temporal.namespace,
    taskQueue,
    ...builtWorkflows(),
    activities: clusterActivities({ clusters: directory }),
  });
  running = worker.run();
  await temporal.client.workflow.start('clusterHealthWorkflow', {
    workflowId: clusterHealthWorkflowId(namespace),
    taskQueue,
    args: [SETTINGS],
  });
});

afterAll(async () => {
  await system?.stop();
  await operator?.stop();
  await temporal?.client.workflow
    .getHandle(clusterHealthWorkflowId(namespace))
    .terminate('test over')
    .catch(() => undefined);
  worker?.shutdown();
  await running;
  await connection?.close();
  await temporal?.close();
  await fresh?.extra.stop();
  await removeRegistry(master, namespace);
});

describe('onboarding a sister', () => {
  test('GIVEN an identity that may not install CRDs THEN the cluster runs, says so in CrdsInstalled, and is not scheduled onto', async () => {
    const cluster = await untilCluster(
      'saying its CRDs cannot be installed',
      (c) => conditionOf(c, 'CrdsInstalled')?.status === 'False',
    );
    expect(cluster.status?.phase).toBe('running');
    const crds = conditionOf(cluster, 'CrdsInstalled')!;
    expect(crds.reason).toBe('Forbidden');
    expect(crds.message).toMatch(/^the worker may not install our CRDs on this cluster \(.*forbidden/);
    expect(crds.message).toContain(
      'grant its identity get, create and patch on customresourcedefinitions.apiextensions.k8s.io',
    );
    expect(conditionOf(cluster, 'Schedulable')).toMatchObject({
      status: 'False',
      reason: 'CrdsNotInstalled',
      message: crds.message,
    });
    const decision = schedule({
      scheduler: 'round-robin',
      clusters: [clusterSnapshot(cluster)],
      request: { instanceId: 'i', planId: 'p' },
    });
    expect(decision.clusterId).toBeUndefined();
    expect(decision.summary).toBe(`no eligible cluster: ${freshId}: our CRDs are not installed`);
    expect(await ourCrdsThere()).toEqual({});
  });

  test('GIVEN the identity may install CRDs THEN they are Established there, CrdsInstalled is True and the catalog is copied', async () => {
    const rbac = fresh.admin.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `${identity.name}-crds` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: identity.name, namespace: 'kube-system' }],
      },
    });
    const cluster = await untilCluster(
      'with its CRDs installed',
      (c) => conditionOf(c, 'CrdsInstalled')?.status === 'True',
    );
    expect(conditionOf(cluster, 'CrdsInstalled')).toMatchObject({
      reason: 'Installed',
      message: expect.stringMatching(/^the CRDs sfplans\.osb\.servicefabrik\.io, .* are established/),
    });
    expect(await ourCrdsThere()).toEqual(Object.fromEntries(OUR_CRDS.map((name) => [name, true])));
    // The cluster registry is the master's: a sister does not get it.
    await expect(
      fresh.admin.apiextensions.readCustomResourceDefinition({
        name: 'sfclusters.resource.servicefabrik.io',
      }),
    ).rejects.toMatchObject({ code: 404 });
    const schedulable = await untilCluster(
      'schedulable',
      (c) => conditionOf(c, 'Schedulable')?.status === 'True',
    );
    expect(
      schedule({
        scheduler: 'round-robin',
        clusters: [clusterSnapshot(schedulable)],
        request: { instanceId: 'i', planId: 'p' },
      }).clusterId,
    ).toBe(freshId);
    const originals = (await listRecords<SFPlan>(master, SFPLAN, namespace))
      .map((p) => p.metadata.name)
      .sort();
    expect(originals.length).toBeGreaterThan(0);
    await eventually('the catalog copied to the onboarded cluster', async () => {
      const copies = await listRecords<SFPlan>(fresh.admin, SFPLAN, namespace, `${LABELS.replicaOf}=1`);
      const names = copies.map((p) => p.metadata.name).sort();
      return JSON.stringify(names) === JSON.stringify(originals) ? names : undefined;
    });
  });
});

describe('an instance on the onboarded sister', () => {
  test('GIVEN the onboarded cluster THEN an instance provisioned through the OSB API is placed there, its record copied there', async () => {
    // The example operator, with its own CRD, runs on the new cluster: that is the operator's business, not onboarding's.
    await installCrds(fresh.admin, readCrds(crdFiles().filter((file) => file.includes('examples/operator'))));
    operator = await startExampleOperator({ clusters: [fresh.admin], readyAfterMs: 200, resyncMs: 200 });
    system = await startProcess(
      'all',
      await systemSettings({ INTEROP_NAMESPACE: namespace, INTEROP_SCHEDULER: 'round-robin' }),
    );
    osb = osbClient(system.url);
    await eventually('the catalog served', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { id: string }[] | undefined;
      return services?.some((s) => s.id === SERVICE_ID) ? true : undefined;
    });

    instanceId = randomUUID();
    const accepted = await osb(
      'PUT',
      `/v2/service_instances/${instanceId}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID),
    );
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `/v2/service_instances/${instanceId}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    );
    expect(done.body.state).toBe('succeeded');
    const record = await getRecord<SFServiceInstance>(
      master,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    );
    expect(record?.spec.clusterId).toBe(freshId);
    // The record's copy on the sister, which our CRD makes possible there.
    const copy = await getRecord<SFServiceInstance>(
      fresh.admin,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    );
    expect(copy?.metadata.name).toBe(resourceName(instanceId));
  });
});

describe('offboarding a sister', () => {
  test('GIVEN the instance placed there WHEN its SFCluster is deleted THEN the finalizer holds it, saying so, until the instance is deprovisioned; its kubeconfig Secret goes, our CRDs stay', async () => {
    expect(instanceId).toBeDefined();
    await untilCluster('counting the instance', (c) => c.status?.serviceInstanceCount === 1);

    await deleteRecord(master, SFCLUSTER, namespace, freshId);
    const held = await untilCluster('terminated', (c) => c.status?.phase === 'terminated');
    const waiting =
      'the cluster is being removed, but 1 instance is still placed on it: it is drained off the cluster where its plan allows a move, else deprovision it; the SFCluster stays until none is left';
    expect(conditionOf(held, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Terminating',
      message: waiting,
    });
    expect(conditionOf(held, 'Schedulable')).toMatchObject({ status: 'False', message: waiting });
    // Rounds later it is still there, held by the instance.
    await new Promise((r) => setTimeout(r, 3 * SETTINGS.probeSeconds * 1000));
    expect((await readCluster())?.metadata.finalizers).toContain(CLUSTER_FINALIZER);

    // The instance there still works: its deprovision goes through the cluster being removed.
    const deleting = await osb(
      'DELETE',
      `/v2/service_instances/${instanceId}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const gone = await untilSettled(
      osb,
      `/v2/service_instances/${instanceId}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
    );
    expect(gone.body.state).toBe('succeeded');
    await untilNamespaceGone(fresh.admin, `sf-${instanceId}`);

    await eventually(`SFCluster ${freshId} gone`, async () => ((await readCluster()) ? undefined : true));
    await expect(directory.get(freshId)).rejects.toThrow(/not registered/);
    // Its kubeconfig Secret went with it: no other cluster names it.
    const secretGone = await master.core
      .readNamespacedSecret({ name: kubeconfigSecretName(freshId), namespace })
      .then(() => false, isNotFound);
    expect(secretGone).toBe(true);
    // Deleting a CRD deletes every object of its kind: offboarding leaves them.
    expect(await ourCrdsThere()).toEqual(Object.fromEntries(OUR_CRDS.map((name) => [name, true])));
  });
});
