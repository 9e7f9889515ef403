/**
 * The Helm chart (charts/interoperator): its files parse, its templates use only values that exist,
 * it sets exactly the environment variables the processes read, and, when a helm binary is at hand
 * (INTEROP_HELM, or ~/.cache/interoperator/bin/helm-<version>/helm), it lints and renders what the
 * deployment needs. Build helm with:
 *   GOFLAGS=-trimpath CGO_ENABLED=0 GOBIN=$HOME/.cache/interoperator/bin/helm-v3.22.0 \
 *     go install helm.sh/helm/v3/cmd/helm@v3.22.0
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { BROKER_NODE_FLAGS } from '../../../src/config.js';

const root = process.cwd();
const chartDir = path.join(root, 'charts', 'interoperator');
const templatesDir = path.join(chartDir, 'templates');
const crdDir = path.join(chartDir, 'crds');

const readYaml = (file: string) => parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
const templates = () =>
  readdirSync(templatesDir).map((f) => ({ file: f, text: readFileSync(path.join(templatesDir, f), 'utf8') }));

/** The settings the brief names, which the chart must set (src/config.ts reads them). */
const REQUIRED_ENV = [
  'INTEROP_BROKER_USERNAME',
  'INTEROP_BROKER_PASSWORD',
  'INTEROP_HOST',
  'INTEROP_PORT',
  'INTEROP_TEMPORAL_ADDRESS',
  'INTEROP_TEMPORAL_NAMESPACE',
  'INTEROP_TASK_QUEUE',
  'INTEROP_NAMESPACE',
  'INTEROP_INSTANCE_NAMESPACE',
  'INTEROP_LOG_LEVEL',
  'INTEROP_PAYLOAD_KEYS',
];

/** Every INTEROP_* name the processes read. */
function envNamesReadBySource(): Set<string> {
  const text = ['src/config.ts', 'src/main.ts']
    .map((f) => readFileSync(path.join(root, f), 'utf8'))
    .join('\n');
  return new Set(text.match(/INTEROP_[A-Z_]+/g) ?? []);
}

function hasPath(values: unknown, keys: string[]): boolean {
  let node = values;
  for (const key of keys) {
    if (typeof node !== 'object' || node === null || !(key in node)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return true;
}

describe('the chart files', () => {
  test('Chart.yaml is a v2 chart interoperator 0.1.0', () => {
    expect(readYaml(path.join(chartDir, 'Chart.yaml'))).toMatchObject({
      apiVersion: 'v2',
      name: 'interoperator',
      version: '0.1.0',
      appVersion: '0.1.0',
    });
  });

  test('values.yaml parses, with 2 broker and 2 worker replicas and a non-root, read-only container', () => {
    const values = readYaml(path.join(chartDir, 'values.yaml'));
    expect(values).toMatchObject({
      broker: { replicas: 2, service: { port: 8080 } },
      worker: { replicas: 2, autoscaling: { enabled: false } },
      settings: { host: '0.0.0.0', port: 8080, namespace: '', instanceNamespace: '' },
      temporal: { namespace: 'default', taskQueue: 'interoperator' },
      rbac: { clusterWide: true, operatorApiGroups: ['acid.zalan.do'] },
      podSecurityContext: { runAsNonRoot: true },
      securityContext: { readOnlyRootFilesystem: true },
    });
  });

  test('every CRD in crds/ parses and serves v1alpha1 with a schema', () => {
    const files = existsSync(crdDir) ? readdirSync(crdDir).filter((f) => /\.ya?ml$/.test(f)) : [];
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const docs = parseAllDocuments(readFileSync(path.join(crdDir, file), 'utf8')).map((d) => {
        expect(d.errors).toEqual([]);
        return d.toJS() as { kind: string; spec: { versions: { name: string; schema?: unknown }[] } };
      });
      for (const crd of docs.filter(Boolean)) {
        expect(crd.kind).toBe('CustomResourceDefinition');
        expect(crd.spec.versions.find((v) => v.name === 'v1alpha1')?.schema).toBeDefined();
      }
    }
  });

  test('templates reference only values that exist in values.yaml', () => {
    const values = readYaml(path.join(chartDir, 'values.yaml'));
    const missing = templates().flatMap(({ file, text }) =>
      [...text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)]
        .map((m) => m[1]!.slice(1))
        .filter((p) => !hasPath(values, p.split('.')))
        .map((p) => `${file}: .Values.${p}`),
    );
    expect(missing).toEqual([]);
  });

  test('the templates set the settings the processes read, and no name they do not read', () => {
    const text = templates()
      .map((t) => t.text)
      .join('\n');
    const used = new Set(text.match(/INTEROP_[A-Z_]+/g) ?? []);
    expect([...REQUIRED_ENV].filter((name) => !used.has(name))).toEqual([]);
    const read = envNamesReadBySource();
    expect([...used].filter((name) => !read.has(name))).toEqual([]);
  });
});

