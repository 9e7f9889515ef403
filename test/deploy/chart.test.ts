/**
 * The chart installed by `helm install` on the deploy suite's real node, as an operator would
 * install it on any cluster: the image of the repository's Dockerfile (tools/build-image.sh, the
 * same build as image.test.ts), the brokers and the workers Ready behind their probes, the example
 * operator from its manifest (examples/operator/deploy) and the example catalog; then the OSB
 * lifecycle through the broker Service's ClusterIP from the host, with the credentials of the
 * chart's Secret, the records on the master, and `helm test`. Then the faults a cluster deals out:
 * a broker pod deleted under OSB traffic, every worker pod killed during an operation, the kubelet
 * killed (and started again, as its service manager would); and `helm upgrade` to a second build
 * under OSB traffic, with Worker Versioning (docs/operations.md, "Upgrading workers").
 *
 * The pods reach the master apiserver through the `kubernetes` Service and the harness's Temporal
 * dev server on the node's bridge (test/deploy/global-setup.mjs starts it there); there is no
 * cluster DNS, which the chart's test hook does not need.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, AppsV1Api, CoordinationV1Api, type V1Pod } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { installCatalog } from '../../dev/catalog.js';
import { importImageArchive } from '../../dev/local/kube-node.js';
import { rolloutWorkflowId } from '../../src/admin/contract.js';
import { clusterClientFromFile } from '../../src/kube/clients.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { instanceWorkflowId } from '../../src/resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { conditionOf, waitableCondition } from '../support/conditions.js';
import { callAdmin } from '../support/admin.js';
import { eventually, temporalClient, unique } from '../support/env.js';
import { CHART_DIR, findHelm, helmTool } from '../support/helm.js';
import {
  buildChangedImage,
  buildTestImage,
  IMAGE_BUILD_MS,
  imageTools,
  TEST_IMAGE,
  type ImageBuild,
} from '../support/image.js';
import { containerRssBytes, deployEnvironment, kubeletPid, nodeTool } from '../support/node.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { planHelpers } from '../support/plans.js';
import { describeWithTool, type Tool } from '../support/tools.js';
import {
  begun,
  buildOf,
  GATED,
  historyOf,
  openGate,
  withChangedProvision,
  workerVersion,
} from '../support/worker-versions.js';

const run = promisify(execFile);

/** The first of the tools that is missing, or all of them found. */
function allOf(tools: readonly Tool[]): Tool {
  const missing = tools.find((tool) => !tool.found);
  return (
    missing ?? {
      found: tools.map((t) => String(t.found)),
      name: 'node, helm and the image build',
      install: '',
    }
  );
}

const RELEASE = 'osb';
const FULLNAME = `${RELEASE}-interoperator`;
const OPERATOR_MANIFEST = path.join(process.cwd(), 'examples', 'operator', 'deploy', 'operator.yaml');
const OPERATOR_NAMESPACE = 'example-operator';
/** The example catalog's service and plan (examples/postgresql), whose schema requires `foo`. */
const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** The chart's CRDs (charts/interoperator/crds), which `helm install` installs where they are missing. */
const CHART_CRDS = [
  'sfservices.osb.servicefabrik.io',
  'sfplans.osb.servicefabrik.io',
  'sfserviceinstances.osb.servicefabrik.io',
  'sfservicebindings.osb.servicefabrik.io',
  'sfclusters.resource.servicefabrik.io',
];
/** The tag of the second build, which `helm upgrade` moves to. */
const NEXT_TAG = `${TEST_IMAGE.tag}-next`;

/** Seconds from a pod's start to its Ready condition. */
function secondsToReady(pod: V1Pod): number {
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
  const started = pod.status?.startTime;
  if (!ready?.lastTransitionTime || !started) return NaN;
  return (new Date(ready.lastTransitionTime).getTime() - new Date(started).getTime()) / 1000;
}

/** What steady OSB traffic saw: every request, those that failed, the instances it made. */
interface TrafficSeen {
  readonly requests: number;
  readonly failures: string[];
  readonly instances: string[];
  readonly lifecycles: number;
}

/**
 * Steady OSB traffic, as platforms send it, until stopped: catalogs, and instance lives (provision
 * of the example plan polled to its end, then the deprovision polled until gone) side by side.
 * Nothing is retried: every request that is not answered as OSB says (a refused connection, a
 * 5xx, an operation that fails) is a failure. `stop` lets the lives in flight end.
 */
