/**
 * A worker for one cluster alone, on the real servers: a landscape of its own whose second
 * sister is registered with a task queue and no kubeconfig, so the master holds no credentials of
 * it. A worker started with INTEROP_CLUSTER_ID and that sister's kubeconfig polls the queue; the
 * landscape's process (broker, workflows and the worker pool) reaches only the master. That
 * worker's identity on the master is the one the chart gives it: it reads the catalog and its own
 * SFCluster, writes that SFCluster, and writes Secrets in its drop box namespace, nothing else; it
 * is refused the instance and binding records. The operation workflows send the steps on the
 * sister to that queue, the history shows them there, and the instance's whole life through the
 * OSB API still works, credentials and all. The cluster health workflow probes the sister through
 * its worker too. That worker holds only the payload keys derived for its cluster (as
 * `interoperator payload-key derive` prints them): with them, the steps sent to it can be read
 * from the history, and nothing else of the workflow's.
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clusterClientFromFile } from '../../src/kube/clients.js';
import { dropBoxNamespace } from '../../src/resources/names.js';
import { installCatalog } from '../../dev/catalog.js';
import { kubeconfigSecretName, registerCluster } from '../../src/kube/cluster-registry.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import {
  deriveClusterKey,
  EncryptionCodec,
  formatPayloadKeys,
  parsePayloadKeys,
} from '../../src/temporal/codec.js';
import { bindingSecretName, instanceWorkflowId, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFPLAN,
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
  untilNamespaceGone,
} from '../support/env.js';
import {
  clusterWorkerGrants,
  issueNamespacedIdentity,
  scheduledSteps,
  removeRegistry,
  stopClusterHealth,
  type Identity,
} from '../support/clusters.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { sweepForSecrets } from '../support/secrets-sweep.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = 'b5a0c1de-0000-4000-8000-00000000c001';

/** Steps the workflows run on the instance's cluster, by name. */
const CLUSTER_STEPS = ['replicateInstance', 'applyTemplate', 'checkStatus', 'deleteResources'];

