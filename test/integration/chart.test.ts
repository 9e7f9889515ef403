/**
 * The Helm chart against the real master apiserver: its CRDs installed, then every object that
 * `helm template` renders applied with a server-side dry run (`kubectl apply --dry-run=server`:
 * server-side apply, dryRun=All, fieldValidation=Strict), so the apiserver's own schemas and
 * validation judge each one and nothing is stored. An unknown field, a wrong type or an invalid value
 * in a template fails here. The ServiceMonitor is left out: its CRD belongs to the Prometheus
 * Operator, which the environment does not run.
 */
import { readdirSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterClient } from '../../src/kube/clients.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { CHART_DIR, findHelm, renderChart, type Manifest } from '../support/helm.js';
import { clusters, unique, untilNamespaceGone } from '../support/env.js';

const helm = findHelm();
const [master] = clusters() as [ClusterClient];
const namespace = unique('chart');
const instanceNamespace = unique('chart-instances');
/** The payload keys of the cluster worker of sister-1: derived for it (`interoperator payload-key derive`). */
const SISTER_1_KEYS = `k1@sister-1:${Buffer.alloc(32, 5).toString('base64')}`;

/** A response of the apiserver: status and parsed body. */
interface Answer {
  status: number;
  body: { kind?: string; message?: string; metadata?: { name?: string }; resources?: ApiResource[] };
}
interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

function request(kubeConfig: KubeConfig, method: string, urlPath: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const server = new URL(kubeConfig.getCurrentCluster()!.server);
    const options: https.RequestOptions = {
      method,
      hostname: server.hostname,
      port: server.port,
      path: urlPath,
      headers: {
        accept: 'application/json',
        ...(body ? { 'content-type': 'application/apply-patch+yaml' } : {}),
      },
    };
    kubeConfig
      .applyToHTTPSOptions(options)
      .then(() => {
        const req = https.request(options, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Answer['body'] }),
          );
        });
        req.on('error', reject);
        req.end(body);
      })
      .catch(reject);
  });
}

const discovered = new Map<string, ApiResource[]>();