function steadyTraffic(osb: OsbClient, lives = 2): { stop(): Promise<TrafficSeen> } {
  let stopping = false;
  let requests = 0;
  let lifecycles = 0;
  const failures: string[] = [];
  const instances: string[] = [];
  const call = async (method: string, pathAndQuery: string, expected: number[], body?: unknown) => {
    requests += 1;
    const res = await osb(method, pathAndQuery, body).catch((err: Error) => ({
      status: 0,
      body: { error: err.message } as Record<string, unknown>,
    }));
    if (!expected.includes(res.status))
      failures.push(`${method} ${pathAndQuery}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    return res;
  };
  const settle = async (path: string, gone: boolean) => {
    for (const deadline = Date.now() + 180_000; Date.now() < deadline;) {
      const res = await call('GET', path, gone ? [200, 410] : [200]);
      if (res.status === 410 || (res.status === 200 && res.body.state !== 'in progress')) {
        if (res.status === 200 && res.body.state !== 'succeeded')
          failures.push(`${path}: ${String(res.body.state)} ${String(res.body.description ?? '')}`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    failures.push(`${path}: still in progress after 180 s`);
  };
  const life = async () => {
    const instanceId = randomUUID();
    instances.push(instanceId);
    const instancePath = `/v2/service_instances/${instanceId}`;
    const operation = (res: { body: Record<string, unknown> }) =>
      encodeURIComponent(String(res.body.operation ?? ''));
    const accepted = await call(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      [202],
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
    );
    if (accepted.status !== 202) return;
    await settle(`${instancePath}/last_operation?operation=${operation(accepted)}`, false);
    const deleting = await call(
      'DELETE',
      `${instancePath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}&accepts_incomplete=true`,
      [202],
    );
    if (deleting.status !== 202) return;
    await settle(`${instancePath}/last_operation?operation=${operation(deleting)}`, true);
    lifecycles += 1;
  };
  const loops = [
    (async () => {
      while (!stopping) {
        await call('GET', '/v2/catalog', [200]);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
    ...Array.from({ length: lives }, async () => {
      while (!stopping) await life();
    }),
  ];
  let stopped: Promise<TrafficSeen> | undefined;
  return {
    stop() {
      stopping = true;
      stopped ??= Promise.all(loops).then(() => ({ requests, failures, instances, lifecycles }));
      return stopped;
    },
  };
}

describeWithTool(allOf([nodeTool(), helmTool(), imageTools()]))('the chart on a real node', () => {
  const env = deployEnvironment();
  const node = env.node!;
  const master = clusterClientFromFile(env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
  const apps = master.kubeConfig.makeApiClient(AppsV1Api);
  const leases = master.kubeConfig.makeApiClient(CoordinationV1Api);
  const helm = findHelm()!;
  const namespace = unique('chart');
  const helmHome = path.join(env.workDir, 'helm');
  let osb: OsbClient;
  let brokerUrl: string;
  let admin: { username: string; password: string };
  let build: ImageBuild;
  let design: SFPlan;
  /** The chart's payload keys, which a Temporal client needs to read the workflows' payloads. */
  let payloadKeys: string;

  /** helm with the master's kubeconfig and a home of its own; resolves with its output, or throws it. */
  const helmRun = async (...args: string[]) => {
    const result = await run(helm, [...args, '--kubeconfig', env.clusters[0]!.kubeconfigPath], {
      env: {
        ...process.env,
        HELM_CACHE_HOME: path.join(helmHome, 'cache'),
        HELM_CONFIG_HOME: path.join(helmHome, 'config'),
        HELM_DATA_HOME: path.join(helmHome, 'data'),
      },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`helm ${args[0]} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    });
    return result.stdout;
  };

  const podsOf = async (component: string): Promise<V1Pod[]> =>
    (
      await master.core.listNamespacedPod({
        namespace,
        labelSelector: `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=${component}`,
      })
    ).items;

  beforeAll(async () => {
    // GIVEN the image of the Dockerfile, in the node's containerd
    build = buildTestImage();
    if (build.status !== 0) throw new Error(`tools/build-image.sh failed:\n${build.stderr}`);
    const started = Date.now();
    await importImageArchive(node.containerdAddress, build.dockerArchive);
    console.log(`[chart] image imported into the node in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    mkdirSync(helmHome, { recursive: true });
  }, IMAGE_BUILD_MS);

  /** Waits until two brokers are Ready again and the deleted pod `victim` is gone. */
  const twoReadyBrokersWithout = (victim: string) =>
    eventually(
      'two ready brokers again, without the deleted one',
      async () => {
        const pods = await podsOf('broker');
        const ready = pods.filter(
          (p) =>
            !p.metadata?.deletionTimestamp &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return ready.length === 2 && !pods.some((p) => p.metadata?.name === victim) ? true : undefined;
      },
      120_000,
    );

  /** What a test left running (traffic), stopped after it whether it passed or not. */
  const stopAfterTest: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const stop of stopAfterTest.splice(0)) await stop();
  });

  afterAll(async () => {
    for (const name of [namespace, OPERATOR_NAMESPACE])
      await master.core.deleteNamespace({ name }).catch(() => undefined);
  });

  test('helm install: the CRDs installed, two brokers and two workers get Ready behind their probes, with the chart’s Secret', async () => {
    // GIVEN a cluster without the chart's CRDs (test/deploy/global-setup.mjs installs none)
    const crdApi = master.kubeConfig.makeApiClient(ApiextensionsV1Api);
    const before = (await crdApi.listCustomResourceDefinition()).items.map((c) => c.metadata!.name!);
    expect(CHART_CRDS.filter((name) => before.includes(name))).toEqual([]);

    // WHEN the chart is installed with the local image and the harness's Temporal
    const started = Date.now();
    await helmRun(
      'install',
      RELEASE,
      CHART_DIR,
      '--namespace',
      namespace,
      '--create-namespace',
      '--set',
      `image.repository=${TEST_IMAGE.repository}`,
      '--set',
      `image.tag=${TEST_IMAGE.tag}`,
      '--set',
      'image.pullPolicy=Never',
      '--set',
      `temporal.address=${env.temporal.address}`,
      '--set',
      `temporal.namespace=${env.temporal.namespace}`,
      '--set',
      `temporal.taskQueue=${namespace}`,
      // Each image a build of the workers' deployment: upgrades keep operations on their build.
      '--set',
      'worker.versioning.enabled=true',
      '--wait',
      '--timeout',
      '4m',
    );
    const installSeconds = (Date.now() - started) / 1000;

    // THEN the Deployments are ready on the node: their probes pass
    for (const [component, deployment] of [
      ['broker', `${FULLNAME}-broker`],
      ['worker', `${FULLNAME}-worker-${TEST_IMAGE.tag}`],
    ] as const) {
      const status = (await apps.readNamespacedDeployment({ name: deployment, namespace })).status;
      expect({ deployment, ready: status?.readyReplicas }).toEqual({ deployment, ready: 2 });
      const pods = await podsOf(component);
      for (const pod of pods) expect(pod.spec?.nodeName).toBe(node.name);
      const rss = pods.map((pod) =>
        containerRssBytes(
          node.containerdAddress,
          pod.status!.containerStatuses![0]!.containerID!.replace(/^.*:\/\//, ''),
        ),
      );
      console.log(
        `[chart] ${component}: start to Ready ${pods.map((p) => secondsToReady(p).toFixed(0)).join(', ')} s; RSS ${rss
          .map((b) => (b / 1024 / 1024).toFixed(0))
          .join(', ')} MiB`,
      );
    }
    console.log(`[chart] helm install --wait took ${installSeconds.toFixed(1)} s`);

    // the chart's CRDs are served, installed by Helm (from crds/) during the install
    const crds = (await crdApi.listCustomResourceDefinition()).items.filter((c) =>
      CHART_CRDS.includes(c.metadata!.name!),
    );
    expect(crds.map((c) => c.metadata!.name).sort()).toEqual([...CHART_CRDS].sort());
    for (const crd of crds) {
      expect(new Date(crd.metadata!.creationTimestamp!).getTime()).toBeGreaterThan(started - 1000);
      expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
    }

    // the brokers read the chart's generated credentials, mounted from its Secret
    const secret = await master.core.readNamespacedSecret({ name: FULLNAME, namespace });
    const decode = (key: string) => Buffer.from(secret.data![key]!, 'base64').toString('utf8');
    expect(decode('username')).toBe('broker');
    expect(decode('password')).toMatch(/^[A-Za-z0-9]{32}$/);
    admin = { username: decode('adminUsername'), password: decode('adminPassword') };
    payloadKeys = decode('payloadKeys');
    const service = await master.core.readNamespacedService({ name: `${FULLNAME}-broker`, namespace });
    brokerUrl = `http://${service.spec!.clusterIP}:${service.spec!.ports![0]!.port}`;
    osb = osbClient(brokerUrl, '2.17', { username: decode('username'), password: decode('password') });
    const refused = await osbClient(brokerUrl, '2.17', { username: 'broker', password: 'wrong' })(
      'GET',
      '/v2/catalog',
    );
    expect(refused.status).toBe(401);
  }, 300_000);

  test('the example operator runs from its manifest and the example catalog is served', async () => {
    // GIVEN the example operator's manifest, with the image the chart runs
    const objects = parseAllDocuments(readFileSync(OPERATOR_MANIFEST, 'utf8'))
      .map((doc) => doc.toJS() as KubeObject | null)
      .filter((obj): obj is KubeObject => !!obj?.kind);
    for (const obj of objects) {
      if (obj.kind === 'Deployment') {
        const spec = obj.spec as {
          template: { spec: { containers: { image: string; imagePullPolicy: string }[] } };
        };
        for (const container of spec.template.spec.containers) {
          container.image = `${TEST_IMAGE.repository}:${TEST_IMAGE.tag}`;
          container.imagePullPolicy = 'Never';
        }
      }
      await applyObject(master, obj);
    }
    // and the catalog in the chart's namespace
    const catalog = await installCatalog(master, namespace, ['examples/postgresql']);
    design = catalog.find((o) => o.kind === 'SFPlan') as SFPlan;

    // THEN the operator gets ready, and the brokers serve the plan
    await eventually(
      'the example operator to be available',
      async () =>
        (await apps.readNamespacedDeployment({ name: 'example-operator', namespace: OPERATOR_NAMESPACE }))
          .status?.availableReplicas === 1 || undefined,
      120_000,
    );
    const served = await eventually('the plan in the catalog', async () => {
      const res = await osb('GET', '/v2/catalog');
      const services = (res.body.services ?? []) as { plans: unknown[] }[];
      return res.status === 200 && services.length === 1 && services[0]!.plans.length === 1 ? res : undefined;
    });
    expect(served.body).toMatchObject({
      services: [
        {
          id: '24731fb8-7b84-5f57-914f-c3d55d793dd4',
          plans: [{ id: '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88' }],
        },
      ],
    });
  }, 180_000);

  test('provision, bind, unbind and deprovision through the broker Service; the records say so on the master', async () => {
    const serviceId = SERVICE_ID;
    const planId = PLAN_ID;
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const instanceNamespace = `sf-${instanceId}`;
    const started = Date.now();

    // provision: accepted, then succeeded, the record Ready
    const accepted = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(serviceId, planId, { foo: 'bar' }),
    );
    expect({ status: accepted.status, body: accepted.body }).toMatchObject({ status: 202 });
    const provisioned = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      120_000,
    );
    expect(provisioned.body).toMatchObject({ state: 'succeeded' });
    const record = await getRecord<SFServiceInstance>(
      master,
      SFSERVICEINSTANCE,
      instanceNamespace,
      instanceId,
    );
    expect(record?.status).toMatchObject({ state: 'succeeded', operation: 'provision' });
    expect(waitableCondition(record, 'Ready')).toBe('True');
    expect(conditionOf(record, 'Ready')).toMatchObject({ reason: 'Provisioned' });

    // bind: the credentials come from the operator's Secret through the status template
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const bound = await osb('PUT', bindingPath, { service_id: serviceId, plan_id: planId });
    expect(bound.status).toBe(201);
    expect(bound.body.credentials).toEqual(
      expect.objectContaining({ username: expect.any(String), password: expect.any(String) }),
    );
    const binding = await getRecord<SFServiceBinding>(master, SFSERVICEBINDING, instanceNamespace, bindingId);
    expect(binding?.status).toMatchObject({ state: 'succeeded' });

    // unbind
    const query = `service_id=${serviceId}&plan_id=${planId}`;
    expect((await osb('DELETE', `${bindingPath}?${query}`)).status).toBe(200);
    await eventually('the binding record to go', async () =>
      (await getRecord(master, SFSERVICEBINDING, instanceNamespace, bindingId)) ? undefined : true,
    );

    // deprovision: accepted, then gone
    const deleting = await osb('DELETE', `${instancePath}?${query}&accepts_incomplete=true`);
    expect(deleting.status).toBe(202);
    const deprovisioned = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
      120_000,
    );
    expect([410, 200]).toContain(deprovisioned.status);
    if (deprovisioned.status === 200) expect(deprovisioned.body).toMatchObject({ state: 'succeeded' });
    await eventually(
      'the instance record to go',
      async () =>
        (await getRecord(master, SFSERVICEINSTANCE, instanceNamespace, instanceId)) ? undefined : true,
      60_000,
    );
    expect((await osb('GET', instancePath)).status).toBe(404);
    console.log(
      `[chart] OSB lifecycle through the Service in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  }, 300_000);

  test('a broker pod deleted mid-traffic: the other answers, every request is answered or its retry is, nothing is lost', async () => {
    // GIVEN OSB traffic through the Service: catalogs, and a provision polled to its end
    const instanceId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const failures: string[] = [];
    let requests = 0;
    /** One request, retried once after a refused connection or a 5xx, as a platform retries. */
    const call = async (method: string, pathAndQuery: string, body?: unknown) => {
      for (let attempt = 1; ; attempt += 1) {
        requests += 1;
        const res = await osb(method, pathAndQuery, body).catch((err: Error) => ({
          status: 0,
          error: err.message,
        }));
        if (res.status > 0 && res.status < 500) return res as Awaited<ReturnType<OsbClient>>;
        const what = `${method} ${pathAndQuery}: ${res.status || ('error' in res ? res.error : '')}`;
        if (attempt === 2) throw new Error(`failed twice: ${what}`);
        failures.push(what);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    let stop = false;
    const unanswered: string[] = [];
    const catalogs = (async () => {
      while (!stop) {
        const res = await call('GET', '/v2/catalog');
        if (res.status !== 200) unanswered.push(`GET /v2/catalog: ${res.status}`);
      }
    })().catch((err: Error) => unanswered.push(err.message));
    // (stopped however the test ends: traffic left running would keep the test run alive)
    stopAfterTest.push(() => {
      stop = true;
      return catalogs;
    });
    const accepted = await call(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
    );
    expect({ status: accepted.status, body: accepted.body }).toMatchObject({ status: 202 });

    // WHEN one broker pod is deleted (the other keeps serving; the Deployment replaces it)
    const [victim] = await podsOf('broker');
    await master.core.deleteNamespacedPod({ name: victim!.metadata!.name!, namespace });
    const lastOperation = `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`;
    // polled as a platform polls: a request that fails twice fails the test (no retry beyond one)
    let settled = await call('GET', lastOperation);
    for (
      const deadline = Date.now() + 120_000;
      settled.body.state === 'in progress' && Date.now() < deadline;
    ) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      settled = await call('GET', lastOperation);
    }
    await twoReadyBrokersWithout(victim!.metadata!.name!);
    stop = true;
    await catalogs;
    expect(unanswered).toEqual([]);

    // THEN the provision succeeded, and every request was answered (at most after one retry)
    expect(settled.body).toMatchObject({ state: 'succeeded' });
    console.log(
      `[chart] broker deleted: ${requests} requests, ${failures.length} retried: ${failures.slice(0, 5).join('; ')}`,
    );
    expect(requests).toBeGreaterThan(10);
  }, 300_000);

  test('worker pods killed mid-operation: the operation completes once the Deployment has replaced them', async () => {
    const instanceId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    // GIVEN a provision under way
    const accepted = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
    );
    expect({ status: accepted.status, body: accepted.body }).toMatchObject({ status: 202 });
    // WHEN every worker pod is killed at once (no grace: nothing of theirs finishes it)
    const victims = (await podsOf('worker')).map((p) => p.metadata!.name!);
    await Promise.all(
      victims.map((name) => master.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 })),
    );
    const killed = Date.now();
    // THEN the new workers finish it
    const settled = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      180_000,
    );
    expect(settled.body).toMatchObject({ state: 'succeeded' });
    console.log(
      `[chart] workers killed: the provision settled ${((Date.now() - killed) / 1000).toFixed(1)} s later`,
    );
    const workers = (await podsOf('worker')).map((p) => p.metadata!.name!);
    expect(workers.filter((name) => victims.includes(name))).toEqual([]);
    // the workflow's last task was completed by a new worker (its identity names its pod)
    const temporal = await temporalClient();
    try {
      const history = await temporal.client.workflow.getHandle(instanceWorkflowId(instanceId)).fetchHistory();
      const identities = (history.events ?? []).flatMap((e) => {
        const identity = e.workflowTaskCompletedEventAttributes?.identity;
        return identity ? [identity] : [];
      });
      const last = identities.at(-1) ?? '';
      expect({ last, byNewWorker: workers.some((name) => last.endsWith(`@${name}`)) }).toMatchObject({
        byNewWorker: true,
      });
    } finally {
      await temporal.close();
    }
    const record = await getRecord<SFServiceInstance>(
      master,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      instanceId,
    );
    expect(waitableCondition(record, 'Ready')).toBe('True');
  }, 300_000);

  test('helm upgrade to a second build under OSB traffic: no request fails, a provision in flight ends on its build, a paused rollout goes on on the new one', async () => {
    const temporal = await temporalClient(payloadKeys);
    const callAsAdmin = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      callAdmin(brokerUrl, method, path, { auth: admin, ...(body !== undefined ? { body } : {}) });
    try {
      // GIVEN a second build of the image, whose provision workflow cannot replay the first's histories
      let started = Date.now();
      const archive = buildChangedImage(
        build,
        `${TEST_IMAGE.repository}:${NEXT_TAG}`,
        withChangedProvision,
        env.workDir,
      );
      await importImageArchive(node.containerdAddress, archive);
      rmSync(archive);
      console.log(
        `[chart] second build made and imported in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );

      // AND a provision in flight on the first build (its plan waits for a gate the test opens)
      const plans = planHelpers({ master, registry: namespace, osb: () => osb, design: () => design });
      const gatedPlan = await plans.planCopy(unique('gated'), { templates: GATED, schemas: {} });
      const inFlight = randomUUID();
      const inFlightAccepted = await osb(
        'PUT',
        `/v2/service_instances/${inFlight}?accepts_incomplete=true`,
        provisionBody(SERVICE_ID, gatedPlan),
      );
      expect(inFlightAccepted.status).toBe(202);
      const inFlightRun = await begun(temporal.client, inFlight);
      expect(await buildOf(inFlightRun)).toBe(TEST_IMAGE.tag);

      // AND the example plan's new revision rolling out, paused by an admin (its instances: those
      // the earlier tests left)
      const revision = await plans.changePlan(PLAN_ID, {
        context: { ...design.spec.context, maxConnections: 101 },
      });
      // (started as an admin starts it: again after a 409 while the workers record the change)
      const rolling = await eventually('the rollout started', async () => {
        const res = await callAsAdmin('POST', `/admin/plans/${PLAN_ID}/rollout`, {
          canary: 1,
          maxConcurrency: 1,
        });
        if (res.status === 409) return undefined;
        return res;
      });
      expect({ status: rolling.status, revision: rolling.body.revision }).toEqual({ status: 202, revision });
      const paused = await callAsAdmin('POST', `/admin/plans/${PLAN_ID}/rollout/pause`);
      expect({ status: paused.status, state: paused.body.state }).toEqual({ status: 200, state: 'paused' });
      const rollout = temporal.client.workflow.getHandle(rolloutWorkflowId(namespace, PLAN_ID));
      expect(await buildOf(rollout)).toBe(TEST_IMAGE.tag);

      // AND steady OSB traffic through the Service, nothing retried
      const traffic = steadyTraffic(osb);
      stopAfterTest.push(() => traffic.stop());

      // WHEN the release is upgraded to the second build
      started = Date.now();
      await helmRun(
        'upgrade',
        RELEASE,
        CHART_DIR,
        '--namespace',
        namespace,
        '--reuse-values',
        '--set',
        `image.tag=${NEXT_TAG}`,
        '--wait',
        '--timeout',
        '5m',
      );
      const upgradeSeconds = (Date.now() - started) / 1000;

      // THEN the second build is current, and the first one's workers stay for what is pinned to them
      const deploymentName = namespace;
      const status = await workerVersion(deploymentName, 'status');
      const builds = Object.fromEntries(
        status.stdout
          .split('\n')
          .slice(1)
          .filter(Boolean)
          .map((line) => line.trim().split(/\s+/)),
      );
      expect(builds).toEqual({ [TEST_IMAGE.tag]: 'draining', [NEXT_TAG]: 'current' });
      for (const tag of [TEST_IMAGE.tag, NEXT_TAG]) {
        const deployment = `${FULLNAME}-worker-${tag}`;
        const ready = (await apps.readNamespacedDeployment({ name: deployment, namespace })).status
          ?.readyReplicas;
        expect({ deployment, ready }).toEqual({ deployment, ready: 2 });
      }

      // AND the rollout, resumed, goes on on the second build to its end
      // (still paused after the upgrade: its run moved to the new build with its state)
      const beforeResume = (await callAsAdmin('GET', `/admin/plans/${PLAN_ID}/rollout`)).body;
      console.log(
        `[chart] the rollout when paused: ${JSON.stringify(paused.body)}; after the upgrade: ${JSON.stringify(beforeResume)}`,
      );
      expect(beforeResume.state).toBe('paused');
      const resumed = await callAsAdmin('POST', `/admin/plans/${PLAN_ID}/rollout/resume`);
      expect({ status: resumed.status, body: resumed.body }).toMatchObject({ status: 200 });
      const done = await eventually(
        'the rollout done',
        async () => {
          const progress = (await callAsAdmin('GET', `/admin/plans/${PLAN_ID}/rollout`)).body;
          return progress.state === 'done' ? progress : undefined;
        },
        180_000,
      );
      // (its total also counts instances the traffic deprovisioned meanwhile: it never shrinks)
      expect(done).toMatchObject({ failed: 0 });
      expect(done.done).toBeGreaterThan(0);
      expect(await buildOf(rollout)).toBe(NEXT_TAG);
      expect((await historyOf(rollout)).failedTasks).toEqual([]);

      // AND the provision in flight, its gate opened, ends on the first build; a new one runs on the second
      const next = randomUUID();
      const nextAccepted = await osb(
        'PUT',
        `/v2/service_instances/${next}?accepts_incomplete=true`,
        provisionBody(SERVICE_ID, gatedPlan),
      );
      expect(nextAccepted.status).toBe(202);
      await openGate(master, inFlight);
      await openGate(master, next);
      for (const [id, accepted] of [
        [inFlight, inFlightAccepted],
        [next, nextAccepted],
      ] as const) {
        const operation = encodeURIComponent(String(accepted.body.operation));
        const settled = await untilSettled(
          osb,
          `/v2/service_instances/${id}/last_operation?operation=${operation}`,
        );
        expect({ id, state: settled.body.state }).toEqual({ id, state: 'succeeded' });
      }
      const nextRun = temporal.client.workflow.getHandle(instanceWorkflowId(next));
      expect(await buildOf(inFlightRun)).toBe(TEST_IMAGE.tag);
      expect(await buildOf(nextRun)).toBe(NEXT_TAG);
      expect(await historyOf(inFlightRun)).toEqual({ changedTimers: 0, failedTasks: [] });
      expect(await historyOf(nextRun)).toEqual({ changedTimers: 1, failedTasks: [] });

      // AND the traffic saw no failed request, and each of its provisions ran once
      const seen = await traffic.stop();
      console.log(
        `[chart] helm upgrade --wait took ${upgradeSeconds.toFixed(1)} s; traffic: ${seen.requests} requests, ` +
          `${seen.failures.length} failed, ${seen.lifecycles} instance lives`,
      );
      expect(seen.failures).toEqual([]);
      expect(seen.lifecycles).toBeGreaterThan(0);
      // every instance of the plan is on the revision rolled out
      const instances = (await callAsAdmin('GET', `/admin/instances?plan=${PLAN_ID}&limit=100`)).body
        .items as { instanceId: string; revision?: string }[];
      expect(instances.length).toBeGreaterThan(0);
      for (const { instanceId, revision } of instances)
        expect({ instanceId, revision }).toEqual({ instanceId, revision: done.revision });
      for (const id of seen.instances) {
        const runs = await temporal.client.workflow.count(
          `WorkflowId = "${instanceWorkflowId(id)}" AND WorkflowType = "provisionWorkflow"`,
        );
        expect({ id, provisions: runs.count }).toEqual({ id, provisions: 1 });
      }

      // AND the first build drains: its workers may go, as docs/operations.md says
      const drained = await workerVersion(deploymentName, 'drained', TEST_IMAGE.tag, '--wait-seconds', '120');
      expect(drained).toMatchObject({ status: 0 });
      await apps.deleteNamespacedDeployment({ name: `${FULLNAME}-worker-${TEST_IMAGE.tag}`, namespace });
      await eventually(
        'the first build’s worker pods gone',
        async () =>
          (await podsOf('worker')).some(
            (p) => p.metadata?.labels?.['interoperator.servicefabrik.io/build-id'] === TEST_IMAGE.tag,
          )
            ? undefined
            : true,
        120_000,
      );
    } finally {
      await temporal.close();
    }
  }, 600_000);

  test('the kubelet restarted under OSB traffic: the pods keep running and answering, and the new kubelet takes over', async () => {
    const containers = async () =>
      [...(await podsOf('broker')), ...(await podsOf('worker'))].map((p) => ({
        pod: p.metadata!.name!,
        container: p.status?.containerStatuses?.[0]?.containerID,
        restarts: p.status?.containerStatuses?.[0]?.restartCount,
      }));
    const before = await containers();
    const leaseRenewed = async () =>
      (await leases.readNamespacedLease({ name: node.name, namespace: 'kube-node-lease' })).spec?.renewTime;
    const pid = kubeletPid(node);
    expect(pid).toBeDefined();
    const traffic = steadyTraffic(osb, 1);
    stopAfterTest.push(() => traffic.stop());
    // WHEN the kubelet crashes (its service manager starts it again)
    process.kill(pid!, 'SIGKILL');
    const killed = new Date();
    const restarted = await eventually(
      'a new kubelet',
      async () => {
        const now = kubeletPid(node);
        return now !== undefined && now !== pid ? now : undefined;
      },
      30_000,
    );

    // THEN the new kubelet renews the node's lease, and the node stays Ready
    await eventually(
      'the node lease renewed by the new kubelet',
      async () => {
        const renewed = await leaseRenewed();
        return renewed && new Date(renewed) > killed ? true : undefined;
      },
      60_000,
    );
    const ready = (await master.core.readNode({ name: node.name })).status?.conditions?.find(
      (c) => c.type === 'Ready',
    );
    expect(ready?.status).toBe('True');
    // AND it runs pods: a broker pod deleted is replaced, and gets Ready
    const [victim] = await podsOf('broker');
    await master.core.deleteNamespacedPod({ name: victim!.metadata!.name!, namespace });
    await twoReadyBrokersWithout(victim!.metadata!.name!);
    const seen = await traffic.stop();
    console.log(
      `[chart] kubelet ${pid} killed, ${restarted} took over; traffic: ${seen.requests} requests, ${seen.failures.length} failed, ${seen.lifecycles} instance lives`,
    );
    // AND the containers that ran on were neither restarted nor replaced, and no request failed
    const after = await containers();
    for (const pod of before.filter((p) => p.pod !== victim!.metadata!.name))
      expect(after.find((p) => p.pod === pod.pod)).toEqual(pod);
    expect(seen.failures).toEqual([]);
    expect(seen.lifecycles).toBeGreaterThan(0);
  }, 300_000);

  test('helm test: the chart’s hook pod finds the broker Service healthy and its catalog behind the credentials', async () => {
    const out = await helmRun('test', RELEASE, '--namespace', namespace, '--logs', '--timeout', '2m');
    expect(out).toMatch(/Phase:\s+Succeeded/);
    expect(out).toContain('ok: GET /healthz answers 200');
    expect(out).toContain('ok: GET /v2/catalog without credentials answers 401');
    expect(out).toContain('ok: GET /v2/catalog with the credentials answers 200 with 1 service(s)');
    expect(out).not.toContain('FAILED');
  }, 180_000);
});
