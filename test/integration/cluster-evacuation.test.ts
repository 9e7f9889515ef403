/**
 * A sister lost for good, on the real servers: a landscape of its own (the master and an
 * apiserver of this test's own, its cluster health workflow running with evacuation on), the
 * resource-aware scheduler placing instances on the sister (more declared capacity). When the
 * sister's apiserver stops past the evacuation setting, the instance whose plan allows it is
 * rebuilt on the master, with its binding; the other waits. When the apiserver comes back, what it
 * holds of the rebuilt instance is removed, and nothing of it is applied there again.
 */
import { randomUUID } from 'node:crypto';
import { installCatalog } from '../../dev/catalog.js';
import type { ExtraCluster } from '../../dev/local/kube-control-plane.js';
import { startExampleOperator } from '../../examples/operator/operator.js';
import { drainWorkflowId } from '../../src/admin/contract.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { deleteRecord, getRecord, listRecords, patchRecord } from '../../src/kube/custom-objects.js';
import { LABELS, bindingSecretName, instanceWorkflowId, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type SFCluster,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { dataConfigMapName } from '../../examples/operator/operator.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import { removeRegistry, startOwnCluster, stopClusterHealth } from '../support/clusters.js';
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
  /** Its instances may be rebuilt elsewhere when their cluster is lost (anew: it restores nothing). */
  evacuable: 'c0ffee00-0000-4000-8000-00000000e001',
  /** Its instances wait for their cluster. */
  staying: 'c0ffee00-0000-4000-8000-00000000e002',
  /** The example plan, allowed a rebuild elsewhere: restored there from its last backup. */
  restoring: 'c0ffee00-0000-4000-8000-00000000e003',
} as const;
const OFFLINE_SECONDS = 3;
const EVACUATE_AFTER_SECONDS = 6;