/** The URL path of an object, from the apiserver's discovery of its apiVersion. */
async function objectPath(object: Manifest): Promise<string> {
  const base = object.apiVersion.includes('/') ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`;
  if (!discovered.has(base)) {
    const answer = await request(master.kubeConfig, 'GET', base);
    if (answer.status !== 200)
      throw new Error(`discovery of ${base}: ${answer.status} ${answer.body.message}`);
    discovered.set(base, answer.body.resources ?? []);
  }
  const resource = discovered.get(base)!.find((r) => r.kind === object.kind && !r.name.includes('/'));
  if (!resource) throw new Error(`the apiserver serves no ${object.kind} in ${object.apiVersion}`);
  const scope = resource.namespaced ? `/namespaces/${object.metadata.namespace}` : '';
  return `${base}${scope}/${resource.name}/${object.metadata.name}`;
}

/**
 * `kubectl apply --dry-run=server` of one object: the apiserver's answer (status 200 or 201 when
 * it accepts the object).
 */
async function dryRunApply(object: Manifest): Promise<Answer> {
  const query = 'dryRun=All&fieldValidation=Strict&force=true&fieldManager=interoperator-chart-test';
  return request(master.kubeConfig, 'PATCH', `${await objectPath(object)}?${query}`, JSON.stringify(object));
}

/** Every object the apiserver refused, with its message. */
async function refused(manifests: readonly Manifest[]): Promise<string[]> {
  const out: string[] = [];
  for (const object of manifests) {
    const answer = await dryRunApply(object);
    if (answer.status >= 300)
      out.push(`${object.kind}/${object.metadata.name}: ${answer.status} ${answer.body.message}`);
  }
  return out;
}

const render = (...set: string[]) => renderChart(helm!, { namespace, set });
const withoutServiceMonitor = (manifests: Manifest[]) => manifests.filter((m) => m.kind !== 'ServiceMonitor');

beforeAll(async () => {
  if (!helm) throw new Error('no helm binary: run `npm run build:binaries` (or set INTEROP_HELM)');
  const crdDir = path.join(CHART_DIR, 'crds');
  await installCrds(master, readCrds(readdirSync(crdDir).map((f) => path.join(crdDir, f))));
  for (const name of [namespace, instanceNamespace]) {
    await master.core.createNamespace({ body: { metadata: { name } } });
  }
});

afterAll(async () => {
  for (const name of [namespace, instanceNamespace]) {
    await master.core.deleteNamespace({ name }).catch(() => undefined);
    await untilNamespaceGone(master, name).catch(() => undefined);
  }
});

describe('the chart, applied to the master apiserver with a server-side dry run', () => {
  test('GIVEN the default values THEN the apiserver accepts every object', async () => {
    const manifests = render();
    expect(manifests.map((m) => m.kind)).toEqual(expect.arrayContaining(['Deployment', 'ClusterRole']));
    expect(await refused(manifests)).toEqual([]);
  });

  test('GIVEN every option on THEN the apiserver accepts every object', async () => {
    const manifests = render(
      'codec.enabled=true',
      'codec.allowedOrigins={https://temporal.example}',
      'metrics.tokenSecret.name=metrics',
      'metrics.serviceMonitor.enabled=true',
      'dashboards.enabled=true',
      'dashboards.annotations.grafana_folder=Inter-operator',
      'tracing.otlpEndpoint=http://collector:4318',
      'broker.autoscaling.enabled=true',
      'worker.autoscaling.enabled=true',
      'clusterWorker.enabled=true',
      'clusterWorker.clusterId=sister-1',
      'clusterWorker.masterKubeconfigSecret=master-kubeconfig',
      `clusterWorker.payloadKeys=${SISTER_1_KEYS}`,
      'rbac.operatorApiGroups={kubedb.com}',
    );
    const kinds = new Set(manifests.map((m) => m.kind));
    for (const kind of ['HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ServiceMonitor', 'ConfigMap']) {
      expect(kinds).toContain(kind);
    }
    expect(await refused(withoutServiceMonitor(manifests))).toEqual([]);
  });

  test('GIVEN namespaced RBAC THEN the apiserver accepts the Roles in both namespaces', async () => {
    const manifests = render('rbac.clusterWide=false', `settings.instanceNamespace=${instanceNamespace}`);
    expect(manifests.filter((m) => m.kind === 'Role').map((m) => m.metadata.namespace)).toEqual([
      namespace,
      instanceNamespace,
    ]);
    expect(await refused(manifests)).toEqual([]);
  });

  test('GIVEN only a cluster worker THEN the apiserver accepts every object', async () => {
    const manifests = render(
      'broker.enabled=false',
      'worker.enabled=false',
      'clusterWorker.enabled=true',
      'clusterWorker.clusterId=sister-1',
      'clusterWorker.masterKubeconfigSecret=master-kubeconfig',
      `clusterWorker.payloadKeys=${SISTER_1_KEYS}`,
    );
    expect(await refused(manifests)).toEqual([]);
  });

  test('GIVEN a template with an unknown field or an invalid value THEN the dry run refuses it', async () => {
    const worker = render().find((m) => m.kind === 'Deployment' && m.metadata.name.endsWith('-worker'))!;
    const pod = () => {
      const copy = structuredClone(worker);
      return { copy, spec: (copy.spec as { template: { spec: Record<string, unknown> } }).template.spec };
    };
    const misspelt = pod();
    const container = (misspelt.spec.containers as Record<string, unknown>[])[0]!;
    container.readinessprobe = container.readinessProbe;
    const invalid = pod();
    (invalid.spec.topologySpreadConstraints as Record<string, unknown>[])[0]!.whenUnsatisfiable = 'Sometimes';

    const [unknownField, invalidValue] = [await dryRunApply(misspelt.copy), await dryRunApply(invalid.copy)];
    // Server-side apply holds every field to the schema (the apiserver answers 500 for it).
    expect(unknownField.status).toBeGreaterThanOrEqual(400);
    expect(unknownField.body.message).toMatch(/readinessprobe: field not declared in schema/);
    expect([invalidValue.status, invalidValue.body.message]).toEqual([
      422,
      expect.stringContaining('whenUnsatisfiable'),
    ]);
    // The unchanged object is accepted, and nothing was stored.
    expect((await dryRunApply(worker)).status).toBeLessThan(300);
    await expect(
      master.objects.read({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: worker.metadata.name, namespace },
      }),
    ).rejects.toMatchObject({ code: 404 });
  });
});