/** A helm binary: INTEROP_HELM, or the newest one built into the cache. */
function findHelm(): string | undefined {
  if (process.env.INTEROP_HELM) return process.env.INTEROP_HELM;
  const bin = path.join(
    process.env.INTEROP_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'interoperator'),
    'bin',
  );
  if (!existsSync(bin)) return undefined;
  return readdirSync(bin)
    .filter((d) => d.startsWith('helm-'))
    .sort()
    .reverse()
    .map((d) => path.join(bin, d, 'helm'))
    .find((f) => existsSync(f));
}

const helm = findHelm();
if (!helm)
  console.log('no helm binary (INTEROP_HELM or ~/.cache/interoperator/bin/helm-*/helm): helm checks skipped');
const withHelm = helm ? describe : describe.skip;

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  rules?: unknown[];
}
interface Container {
  name: string;
  command: string[];
  env: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }[];
  envFrom: { configMapRef: { name: string } }[];
  securityContext: Record<string, unknown>;
  readinessProbe?: { httpGet: { path: string } };
  livenessProbe?: { httpGet: { path: string } };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
}

function render(...set: string[]): Manifest[] {
  const out = execFileSync(
    helm!,
    ['template', 'r', chartDir, '--namespace', 'interop', ...set.flatMap((s) => ['--set', s])],
    { encoding: 'utf8' },
  );
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

const find = (manifests: Manifest[], kind: string, name: string) => {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found)
    throw new Error(
      `no ${kind} ${name} in ${manifests.map((m) => `${m.kind}/${m.metadata.name}`).join(', ')}`,
    );
  return found;
};
const podSpec = (d: Manifest) =>
  (d.spec as { template: { spec: { containers: Container[]; securityContext: Record<string, unknown> } } })
    .template.spec;