describe('a sister lost past the evacuation setting', () => {
  const [master] = clusters() as [ClusterClient];
  const masterId = environment().clusters[0]!.id;
  const registry = unique('evac');
  const sisterId = unique('lost');
  let own: { extra: ExtraCluster; admin: ClusterClient };
  let landscape: SystemProcess;
  let settings: Awaited<ReturnType<typeof systemSettings>>;
  let operators: { stop(): Promise<void> }[] = [];
  let osb: OsbClient;

  beforeAll(async () => {
    own = await startOwnCluster(sisterId);
    await registerCluster(master, registry, masterId, environment().clusters[0]!.kubeconfigPath, {
      totalCapacity: { cpu: '2', memory: '8Gi' },
    });
    await registerCluster(
      master,
      registry,
      sisterId,
      { text: own.extra.cluster.kubeconfig },
      { totalCapacity: { cpu: '8', memory: '32Gi' } },
    );
    const installed = await installCatalog(master, registry, ['examples/postgresql']);
    const design = installed.find((o) => o.kind === 'SFPlan') as SFPlan;
    const plan = (id: string, name: string, extra: Partial<SFPlan['spec']>) =>
      applyPlanCopy(master, registry, design, id, name, extra);
    await plan(PLANS.evacuable, 'evacuable', { migrate: { evacuate: true } });
    await plan(PLANS.staying, 'staying', { migrate: {} });
    await plan(PLANS.restoring, 'restoring', { migrate: { ...design.spec.migrate, evacuate: true } });
    operators = [
      await startOperator(),
      // Its backups are kept off the sister, on the master, as a real service keeps them in an object store.
      await startExampleOperator({
        clusters: [own.admin],
        readyAfterMs: 500,
        resyncMs: 200,
        backupStore: { cluster: master, namespace: 'example-operator-backups' },
      }),
    ];
    settings = await systemSettings({
      INTEROP_NAMESPACE: registry,
      INTEROP_SCHEDULER: 'resource-aware',
      INTEROP_CLUSTER_PROBE_SECONDS: '1',
      INTEROP_CLUSTER_OFFLINE_SECONDS: String(OFFLINE_SECONDS),
      INTEROP_CLUSTER_STABILIZATION_SECONDS: '2',
      INTEROP_CLUSTER_EVACUATE_AFTER_SECONDS: String(EVACUATE_AFTER_SECONDS),
      INTEROP_ADMIN_USERNAME: ADMIN.username,
      INTEROP_ADMIN_PASSWORD: ADMIN.password,
    });
    landscape = await startProcess('all', settings);
    osb = osbClient(landscape.url);
    await eventually(
      'both clusters running, the plans in the catalog',
      async () => {
        const phases = (await listRecords<SFCluster>(master, SFCLUSTER, registry)).map(
          (c) => c.status?.phase,
        );
        const catalog = JSON.stringify((await osb('GET', '/v2/catalog')).body);
        return phases.length === 2 &&
          phases.every((p) => p === 'running') &&
          Object.values(PLANS).every((id) => catalog.includes(id))
          ? true
          : undefined;
      },
      60_000,
    );
  }, 180_000);

  afterAll(async () => {
    await stopClusterHealth(registry);
    await landscape?.stop();
    for (const operator of operators) await operator.stop();
    await own?.extra.stop();
    await removeRegistry(master, registry);
  });

  const instancePath = (instanceId: string) => `/v2/service_instances/${instanceId}`;
  const recordOf = (instanceId: string) =>
    getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, `sf-${instanceId}`, resourceName(instanceId));
  const postgresqlOn = (cluster: ClusterClient, instanceId: string) =>
    cluster.custom
      .getNamespacedCustomObject({
        group: 'acid.zalan.do',
        version: 'v1',
        plural: 'postgresqls',
        namespace: `sf-${instanceId}`,
        name: `sapcp-${instanceId}`,
      })
      .then(
        () => true,
        (err: { code?: number }) => {
          if (err.code === 404) return false;
          throw err;
        },
      );

  /**
   * The instance's record once its rebuild elsewhere (a move) has ended: recorded there, and its
   * run ended (the record is written just before the run ends).
   */
  async function rebuildOf(instanceId: string) {
    const record = await eventually(
      `the rebuild of ${instanceId}`,
      async () => {
        const read = await recordOf(instanceId);
        const last = read?.status?.lastAction;
        return last?.operation === 'move' && last.state !== 'in progress' ? read : undefined;
      },
      120_000,
    );
    const run = `/admin/instances/${instanceId}/actions/move/${record.status!.lastAction!.runId}`;
    await eventually(`the run of the rebuild of ${instanceId} to end`, async () => {
      const state = await callAdmin(landscape.url, 'GET', run);
      return state.status === 200 && state.body.state !== 'in progress' ? true : undefined;
    });
    return record;
  }

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
    expect((await recordOf(instanceId))?.spec.clusterId).toBe(sisterId);
    return instanceId;
  }

  async function deprovision(instanceId: string, planId: string) {
    const deleting = await osb(
      'DELETE',
      `${instancePath(instanceId)}?service_id=${SERVICE_ID}&plan_id=${planId}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const gone = await untilSettled(
      osb,
      `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
      90_000,
    );
    expect(gone.body.state).toBe('succeeded');
    for (const cluster of [master, own.admin]) await untilNamespaceGone(cluster, `sf-${instanceId}`, 60_000);
  }

  test('the opted-in instance is rebuilt elsewhere with its binding, the other waits, and the returning sister is cleaned', async () => {
    // GIVEN two instances on the sister, one of a plan that allows a rebuild elsewhere, with a binding
    const evacuable = await provision(PLANS.evacuable);
    const staying = await provision(PLANS.staying);
    // one of the example plan never backed up: it has nothing to be rebuilt from
    const unsaved = await provision(PLANS.restoring);
    // and one of the example plan, its rows backed up by an admin's run of its backup action
    const restoring = await provision(PLANS.restoring);
    const data = { namespace: `sf-${restoring}`, name: dataConfigMapName(`sapcp-${restoring}`) };
    await eventually('the data ConfigMap', () =>
      own.admin.core.readNamespacedConfigMap(data).then(
        () => true,
        () => undefined,
      ),
    );
    await own.admin.core.patchNamespacedConfigMap(
      { ...data, body: { data: { rows: 'kept' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const backup = await callAdmin(landscape.url, 'POST', `/admin/instances/${restoring}/actions/x-backup`, {
      body: {},
    });
    expect(backup.status).toBe(202);
    const backupRun = String(backup.body.runId);
    await eventually('the backup', async () => {
      const record = await recordOf(restoring);
      return record?.status?.lastAction?.state === 'succeeded' ? record : undefined;
    });
    expect((await recordOf(restoring))?.status?.lastBackup).toMatchObject({
      action: 'x-backup',
      id: backupRun,
      clusterId: sisterId,
    });
    // rows written after the backup are lost with the cluster
    await own.admin.core.patchNamespacedConfigMap(
      { ...data, body: { data: { later: 'lost' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const bindingId = randomUUID();
    const bound = await osb('PUT', `${instancePath(evacuable)}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.evacuable,
    });
    expect(bound.status).toBe(201);

    // WHEN the sister's apiserver stops for good
    const stoppedAt = Date.now();
    await own.extra.stop();

    // THEN the opted-in instance is rebuilt on the master, not before the evacuation setting
    const rebuilt = await rebuildOf(evacuable);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(EVACUATE_AFTER_SECONDS * 1000);
    expect(rebuilt.status?.lastAction).toMatchObject({ state: 'succeeded' });
    expect(rebuilt.status?.lastAction?.description).toBe(
      `Moved from cluster ${sisterId} to cluster ${masterId}, rebuilt anew; what is left on cluster ${sisterId} goes when it answers again`,
    );
    expect(rebuilt.spec.clusterId).toBe(masterId);
    expect(rebuilt.metadata.annotations?.['interoperator.servicefabrik.io/placement']).toMatch(
      new RegExp(`^moved from ${sisterId} to ${masterId} \\(evacuation of lost cluster ${sisterId}\\)`),
    );
    expect(await postgresqlOn(master, evacuable)).toBe(true);
    // its binding follows: the response carries credentials the master's operator made
    const response = await master.core.readNamespacedSecret({
      namespace: `sf-${evacuable}`,
      name: bindingSecretName(resourceName(bindingId)),
    });
    const credentials = (
      JSON.parse(Buffer.from(response.data?.response ?? '', 'base64').toString('utf8')) as {
        credentials: { username: string };
      }
    ).credentials;
    expect(credentials.username).toBe(bindingId.replace(/-/g, '_'));
    // the platform's operations work on it where it is now
    const updating = await osb('PATCH', `${instancePath(evacuable)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLANS.evacuable,
      parameters: { foo: 'after' },
    });
    expect(updating.status).toBe(202);
    expect(
      (
        await untilSettled(
          osb,
          `${instancePath(evacuable)}/last_operation?operation=${encodeURIComponent(String(updating.body.operation))}`,
        )
      ).body.state,
    ).toBe('succeeded');
    // the example plan's instance is rebuilt on the master from its last backup, with the rows it held then
    const restored = await rebuildOf(restoring);
    expect(restored.status?.lastAction).toMatchObject({
      state: 'succeeded',
      description: `Moved from cluster ${sisterId} to cluster ${masterId}, rebuilt from backup ${backupRun}; what is left on cluster ${sisterId} goes when it answers again`,
    });
    expect((await master.core.readNamespacedConfigMap(data)).data).toEqual({ rows: 'kept' });
    // the other instance waits for its cluster
    const waiting = await recordOf(staying);
    expect(waiting?.spec.clusterId).toBe(sisterId);
    expect(waiting?.status?.lastAction).toBeUndefined();
    const notBackedUp = await recordOf(unsaved);
    expect(notBackedUp?.spec.clusterId).toBe(sisterId);
    expect(notBackedUp?.status?.lastAction).toBeUndefined();
    // and no rebuild of it was even tried: no move of it in Temporal
    const raw = await temporalClient();
    try {
      const { executions } = await raw.client.workflowService.listWorkflowExecutions({
        namespace: environment().temporal.namespace,
        query: `WorkflowId = '${instanceWorkflowId(unsaved)}' AND OsbOperation = 'move'`,
      });
      expect(executions).toEqual([]);
    } finally {
      await raw.close();
    }

    // WHEN the sister's apiserver comes back
    await own.extra.start();
    // THEN what it held of the rebuilt instance is removed, and the waiting one is still there
    await untilNamespaceGone(own.admin, `sf-${evacuable}`, 90_000);
    expect(await postgresqlOn(own.admin, staying)).toBe(true);
    expect((await recordOf(evacuable))?.spec.clusterId).toBe(masterId);
    await eventually(
      'the sister running again',
      async () =>
        (await getRecord<SFCluster>(master, SFCLUSTER, registry, sisterId))?.status?.phase === 'running' ||
        undefined,
      60_000,
    );

    await untilNamespaceGone(own.admin, `sf-${restoring}`, 90_000);
    await Promise.all([
      deprovision(evacuable, PLANS.evacuable),
      deprovision(staying, PLANS.staying),
      deprovision(restoring, PLANS.restoring),
      deprovision(unsaved, PLANS.restoring),
    ]);
  }, 400_000);

  test("deleting the sister's SFCluster drains its instances to another cluster, then lets the deletion finish", async () => {
    // GIVEN an instance on the sister, of a plan that moves by provisioning anew (the master
    // cordoned meanwhile, so that it goes there)
    await eventually('the sister schedulable again', async () => {
      const sister = await getRecord<SFCluster>(master, SFCLUSTER, registry, sisterId);
      const schedulable = sister?.status?.conditions?.find((c) => c.type === 'Schedulable');
      return sister?.status?.phase === 'running' && schedulable?.status === 'True' ? true : undefined;
    });
    await patchRecord(master, SFCLUSTER, registry, masterId, { spec: { schedulingDisabled: true } });
    const instanceId = await provision(PLANS.staying).finally(() =>
      patchRecord(master, SFCLUSTER, registry, masterId, { spec: { schedulingDisabled: null } }),
    );

    // (its service object on the sister held by a finalizer, so that taking it off the sister lasts)
    const held = {
      group: 'acid.zalan.do',
      version: 'v1',
      plural: 'postgresqls',
      namespace: `sf-${instanceId}`,
      name: `sapcp-${instanceId}`,
    };
    const finalizers = (list: string[] | null) =>
      own.admin.custom.patchNamespacedCustomObject(
        { ...held, body: { metadata: { finalizers: list } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await finalizers(['test.servicefabrik.io/held']);

    // WHEN the sister's SFCluster is deleted
    await deleteRecord(master, SFCLUSTER, registry, sisterId);

    // THEN a drain started by the deletion moves the instance to the master; while the move is
    // still taking it off the sister, the record says so and the SFCluster stays
    const switched = await eventually('the instance switched to the master', async () => {
      const read = await recordOf(instanceId);
      return read?.spec.clusterId === masterId ? read : undefined;
    });
    expect(switched.metadata.labels?.[LABELS.leavingCluster]).toBe(sisterId);
    for (let round = 0; round < 5; round++) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await getRecord<SFCluster>(master, SFCLUSTER, registry, sisterId)).toBeDefined();
    }
    expect(await postgresqlOn(own.admin, instanceId)).toBe(true);
    await finalizers(null);
    await eventually(
      'the SFCluster gone',
      async () => ((await getRecord<SFCluster>(master, SFCLUSTER, registry, sisterId)) ? undefined : true),
      180_000,
    );
    // (the move records its end after it has left the sister, which lets the deletion finish)
    const moved = await eventually('the move recorded as ended', async () => {
      const read = await recordOf(instanceId);
      return read?.status?.lastAction?.state !== 'in progress' ? read : undefined;
    });
    expect(moved?.spec.clusterId).toBe(masterId);
    expect(moved?.status?.lastAction).toMatchObject({ operation: 'move', state: 'succeeded' });
    expect(moved?.metadata.labels?.[LABELS.leavingCluster]).toBeUndefined();
    expect(await postgresqlOn(master, instanceId)).toBe(true);
    await untilNamespaceGone(own.admin, `sf-${instanceId}`, 60_000);
    const raw = await temporalClient(settings.payloadKeys);
    try {
      const drain = await raw.client.workflow.getHandle(drainWorkflowId(registry, sisterId)).result();
      expect(drain).toMatchObject({
        state: 'done',
        done: 1,
        failed: 0,
        requestedBy: `the deletion of SFCluster ${sisterId}`,
      });
    } finally {
      await raw.close();
    }
    // and the platform's operations go on where it is now
    await deprovision(instanceId, PLANS.staying);
  }, 300_000);
});
