/**
 * A sister whose apiserver stops in the middle of an operation, on the real servers: a landscape
 * of its own (the master and an apiserver of this test's own), its cluster health workflow
 * running, and the resource-aware scheduler, which prefers the sister (more declared capacity).
 * While the sister is down, the provision placed there waits and says why, the SFCluster turns
 * offline, and a new provision goes to the master; once the apiserver is back, the waiting
 * provision completes there, and both instances deprovision cleanly. Before that, while the
 * sister answers: a bind there, whose operator takes longer than the bind's step waits for its
 * word, is woken by the operator's change (signalled by the worker's watch), not by a poll.
 */
import { randomUUID } from 'node:crypto';
import { installCatalog } from '../../dev/catalog.js';
import type { ExtraCluster } from '../../dev/local/kube-control-plane.js';
import { startExampleOperator } from '../../examples/operator/operator.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { getRecord, listRecords } from '../../src/kube/custom-objects.js';
import { bindingWorkflowId, resourceName } from '../../src/resources/names.js';
import { OPERATOR_CHANGED_SIGNAL } from '../../src/workflows/messages.js';
import { WORD_IN_THE_STEP_MS } from '../../src/workflows/polling.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type SFCluster,
  type SFServiceInstance,
} from '../../src/resources/types.js';
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
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
/** The design document's plan: it requests 1 CPU and 512Mi. */
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
const OFFLINE_SECONDS = 4;
/** How long the sister's operator takes to make a change ready: longer than a bind's step waits. */
const SISTER_READY_AFTER_MS = 4_000;