withHelm('the chart rendered by helm', () => {
  test('helm lint --strict passes', () => {
    const result = spawnSync(helm!, ['lint', '--strict', chartDir], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toContain('0 chart(s) failed');
    expect(result.status).toBe(0);
  });

  test('GIVEN the defaults THEN two brokers and two workers run node dist/src/main.js, non-root and read-only', () => {
    const manifests = render();
    const broker = find(manifests, 'Deployment', 'r-interoperator-broker');
    const worker = find(manifests, 'Deployment', 'r-interoperator-worker');
    expect(broker.spec?.replicas).toBe(2);
    expect(worker.spec?.replicas).toBe(2);
    for (const [deployment, role] of [
      [broker, 'broker'],
      [worker, 'worker'],
    ] as const) {
      const pod = podSpec(deployment);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true });
      const container = pod.containers[0]!;
      const flags = role === 'broker' ? BROKER_NODE_FLAGS : [];
      expect(container.command).toEqual(['node', ...flags, 'dist/src/main.js', role]);
      expect(container.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
      });
      expect(container.resources.requests).toBeDefined();
      expect(container.resources.limits).toBeDefined();
      expect(container.envFrom).toEqual([{ configMapRef: { name: 'r-interoperator' } }]);
    }
    const brokerContainer = podSpec(broker).containers[0]!;
    expect(brokerContainer.readinessProbe?.httpGet.path).toBe('/healthz');
    expect(brokerContainer.livenessProbe?.httpGet.path).toBe('/healthz');
    // Time to drain (5 s), then for a synchronous request in flight (60 s), then a margin.
    expect(
      (podSpec(broker) as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds,
    ).toBe(75);
    expect(brokerContainer.env.map((e) => [e.name, e.valueFrom?.secretKeyRef])).toEqual([
      ['INTEROP_BROKER_USERNAME', { name: 'r-interoperator', key: 'username' }],
      ['INTEROP_BROKER_PASSWORD', { name: 'r-interoperator', key: 'password' }],
      ['INTEROP_ADMIN_USERNAME', { name: 'r-interoperator', key: 'adminUsername', optional: true }],
      ['INTEROP_ADMIN_PASSWORD', { name: 'r-interoperator', key: 'adminPassword', optional: true }],
      ['INTEROP_PAYLOAD_KEYS', { name: 'r-interoperator', key: 'payloadKeys' }],
    ]);

    expect(find(manifests, 'ConfigMap', 'r-interoperator').data).toEqual({
      INTEROP_HOST: '0.0.0.0',
      INTEROP_PORT: '8080',
      INTEROP_TEMPORAL_ADDRESS: 'temporal-frontend:7233',
      INTEROP_TEMPORAL_NAMESPACE: 'default',
      INTEROP_TASK_QUEUE: 'interoperator',
      INTEROP_NAMESPACE: 'interop',
      INTEROP_INSTANCE_NAMESPACE: '',
      INTEROP_LOG_LEVEL: 'info',
      INTEROP_SYNC_TIMEOUT_SECONDS: '60',
      INTEROP_OPERATION_TIMEOUT_SECONDS: '3600',
      INTEROP_MAX_BODY_BYTES: '1048576',
      INTEROP_KEEP_ALIVE_SECONDS: '95',
      INTEROP_SHUTDOWN_DELAY_SECONDS: '5',
      INTEROP_WORKER_OPERATIONS: '100',
      INTEROP_WORKER_STEPS: '100',
      INTEROP_MASTER_CLUSTER_ID: '1',
      INTEROP_CLUSTER_PROBE_SECONDS: '30',
      INTEROP_CLUSTER_OFFLINE_SECONDS: '120',
      INTEROP_SCHEDULER: 'default',
      INTEROP_PLAN_SCHEDULERS: '',
    });
    const secret = find(manifests, 'Secret', 'r-interoperator');
    const decoded = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
    expect(decoded('username')).toBe('broker');
    expect(decoded('password')).toMatch(/^[A-Za-z0-9]{32}$/);
    // The admin API's own credentials, its password generated apart from the OSB one.
    expect(decoded('adminUsername')).toBe('admin');
    expect(decoded('adminPassword')).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(decoded('adminPassword')).not.toBe(decoded('password'));
    // A generated key in the form src/temporal/codec.ts parses: id:base64 of 32 bytes.
    const [id, key] = decoded('payloadKeys').split(':');
    expect(id).toBe('k1');
    expect(Buffer.from(key!, 'base64')).toHaveLength(32);

    expect(find(manifests, 'Service', 'r-interoperator-broker').spec).toMatchObject({
      ports: [{ name: 'http', port: 8080, targetPort: 'http' }],
    });
    const role = find(manifests, 'ClusterRole', 'r-interoperator');
    expect(JSON.stringify(role.rules)).toContain('acid.zalan.do');
    expect(JSON.stringify(role.rules)).toContain('sfserviceinstances/status');
    expect(JSON.stringify(role.rules)).toContain('namespaces');
    find(manifests, 'ClusterRoleBinding', 'r-interoperator');
    find(manifests, 'ServiceAccount', 'r-interoperator');
    expect(manifests.some((m) => m.kind === 'HorizontalPodAutoscaler')).toBe(false);
  });

  test('GIVEN worker autoscaling THEN an HPA scales the workers and the Deployment leaves replicas to it', () => {
    const manifests = render('worker.autoscaling.enabled=true', 'worker.autoscaling.maxReplicas=7');
    expect(find(manifests, 'Deployment', 'r-interoperator-worker').spec?.replicas).toBeUndefined();
    expect(find(manifests, 'HorizontalPodAutoscaler', 'r-interoperator-worker').spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'r-interoperator-worker' },
      minReplicas: 2,
      maxReplicas: 7,
    });
  });

  test('GIVEN a scheduler and per-plan schedulers THEN the ConfigMap sets them in the form the processes read', () => {
    const manifests = render(
      'settings.scheduler=least-utilized',
      'settings.planSchedulers.small=round-robin',
      'settings.planSchedulers.large=resource-aware',
    );
    expect(find(manifests, 'ConfigMap', 'r-interoperator').data).toMatchObject({
      INTEROP_SCHEDULER: 'least-utilized',
      INTEROP_PLAN_SCHEDULERS: 'large=resource-aware,small=round-robin',
    });
  });

  test('GIVEN an existing Secret THEN the chart makes none and the pods read that one', () => {
    const manifests = render('auth.existingSecret=mine');
    expect(manifests.some((m) => m.kind === 'Secret')).toBe(false);
    const env = podSpec(find(manifests, 'Deployment', 'r-interoperator-broker')).containers[0]!.env;
    expect(env.map((e) => e.valueFrom?.secretKeyRef?.name)).toEqual(['mine', 'mine', 'mine', 'mine', 'mine']);
  });

  test('GIVEN no admin user THEN the Secret holds no admin credentials (the admin API is off)', () => {
    const secret = find(render('auth.adminUsername='), 'Secret', 'r-interoperator');
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(['password', 'payloadKeys', 'username']);
  });

  test('GIVEN rbac.clusterWide=false THEN Roles in the SF and the instance namespaces, or a clear failure', () => {
    const manifests = render('rbac.clusterWide=false', 'settings.instanceNamespace=instances');
    expect(manifests.some((m) => m.kind === 'ClusterRole')).toBe(false);
    expect(manifests.filter((m) => m.kind === 'Role').map((m) => m.metadata.namespace)).toEqual([
      'interop',
      'instances',
    ]);
    expect(manifests.filter((m) => m.kind === 'RoleBinding')).toHaveLength(2);

    expect(() => render('rbac.clusterWide=false')).toThrow(/needs settings.instanceNamespace/);
  });

  test('GIVEN other operators THEN their API groups are in the rules', () => {
    const manifests = render('rbac.operatorApiGroups={acid.zalan.do,kubedb.com}');
    expect(JSON.stringify(find(manifests, 'ClusterRole', 'r-interoperator').rules)).toContain(
      '"apiGroups":["acid.zalan.do","kubedb.com"]',
    );
  });
});