describe('a worker for one cluster alone', () => {
  const [master, , sister] = clusters();
  const env = environment();
  const registry = unique('cw');
  const clusterId = unique('own-worker');
  const clusterQueue = unique('cluster-queue');
  let landscape: SystemProcess;
  let clusterWorker: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  let identity: Identity;
  let identityKubeconfig: string;
  let settings: SystemSettings;
  /** The cluster worker's INTEROP_PAYLOAD_KEYS: the landscape's keys derived for its cluster. */
  let clusterKeys: string;

  beforeAll(async () => {
    await registerCluster(master!, registry, env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
    await registerCluster(
      master!,
      registry,
      clusterId,
      { taskQueue: clusterQueue },
      { labels: { worker: 'own' } },
    );
    const installed = await installCatalog(master!, registry, ['examples/postgresql']);
    const design = installed.find((o) => o.kind === 'SFPlan') as SFPlan;
    await applyObject(master!, {
      apiVersion: design.apiVersion,
      kind: design.kind,
      metadata: { name: PLAN_ID, namespace: registry },
      spec: {
        ...design.spec,
        id: PLAN_ID,
        name: 'on-own-worker',
        templates: [
          ...design.spec.templates,
          { action: 'clusterSelector', type: 'gotemplate', content: 'worker=own' },
        ],
      },
    } as KubeObject);
    await master!.core.createNamespace({
      body: { metadata: { name: dropBoxNamespace(registry, clusterId) } },
    });
    identity = await issueNamespacedIdentity(
      master!,
      readFileSync(env.clusters[0]!.kubeconfigPath, 'utf8'),
      unique('cluster-worker'),
      clusterWorkerGrants(registry, clusterId),
    );
    identityKubeconfig = path.join(mkdtempSync(path.join(tmpdir(), 'cluster-worker-')), 'master.kubeconfig');
    writeFileSync(identityKubeconfig, identity.kubeconfig);
    operator = await startOperator();
    settings = await systemSettings({
      INTEROP_NAMESPACE: registry,
      INTEROP_SCHEDULER: 'label-selector',
      INTEROP_CLUSTER_PROBE_SECONDS: '1',
      INTEROP_CLUSTER_OFFLINE_SECONDS: '10',
    });
    landscape = await startProcess('all', settings);
    clusterKeys = formatPayloadKeys(
      parsePayloadKeys(settings.payloadKeys).map((key) => deriveClusterKey(key, clusterId)),
    );
    clusterWorker = await startProcess('worker', {
      ...settings,
      payloadKeys: clusterKeys,
      extraEnv: {
        ...settings.extraEnv,
        INTEROP_CLUSTER_ID: clusterId,
        INTEROP_CLUSTER_KUBECONFIG: env.clusters[2]!.kubeconfigPath,
        // Its identity on the master: no records, no Secrets but its drop box's.
        INTEROP_MASTER_KUBECONFIG: identityKubeconfig,
      },
    });
    osb = osbClient(landscape.url);
    await eventually('the landscape catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      return services?.some((s) => s.plans.some((p) => p.id === PLAN_ID)) ? true : undefined;
    });
  }, 180_000);

  afterAll(async () => {
    await stopClusterHealth(registry);
    await clusterWorker?.stop();
    await landscape?.stop();
    await operator?.stop();
    await identity?.revoke();
    await master!.core
      .deleteNamespace({ name: dropBoxNamespace(registry, clusterId) })
      .catch(() => undefined);
    await removeRegistry(master!, registry);
    await sister!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  test('the master holds no credentials of the cluster, and the health workflow probes it through its worker', async () => {
    await expect(
      master!.core.readNamespacedSecret({ namespace: registry, name: kubeconfigSecretName(clusterId) }),
    ).rejects.toMatchObject({ code: 404 });
    const probed = await eventually(
      'the cluster probed by its own worker',
      async () => {
        const cluster = await getRecord<SFCluster>(master!, SFCLUSTER, registry, clusterId);
        return cluster?.status?.phase === 'running' && cluster.status.version ? cluster : undefined;
      },
      60_000,
    );
    expect(probed.status?.version).toMatch(/^v1\./);
    // the catalog reached the sister through the worker there
    await eventually('the plan copied to the sister', () =>
      getRecord<SFPlan>(sister!, SFPLAN, registry, PLAN_ID),
    );
  }, 90_000);

  test('its health probe counts the instance copies there of its own installation alone', async () => {
    // GIVEN on the cluster a copy of an instance of this installation and one of another installation
    const namespace = unique('copies');
    await sister!.core.createNamespace({ body: { metadata: { name: namespace } } });
    try {
      const copy = (owner: string): SFServiceInstance => {
        const id = randomUUID();
        return {
          apiVersion: 'osb.servicefabrik.io/v1alpha1',
          kind: 'SFServiceInstance',
          metadata: {
            name: id,
            namespace,
            labels: {
              'interoperator.servicefabrik.io/cluster-id': clusterId,
              OWNER_INTEROPERATOR_NAMESPACE: owner,
            },
          },
          spec: { instanceId: id, serviceId: SERVICE_ID, planId: PLAN_ID, clusterId },
        } as SFServiceInstance;
      };
      for (const owner of [registry, unique('other-installation')]) {
        await sister!.custom.createNamespacedCustomObject({
          group: 'osb.servicefabrik.io',
          version: 'v1alpha1',
          plural: 'sfserviceinstances',
          namespace,
          body: copy(owner),
        });
      }
      const count = async () =>
        (await getRecord<SFCluster>(master!, SFCLUSTER, registry, clusterId))?.status?.serviceInstanceCount;
      // WHEN its worker probes the cluster (every second)
      await eventually('the copies counted', async () => ((await count()) ?? 0) > 0 || undefined, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      // THEN only its own installation's copy counts
      expect(await count()).toBe(1);
    } finally {
      await sister!.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    }
  }, 90_000);

  test('an instance there: its steps run on the cluster’s queue, and provision, bind, unbind and deprovision work', async () => {
    const instanceId = randomUUID();
    const path = `/v2/service_instances/${instanceId}`;
    const accepted = await osb(
      'PUT',
      `${path}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
    );
    expect(accepted.status).toBe(202);
    const provisioned = await untilSettled(
      osb,
      `${path}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      90_000,
    );
    expect(provisioned.body).toMatchObject({
      state: 'succeeded',
      description: 'The instance is provisioned',
    });
    const namespace = `sf-${instanceId}`;
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      namespace,
      resourceName(instanceId),
    );
    expect(record?.spec.clusterId).toBe(clusterId);
    // the operator's resource is on the sister, owned by the record's copy there
    const pg = (await sister!.custom.getNamespacedCustomObject({
      group: 'acid.zalan.do',
      version: 'v1',
      plural: 'postgresqls',
      namespace,
      name: `sapcp-${instanceId}`,
    })) as { metadata: { ownerReferences?: { kind: string }[] } };
    expect(pg.metadata.ownerReferences?.map((o) => o.kind)).toEqual(['SFServiceInstance']);

    // THEN the history shows every step on the sister scheduled on its worker's queue, and only those
    const scheduled = await scheduledSteps(instanceWorkflowId(instanceId));
    const onCluster = scheduled.filter((s) => CLUSTER_STEPS.includes(s.step));
    expect(new Set(onCluster.map((s) => s.step))).toEqual(
      new Set(['replicateInstance', 'applyTemplate', 'checkStatus']),
    );
    for (const s of onCluster) expect(s.taskQueue).toBe(clusterQueue);

    // bind and unbind: the credentials come from the sister through its worker
    const bindingId = randomUUID();
    const bindingPath = `${path}/service_bindings/${bindingId}`;
    const bound = await osb('PUT', bindingPath, { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bound.status).toBe(201);
    expect(bound.body.credentials).toMatchObject({ username: bindingId.replace(/-/g, '_'), dbname: 'main' });
    // the response went from the worker's drop box to the binding's record: nothing is left there
    const dropBox = await master!.core.listNamespacedSecret({
      namespace: dropBoxNamespace(registry, clusterId),
    });
    expect(dropBox.items.map((s) => s.metadata?.name)).toEqual([]);

    // the worker's identity on the master may read none of the instance's and binding's records, nor their Secrets
    const asWorker = clusterClientFromFile('master', identityKubeconfig);
    const recordKinds = [
      { plural: 'sfserviceinstances', name: resourceName(instanceId) },
      { plural: 'sfservicebindings', name: resourceName(bindingId) },
    ];
    for (const { plural, name } of recordKinds) {
      const params = { group: 'osb.servicefabrik.io', version: 'v1alpha1', namespace, plural };
      await expect(asWorker.custom.getNamespacedCustomObject({ ...params, name })).rejects.toMatchObject({
        code: 403,
      });
      await expect(asWorker.custom.listNamespacedCustomObject(params)).rejects.toMatchObject({ code: 403 });
      await expect(
        asWorker.custom.listClusterCustomObject({ group: params.group, version: params.version, plural }),
      ).rejects.toMatchObject({ code: 403 });
    }
    for (const where of [namespace, registry, 'default']) {
      await expect(asWorker.core.listNamespacedSecret({ namespace: where })).rejects.toMatchObject({
        code: 403,
      });
    }
    await expect(
      asWorker.core.readNamespacedSecret({ namespace, name: bindingSecretName(resourceName(bindingId)) }),
    ).rejects.toMatchObject({ code: 403 });

    // the credentials never went through Temporal, though the records did, to the cluster's worker
    const { password } = bound.body.credentials as { password: string };
    const sweep = await sweepForSecrets({
      taskQueue: settings.taskQueue,
      payloadKeys: settings.payloadKeys,
      credentials: [['the binding’s password', password]],
    });
    expect(sweep.hits).toEqual([]);
    expect([...sweep.corpus.values()].some((text) => text.includes('fromMaster'))).toBe(true);

    // the cluster worker's keys read the steps sent to it, and nothing else of the workflow's history
    const readable = await readableWith(instanceWorkflowId(instanceId), clusterKeys, settings.payloadKeys);
    expect(readable.workflowInput).toBe(false);
    expect(readable.workflowInputWithMasterKeys).toBe(true);
    const clusterInputs = readable.stepInputs.filter((s) => s.taskQueue === clusterQueue);
    const landscapeInputs = readable.stepInputs.filter((s) => s.taskQueue !== clusterQueue);
    expect(clusterInputs.length).toBeGreaterThan(0);
    for (const s of clusterInputs)
      expect(s).toMatchObject({ readable: true, keyId: expect.stringMatching(`@${clusterId}$`) });
    expect(clusterInputs.some((s) => s.text.includes('fromMaster'))).toBe(true);
    // (the landscape's steps run in its worker first: queued, only when they fail there)
    for (const s of landscapeInputs) expect(s).toMatchObject({ readable: false });
    expect(readable.localStepResults.length).toBeGreaterThan(0);
    for (const r of readable.localStepResults) expect(r).toMatchObject({ readable: false });

    const unbound = await osb('DELETE', `${bindingPath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`);
    expect(unbound.status).toBe(200);

    // deprovision: nothing left on either cluster
    const deleting = await osb(
      'DELETE',
      `${path}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const gone = await untilSettled(
      osb,
      `${path}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
      90_000,
    );
    expect(gone.body.state).toBe('succeeded');
    for (const cluster of [master!, sister!]) await untilNamespaceGone(cluster, namespace, 60_000);
    const removal = (await scheduledSteps(instanceWorkflowId(instanceId))).filter((s) =>
      ['deleteResources', 'removeInstanceRecord'].includes(s.step),
    );
    expect(removal.map((s) => s.step).sort()).toEqual(['deleteResources', 'removeInstanceRecord']);
    for (const s of removal) expect(s.taskQueue).toBe(clusterQueue);
  }, 300_000);
});

/**
 * What of a workflow's history (its latest run) the keys `payloadKeys` decrypt: its input, the
 * inputs of its queued steps (with their task queues and the key that encrypted each), and the
 * results of the steps it ran in the worker (local activities, in its markers); its input with the
 * master keys `masterKeys`, for comparison.
 */
async function readableWith(workflowId: string, payloadKeys: string, masterKeys: string) {
  const codec = new EncryptionCodec(parsePayloadKeys(payloadKeys));
  const master = new EncryptionCodec(parsePayloadKeys(masterKeys));
  const read = async (payloads: Payload[] | null | undefined, decoder = codec) => {
    try {
      const decoded = await decoder.decode(payloads ?? []);
      return {
        readable: true,
        text: decoded.map((p) => JSON.stringify(defaultPayloadConverter.fromPayload(p))).join(),
      };
    } catch {
      return { readable: false, text: '' };
    }
  };
  const keyIdOf = (payloads: Payload[] | null | undefined) =>
    Buffer.from(payloads?.[0]?.metadata?.['encryption-key-id'] ?? []).toString();
  const temporal = await temporalClient();
  try {
    const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const started = events.find(
      (e) => e.workflowExecutionStartedEventAttributes,
    )!.workflowExecutionStartedEventAttributes!;
    const stepInputs = await Promise.all(
      events
        .map((e) => e.activityTaskScheduledEventAttributes)
        .filter((a): a is NonNullable<typeof a> => !!a)
        .map(async (a) => ({
          step: a.activityType?.name ?? '',
          taskQueue: a.taskQueue?.name ?? '',
          keyId: keyIdOf(a.input?.payloads as Payload[]),
          ...(await read(a.input?.payloads as Payload[])),
        })),
    );
    const localStepResults = await Promise.all(
      events
        .map((e) => e.markerRecordedEventAttributes)
        .filter((m): m is NonNullable<typeof m> => !!m?.details?.result?.payloads?.length)
        .map((m) => read(m.details!.result!.payloads as Payload[])),
    );
    return {
      workflowInput: (await read(started.input?.payloads as Payload[])).readable,
      workflowInputWithMasterKeys: (await read(started.input?.payloads as Payload[], master)).readable,
      stepInputs,
      localStepResults,
    };
  } finally {
    await temporal.close();
  }
}