describe('a sister that stops mid-operation', () => {
  const [master] = clusters() as [ClusterClient];
  const masterId = environment().clusters[0]!.id;
  const registry = unique('outage');
  const sisterId = unique('sister');
  let own: { extra: ExtraCluster; admin: ClusterClient };
  let landscape: SystemProcess;
  let settings: SystemSettings;
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
    await installCatalog(master, registry, ['examples/postgresql']);
    operators = [
      await startOperator(),
      // on the sister, the operator takes its time, so that the provision is still waiting for it when the sister stops
      await startExampleOperator({
        clusters: [own.admin],
        readyAfterMs: SISTER_READY_AFTER_MS,
        resyncMs: 200,
      }),
    ];
    settings = await systemSettings({
      INTEROP_NAMESPACE: registry,
      INTEROP_SCHEDULER: 'resource-aware',
      INTEROP_CLUSTER_PROBE_SECONDS: '1',
      INTEROP_CLUSTER_OFFLINE_SECONDS: String(OFFLINE_SECONDS),
    });
    landscape = await startProcess('all', settings);
    osb = osbClient(landscape.url);
    await eventually(
      'both clusters running',
      async () => {
        const phases = (await listRecords<SFCluster>(master, SFCLUSTER, registry)).map(
          (c) => c.status?.phase,
        );
        return phases.length === 2 && phases.every((p) => p === 'running') ? true : undefined;
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

  async function startProvision(): Promise<{ instanceId: string; lastOperation: string }> {
    const instanceId = randomUUID();
    const accepted = await osb(
      'PUT',
      `${instancePath(instanceId)}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
    );
    expect(accepted.status).toBe(202);
    const operation = encodeURIComponent(String(accepted.body.operation));
    return { instanceId, lastOperation: `${instancePath(instanceId)}/last_operation?operation=${operation}` };
  }

  const recordOf = (instanceId: string) =>
    getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, `sf-${instanceId}`, resourceName(instanceId));

  async function deprovision(instanceId: string) {
    const deleting = await osb(
      'DELETE',
      `${instancePath(instanceId)}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const operation = encodeURIComponent(String(deleting.body.operation));
    const gone = await untilSettled(
      osb,
      `${instancePath(instanceId)}/last_operation?operation=${operation}`,
      90_000,
    );
    expect(gone.body.state).toBe('succeeded');
    for (const cluster of [master, own.admin]) await untilNamespaceGone(cluster, `sf-${instanceId}`, 60_000);
  }

  test('a bind whose operator takes longer than its step waits is woken by the operator’s change', async () => {
    expect(SISTER_READY_AFTER_MS).toBeGreaterThan(WORD_IN_THE_STEP_MS);
    // GIVEN an instance on the sister, whose operator takes its time
    const { instanceId, lastOperation } = await startProvision();
    expect((await untilSettled(osb, lastOperation, 90_000)).body.state).toBe('succeeded');
    expect((await recordOf(instanceId))?.spec.clusterId).toBe(sisterId);

    // WHEN it is bound (synchronously)
    const bindingId = randomUUID();
    const bound = await osb('PUT', `${instancePath(instanceId)}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    });

    // THEN the bind completes with its credentials, woken by the operator's change (a signal from the
    // worker's watch), not left to a poll, once its step stopped waiting for the operator
    expect(bound.status).toBe(201);
    expect(bound.body).toMatchObject({ credentials: expect.any(Object) });
    const temporal = await temporalClient(settings.payloadKeys);
    try {
      const history = await temporal.client.workflow
        .getHandle(bindingWorkflowId(instanceId, bindingId))
        .fetchHistory();
      const signals = (history.events ?? []).filter(
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName === OPERATOR_CHANGED_SIGNAL,
      );
      expect(signals.length).toBeGreaterThanOrEqual(1);
    } finally {
      await temporal.close();
    }
  }, 180_000);

  test('the waiting provision says why, new ones go elsewhere, and it completes once the sister answers', async () => {
    // GIVEN a provision placed on the sister, its resource applied there, the operator not done yet
    const first = await startProvision();
    await eventually('the resource applied on the sister', async () => {
      const record = await recordOf(first.instanceId);
      return record?.spec.clusterId === sisterId && record.status?.resources?.length ? record : undefined;
    });

    // WHEN the sister's apiserver stops
    await own.extra.stop();

    // THEN the provision waits and says which cluster it waits for, and the sister turns offline
    const waiting = await eventually(
      'the provision to wait for the sister',
      async () => {
        const body = (await osb('GET', first.lastOperation)).body;
        return String(body.description).startsWith(`waiting for cluster ${sisterId}: `) ? body : undefined;
      },
      60_000,
    );
    expect(waiting.state).toBe('in progress');
    // The platform is not told where the cluster is.
    expect(waiting.description).not.toMatch(/\d+\.\d+\.\d+\.\d+|localhost|ECONNREFUSED|:\d{2,5}\b/);
    await eventually(
      'the sister offline',
      async () =>
        (await getRecord<SFCluster>(master, SFCLUSTER, registry, sisterId))?.status?.phase === 'offline' ||
        undefined,
      (OFFLINE_SECONDS + 20) * 1000,
    );

    // AND a new provision goes to the master, saying why not the sister
    const second = await startProvision();
    const placedElsewhere = await untilSettled(osb, second.lastOperation, 90_000);
    expect(placedElsewhere.body.state).toBe('succeeded');
    const secondRecord = await recordOf(second.instanceId);
    expect(secondRecord?.spec.clusterId).toBe(masterId);
    expect(secondRecord?.metadata.annotations?.['interoperator.servicefabrik.io/placement']).toContain(
      `${sisterId}: offline`,
    );
    expect((await osb('GET', first.lastOperation)).body.state).toBe('in progress');

    // WHEN the sister's apiserver is back, THEN the waiting provision completes there
    await own.extra.start();
    const done = await untilSettled(osb, first.lastOperation, 120_000);
    expect(done.body).toMatchObject({ state: 'succeeded', description: 'The instance is provisioned' });
    expect((await recordOf(first.instanceId))?.spec.clusterId).toBe(sisterId);
    await own.admin.custom.getNamespacedCustomObject({
      group: 'acid.zalan.do',
      version: 'v1',
      plural: 'postgresqls',
      namespace: `sf-${first.instanceId}`,
      name: `sapcp-${first.instanceId}`,
    });

    await Promise.all([deprovision(first.instanceId), deprovision(second.instanceId)]);
  }, 400_000);
});
