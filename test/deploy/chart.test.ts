/**
 * The chart installed by `helm install` on the deploy suite's real node, as an operator would
 * install it on any cluster: the image of the repository's Dockerfile (tools/build-image.sh, the
 * same build as image.test.ts), the brokers and the workers Ready behind their probes, the example
 * operator from its manifest (examples/operator/deploy) and the example catalog; then the OSB
 * lifecycle through the broker Service's ClusterIP from the host, with the credentials of the
 * chart's Secret, the records on the master, and `helm test`. Then the faults a cluster deals out:
 * a broker pod deleted under OSB traffic, and every worker pod killed during an operation.
 *
 * The pods reach the master apiserver through the `kubernetes` Service and the harness's Temporal
 * dev server on the node's bridge (test/deploy/global-setup.mjs starts it there); there is no
 * cluster DNS, which the chart's test hook does not need.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, AppsV1Api, type V1Pod } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { installCatalog } from '../../dev/catalog.js';
import { importImageArchive } from '../../dev/local/kube-node.js';
import { clusterClientFromFile } from '../../src/kube/clients.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { instanceWorkflowId } from '../../src/resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { conditionOf, waitableCondition } from '../support/conditions.js';
import { eventually, temporalClient, unique } from '../support/env.js';
import { CHART_DIR, findHelm, helmTool } from '../support/helm.js';
import { buildTestImage, IMAGE_BUILD_MS, imageTools, TEST_IMAGE } from '../support/image.js';
import { containerRssBytes, deployEnvironment, nodeTool } from '../support/node.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { describeWithTool, type Tool } from '../support/tools.js';

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

/** Seconds from a pod's start to its Ready condition. */
function secondsToReady(pod: V1Pod): number {
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
  const started = pod.status?.startTime;
  if (!ready?.lastTransitionTime || !started) return NaN;
  return (new Date(ready.lastTransitionTime).getTime() - new Date(started).getTime()) / 1000;
}

describeWithTool(allOf([nodeTool(), helmTool(), imageTools()]))('the chart on a real node', () => {
  const env = deployEnvironment();
  const node = env.node!;
  const master = clusterClientFromFile(env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
  const apps = master.kubeConfig.makeApiClient(AppsV1Api);
  const helm = findHelm()!;
  const namespace = unique('chart');
  const helmHome = path.join(env.workDir, 'helm');
  let osb: OsbClient;
  let brokerUrl: string;

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
    const build = buildTestImage();
    if (build.status !== 0) throw new Error(`tools/build-image.sh failed:\n${build.stderr}`);
    const started = Date.now();
    await importImageArchive(node.containerdAddress, build.dockerArchive);
    console.log(`[chart] image imported into the node in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    mkdirSync(helmHome, { recursive: true });
  }, IMAGE_BUILD_MS);

  afterAll(async () => {
    for (const name of [namespace, OPERATOR_NAMESPACE])
      await master.core.deleteNamespace({ name }).catch(() => undefined);
  });

  test('helm install: two brokers and two workers get Ready behind their probes, with the chart’s Secret', async () => {
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
      '--wait',
      '--timeout',
      '4m',
    );
    const installSeconds = (Date.now() - started) / 1000;

    // THEN the Deployments are ready on the node: their probes pass
    for (const [component, deployment] of [
      ['broker', `${FULLNAME}-broker`],
      ['worker', `${FULLNAME}-worker`],
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

    // the chart's CRDs are served (crds/: Helm installs those not there yet)
    const crds = await master.kubeConfig.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition();
    expect(crds.items.map((c) => c.metadata?.name)).toEqual(
      expect.arrayContaining([
        'sfservices.osb.servicefabrik.io',
        'sfplans.osb.servicefabrik.io',
        'sfserviceinstances.osb.servicefabrik.io',
        'sfservicebindings.osb.servicefabrik.io',
        'sfclusters.resource.servicefabrik.io',
      ]),
    );

    // the brokers read the chart's generated credentials, mounted from its Secret
    const secret = await master.core.readNamespacedSecret({ name: FULLNAME, namespace });
    const decode = (key: string) => Buffer.from(secret.data![key]!, 'base64').toString('utf8');
    expect(decode('username')).toBe('broker');
    expect(decode('password')).toMatch(/^[A-Za-z0-9]{32}$/);
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
    await installCatalog(master, namespace, ['examples/postgresql']);

    // THEN the operator gets ready, and the brokers serve the plan
    await eventually(
      'the example operator to be available',
      async () =>
        (await apps.readNamespacedDeployment({ name: 'example-operator', namespace: OPERATOR_NAMESPACE }))
          .status?.availableReplicas === 1 || undefined,
      120_000,
    );
    const catalog = await eventually('the plan in the catalog', async () => {
      const res = await osb('GET', '/v2/catalog');
      const services = (res.body.services ?? []) as { plans: unknown[] }[];
      return res.status === 200 && services.length === 1 && services[0]!.plans.length === 1 ? res : undefined;
    });
    expect(catalog.body).toMatchObject({
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
    await eventually(
      'two ready brokers again, without the deleted one',
      async () => {
        const pods = await podsOf('broker');
        const ready = pods.filter(
          (p) =>
            !p.metadata?.deletionTimestamp &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return ready.length === 2 && !pods.some((p) => p.metadata?.name === victim!.metadata!.name)
          ? true
          : undefined;
      },
      120_000,
    );
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

  test('helm test: the chart’s hook pod finds the broker Service healthy and its catalog behind the credentials', async () => {
    const out = await helmRun('test', RELEASE, '--namespace', namespace, '--logs', '--timeout', '2m');
    expect(out).toMatch(/Phase:\s+Succeeded/);
    expect(out).toContain('ok: GET /healthz answers 200');
    expect(out).toContain('ok: GET /v2/catalog without credentials answers 401');
    expect(out).toContain('ok: GET /v2/catalog with the credentials answers 200 with 1 service(s)');
    expect(out).not.toContain('FAILED');
  }, 180_000);
});
