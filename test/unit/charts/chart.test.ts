/**
 * The Helm chart (charts/interoperator): its files parse, its templates use only values that exist,
 * it sets exactly the environment variables the processes read, and helm (INTEROP_HELM, or
 * ~/.cache/interoperator/bin/helm-<version>/helm, which `tools/build-binaries.sh helm` builds) lints
 * and renders what the deployment needs. Without helm those checks are skipped, and fail under
 * CI=true.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { BROKER_NODE_FLAGS } from '../../../src/config.js';
import { dropBoxNamespace } from '../../../src/resources/names.js';
import { findHelm, helmTool, renderChart, type Manifest } from '../../support/helm.js';
import { describeWithTool } from '../../support/tools.js';

const root = process.cwd();
const chartDir = path.join(root, 'charts', 'interoperator');
const templatesDir = path.join(chartDir, 'templates');
const crdDir = path.join(chartDir, 'crds');

const readYaml = (file: string) => parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
/** Every template file, those of templates/tests/ included, by its path under templates/. */
const templates = () =>
  readdirSync(templatesDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(templatesDir, path.join(entry.parentPath, entry.name)))
    .sort()
    .map((f) => ({ file: f, text: readFileSync(path.join(templatesDir, f), 'utf8') }));

/** The settings the brief names, which the chart must set (src/config.ts reads them). */
const REQUIRED_ENV = [
  'INTEROP_BROKER_USERNAME_FILE',
  'INTEROP_BROKER_PASSWORD_FILE',
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

/** The metrics the dashboard shows, as the processes export them. */
const DASHBOARD_METRICS = [
  'interoperator_osb_requests_total',
  'interoperator_osb_request_duration_seconds',
  'interoperator_operations_started_total',
  'interoperator_catalog_plans',
  'interoperator_operations_finished_total',
  'interoperator_operation_duration_seconds',
  'interoperator_step_retries_total',
  'interoperator_template_render_seconds',
  'interoperator_kube_requests_total',
  'interoperator_clusters',
];

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
      rbac: {
        clusterWide: true,
        operatorResources: [{ apiGroups: ['acid.zalan.do'], resources: ['postgresqls'] }],
        operatorApiGroups: [],
        referencedResources: [],
      },
      metrics: { port: 9090, host: '0.0.0.0', serviceMonitor: { enabled: false } },
      codec: { enabled: false, port: 8081 },
      clusterWorker: { enabled: false },
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

  test("the dashboard is Grafana JSON over exactly the metrics the processes export, and the Temporal SDK's", () => {
    const dashboard = JSON.parse(
      readFileSync(path.join(chartDir, 'dashboards', 'interoperator.json'), 'utf8'),
    ) as {
      uid: string;
      panels: { id: number; type: string; targets?: { expr: string }[] }[];
    };
    expect(dashboard.uid).toBe('interoperator');
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const named = new Set(
      exprs.flatMap((e) =>
        [...e.matchAll(/\b(interoperator_[a-z_]+?)(?:_bucket|_sum|_count)?\b/g)].map((m) => m[1]!),
      ),
    );
    expect([...named].sort()).toEqual([...DASHBOARD_METRICS].sort());
    expect(exprs.some((e) => e.includes('temporal_workflow_'))).toBe(true);
    // Every query keeps to the namespace chosen in the dashboard.
    expect(exprs.filter((e) => !e.includes('namespace=~"$namespace"'))).toEqual([]);
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

const helm = findHelm();
const withHelm = describeWithTool(helmTool(helm));

interface Probe {
  httpGet: { path: string; port: string };
}
interface Container {
  name: string;
  command: string[];
  ports: { name: string; containerPort: number }[];
  env: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
  }[];
  envFrom: { configMapRef: { name: string } }[];
  securityContext: Record<string, unknown>;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  containers: Container[];
  securityContext: Record<string, unknown>;
  volumes: { name: string; emptyDir?: unknown; secret?: { secretName: string } }[];
  topologySpreadConstraints: { topologyKey: string; whenUnsatisfiable: string; labelSelector: unknown }[];
}

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}
/** The verbs the rules grant on a resource of an API group, sorted. */
const verbsOn = (rules: Rule[], group: string, resource: string) =>
  [
    ...new Set(
      rules
        .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs),
    ),
  ].sort();

const render = (...set: string[]): Manifest[] => renderChart(helm!, { namespace: 'interop', set });

const find = (manifests: Manifest[], kind: string, name: string) => {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found)
    throw new Error(
      `no ${kind} ${name} in ${manifests.map((m) => `${m.kind}/${m.metadata.name}`).join(', ')}`,
    );
  return found;
};
const podSpec = (d: Manifest) => (d.spec as { template: { spec: PodSpec } }).template.spec;
const podAnnotations = (d: Manifest) =>
  (d.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata
    .annotations;
const envOf = (d: Manifest) =>
  Object.fromEntries(
    podSpec(d).containers[0]!.env.map((e) => [e.name, e.value ?? e.valueFrom?.secretKeyRef]),
  );
const kinds = (manifests: Manifest[]) => manifests.map((m) => `${m.kind}/${m.metadata.name}`).sort();
/** Payload keys derived for a cluster, as `interoperator payload-key derive` prints them (one, so no comma for --set). */
const derivedKeys = (clusterId: string) => `k1@${clusterId}:${Buffer.alloc(32, 5).toString('base64')}`;
const CLUSTER_2_KEYS = derivedKeys('2');
const SISTER_1_KEYS = derivedKeys('sister-1');

withHelm('the chart rendered by helm', () => {
  test.each([
    ['the defaults', []],
    [
      'every option on',
      [
        'codec.enabled=true',
        'metrics.tokenSecret.name=metrics',
        'metrics.serviceMonitor.enabled=true',
        'dashboards.enabled=true',
        'tracing.otlpEndpoint=http://collector:4318',
        'broker.autoscaling.enabled=true',
        'worker.autoscaling.enabled=true',
        'clusterWorker.enabled=true',
        'clusterWorker.clusterId=2',
        'clusterWorker.masterKubeconfigSecret=master',
        `clusterWorker.payloadKeys=${CLUSTER_2_KEYS}`,
        'clusterWorkerIdentities[0]=2',
        'worker.versioning.enabled=true',
        'worker.versioning.setCurrent.rampPercent=10',
      ],
    ],
  ])('helm lint --strict passes with %s', (_, set) => {
    const result = spawnSync(helm!, ['lint', '--strict', chartDir, ...set.flatMap((s) => ['--set', s])], {
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toContain('0 chart(s) failed');
    expect(result.status).toBe(0);
  });

  test('GIVEN clusterWorkerIdentities THEN each cluster’s worker gets a drop box the inter-operator names alike, and Roles there and on the catalog and its SFCluster alone', () => {
    const long = 'a-cluster-whose-id-is-long-enough-to-overflow-the-namespace-name';
    const manifests = render('clusterWorkerIdentities[0]=sister-a', `clusterWorkerIdentities[1]=${long}`);
    const namespaces = manifests.filter((m) => m.kind === 'Namespace').map((m) => m.metadata?.name);
    expect(namespaces).toEqual([dropBoxNamespace('interop', 'sister-a'), dropBoxNamespace('interop', long)]);
    expect(namespaces[0]).toBe('interop-drop-sister-a');
    const roles = manifests.filter(
      (m) => m.kind === 'Role' && m.metadata?.name === 'r-interoperator-cluster-worker-sister-a',
    );
    const rules = Object.fromEntries(
      roles.map((r) => [r.metadata?.namespace, (r as { rules?: unknown[] }).rules]),
    );
    expect(rules).toEqual({
      interop: [
        {
          apiGroups: ['osb.servicefabrik.io'],
          resources: ['sfservices', 'sfplans'],
          verbs: ['get', 'list', 'watch'],
        },
        {
          apiGroups: ['resource.servicefabrik.io'],
          resources: ['sfclusters', 'sfclusters/status'],
          resourceNames: ['sister-a'],
          verbs: ['get', 'patch', 'update'],
        },
      ],
      'interop-drop-sister-a': [
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'patch', 'update', 'delete'] },
      ],
    });
  });

  test('GIVEN the defaults THEN two brokers and two workers run node dist/src/main.js, non-root and read-only', () => {
    const manifests = render();
    const broker = find(manifests, 'Deployment', 'r-interoperator-broker');
    const worker = find(manifests, 'Deployment', 'r-interoperator-worker');
    expect(broker.spec?.replicas).toBe(2);
    expect(worker.spec?.replicas).toBe(2);
    expect(podSpec(worker).containers[0]!.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
    expect(podSpec(worker).volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '256Mi' } }]);
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
    for (const deployment of [broker, worker]) {
      const pod = podSpec(deployment);
      const container = pod.containers[0]!;
      // Probes on the operations port, which also serves the metrics, scraped by annotation.
      expect(container.ports).toContainEqual({ name: 'metrics', containerPort: 9090, protocol: 'TCP' });
      expect(container.startupProbe?.httpGet).toEqual({ path: '/livez', port: 'metrics' });
      expect(container.livenessProbe?.httpGet).toEqual({ path: '/livez', port: 'metrics' });
      expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
      expect(podAnnotations(deployment)).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9090',
        'prometheus.io/path': '/metrics',
      });
      // The read-only root file system leaves /tmp writable, in memory of the pod.
      expect(container.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
      expect(pod.volumes).toContainEqual({ name: 'tmp', emptyDir: { sizeLimit: '256Mi' } });
      expect(
        pod.topologySpreadConstraints.map((c) => [c.topologyKey, c.whenUnsatisfiable, c.labelSelector]),
      ).toEqual(
        ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'].map((key) => [
          key,
          'ScheduleAnyway',
          { matchLabels: (deployment.spec as { selector: { matchLabels: unknown } }).selector.matchLabels },
        ]),
      );
    }
    const brokerContainer = podSpec(broker).containers[0]!;
    expect(brokerContainer.ports.map((p) => p.name)).toEqual(['http', 'metrics']);
    // Time to drain (5 s), then for a synchronous request in flight (60 s), then a margin.
    expect(
      (podSpec(broker) as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds,
    ).toBe(75);
    // The credentials are files of the mounted Secret (re-read when it changes); the payload keys
    // alone come from the Secret into the environment.
    expect(brokerContainer.env.map((e) => [e.name, e.value ?? e.valueFrom?.secretKeyRef])).toEqual([
      ['INTEROP_BROKER_USERNAME_FILE', '/etc/interoperator/auth/username'],
      ['INTEROP_BROKER_PASSWORD_FILE', '/etc/interoperator/auth/password'],
      ['INTEROP_ADMIN_USERNAME_FILE', '/etc/interoperator/auth/adminUsername'],
      ['INTEROP_ADMIN_PASSWORD_FILE', '/etc/interoperator/auth/adminPassword'],
      ['INTEROP_CREDENTIALS_OVERLAP_SECONDS', '300'],
      ['INTEROP_PAYLOAD_KEYS', { name: 'r-interoperator', key: 'payloadKeys' }],
    ]);
    expect(brokerContainer.volumeMounts).toEqual([
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'auth', mountPath: '/etc/interoperator/auth', readOnly: true },
    ]);
    expect(podSpec(broker).volumes).toEqual([
      { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } },
      {
        name: 'auth',
        secret: {
          secretName: 'r-interoperator',
          optional: true,
          items: ['username', 'password', 'adminUsername', 'adminPassword'].map((key) => ({
            key,
            path: key,
          })),
        },
      },
    ]);

    expect(find(manifests, 'ConfigMap', 'r-interoperator').data).toEqual({
      INTEROP_CLUSTER_EVACUATE_AFTER_SECONDS: '0',
      INTEROP_CLUSTER_EVACUATION_CONCURRENCY: '5',
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
      INTEROP_SEND_BINDING_METADATA: 'true',
      INTEROP_WORKER_OPERATIONS: '100',
      INTEROP_WORKER_STEPS: '100',
      INTEROP_MASTER_CLUSTER_ID: '1',
      INTEROP_CLUSTER_PROBE_SECONDS: '30',
      INTEROP_CLUSTER_OFFLINE_SECONDS: '120',
      INTEROP_CLUSTER_STABILIZATION_SECONDS: '60',
      INTEROP_SCHEDULER: 'default',
      INTEROP_PLAN_SCHEDULERS: '',
      INTEROP_METRICS_PORT: '9090',
      INTEROP_METRICS_RECORD_STATES: 'false',
      INTEROP_METRICS_HOST: '0.0.0.0',
      INTEROP_QUOTA_WEBHOOK_URL: '',
      INTEROP_QUOTA_WEBHOOK_PROTOCOL: 'entitlement',
      INTEROP_QUOTA_WEBHOOK_TIMEOUT_SECONDS: '5',
      INTEROP_QUOTA_WEBHOOK_FAILURE_POLICY: 'refuse',
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
    const rules = role.rules as Rule[];
    expect(JSON.stringify(rules)).toContain('sfserviceinstances/status');
    expect(JSON.stringify(rules)).toContain('namespaces');
    // Secrets by name, never listed or watched; the operator's resources named, not '*' (watched,
    // so that their changes wake the status checks).
    expect(verbsOn(rules, '', 'secrets')).toEqual(['create', 'delete', 'get', 'patch']);
    expect(rules).toContainEqual({
      apiGroups: ['acid.zalan.do'],
      resources: ['postgresqls'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    });
    expect(JSON.stringify(rules)).not.toContain('"*"');
    expect(verbsOn(rules, '', 'nodes')).toEqual(['list']);
    // CRDs are the chart's to install on the master; a sister's worker gets them with rbac.installCrds.
    expect(verbsOn(rules, 'apiextensions.k8s.io', 'customresourcedefinitions')).toEqual([]);
    find(manifests, 'ClusterRoleBinding', 'r-interoperator');
    find(manifests, 'ServiceAccount', 'r-interoperator');
    expect(manifests.some((m) => m.kind === 'HorizontalPodAutoscaler')).toBe(false);
    expect(find(manifests, 'PodDisruptionBudget', 'r-interoperator-broker').spec).toMatchObject({
      minAvailable: 1,
      selector: { matchLabels: { 'app.kubernetes.io/component': 'broker' } },
    });
    expect(find(manifests, 'PodDisruptionBudget', 'r-interoperator-worker').spec).toMatchObject({
      maxUnavailable: 1,
      selector: { matchLabels: { 'app.kubernetes.io/component': 'worker' } },
    });
    expect(kinds(manifests)).toEqual(
      [
        'ClusterRole/r-interoperator',
        'ClusterRoleBinding/r-interoperator',
        'ConfigMap/r-interoperator',
        'Deployment/r-interoperator-broker',
        'Deployment/r-interoperator-worker',
        // The `helm test` hook (templates/tests/).
        'Pod/r-interoperator-test-broker',
        'PodDisruptionBudget/r-interoperator-broker',
        'PodDisruptionBudget/r-interoperator-worker',
        'Secret/r-interoperator',
        'Service/r-interoperator-broker',
        'ServiceAccount/r-interoperator',
        'ValidatingAdmissionPolicy/r-interoperator-namespaces',
        'ValidatingAdmissionPolicyBinding/r-interoperator-namespaces',
      ].sort(),
    );
  });

  test('GIVEN Temporal over mutual TLS with an API key THEN every pod mounts the Secret where the settings name its files', () => {
    const manifests = render(
      'temporal.tls.enabled=true',
      'temporal.tls.serverName=temporal.example.com',
      'temporal.tls.secretName=temporal-client',
      'temporal.tls.mtls=true',
      'temporal.apiKeySecret.name=temporal-api',
      'clusterWorker.enabled=true',
      'clusterWorker.clusterId=2',
      'clusterWorker.masterKubeconfigSecret=master',
      `clusterWorker.payloadKeys=${CLUSTER_2_KEYS}`,
    );
    expect(find(manifests, 'ConfigMap', 'r-interoperator').data).toMatchObject({
      INTEROP_TEMPORAL_TLS: 'true',
      INTEROP_TEMPORAL_TLS_SERVER_NAME: 'temporal.example.com',
      INTEROP_TEMPORAL_TLS_CA_FILE: '/etc/interoperator/temporal-tls/ca.crt',
      INTEROP_TEMPORAL_TLS_CERT_FILE: '/etc/interoperator/temporal-tls/tls.crt',
      INTEROP_TEMPORAL_TLS_KEY_FILE: '/etc/interoperator/temporal-tls/tls.key',
    });
    for (const name of [
      'r-interoperator-broker',
      'r-interoperator-worker',
      'r-interoperator-cluster-worker',
    ]) {
      const pod = podSpec(find(manifests, 'Deployment', name));
      expect(pod.containers[0]!.volumeMounts).toContainEqual({
        name: 'temporal-tls',
        mountPath: '/etc/interoperator/temporal-tls',
        readOnly: true,
      });
      expect(pod.volumes).toContainEqual({ name: 'temporal-tls', secret: { secretName: 'temporal-client' } });
      expect(envOf(find(manifests, 'Deployment', name)).INTEROP_TEMPORAL_API_KEY).toEqual({
        name: 'temporal-api',
        key: 'apiKey',
      });
    }
    // TLS with the system's CAs: nothing mounted; plain: no TLS setting at all
    const system = render('temporal.tls.enabled=true');
    expect(find(system, 'ConfigMap', 'r-interoperator').data).not.toHaveProperty(
      'INTEROP_TEMPORAL_TLS_CA_FILE',
    );
    expect(
      podSpec(find(system, 'Deployment', 'r-interoperator-worker')).volumes.map((v) => v.name),
    ).not.toContain('temporal-tls');
    expect(Object.keys(find(render(), 'ConfigMap', 'r-interoperator').data ?? {})).not.toContain(
      'INTEROP_TEMPORAL_TLS',
    );
    expect(() => render('temporal.tls.enabled=true', 'temporal.tls.mtls=true')).toThrow(
      /temporal.tls.mtls needs temporal.tls.secretName/,
    );
  });

  test('GIVEN the codec endpoint THEN the brokers serve it on port codec with a generated token kept in the Secret', () => {
    const manifests = render(
      'codec.enabled=true',
      'codec.allowedOrigins={https://temporal.example,https://ui.example}',
    );
    const broker = find(manifests, 'Deployment', 'r-interoperator-broker');
    expect(podSpec(broker).containers[0]!.ports).toContainEqual({
      name: 'codec',
      containerPort: 8081,
      protocol: 'TCP',
    });
    expect(envOf(broker)).toMatchObject({
      INTEROP_CODEC_PORT: '8081',
      // A file of the mounted Secret, re-read when it changes: rotated without a restart.
      INTEROP_CODEC_TOKEN_FILE: '/etc/interoperator/codec/token',
      INTEROP_CODEC_ORIGINS: 'https://temporal.example,https://ui.example',
    });
    expect(podSpec(broker).containers[0]!.volumeMounts).toContainEqual({
      name: 'codec-token',
      mountPath: '/etc/interoperator/codec',
      readOnly: true,
    });
    expect(podSpec(broker).volumes).toContainEqual({
      name: 'codec-token',
      secret: { secretName: 'r-interoperator', items: [{ key: 'codecToken', path: 'token' }] },
    });
    // The workers serve no codec.
    expect(Object.keys(envOf(find(manifests, 'Deployment', 'r-interoperator-worker')))).not.toContain(
      'INTEROP_CODEC_PORT',
    );
    expect(find(manifests, 'Service', 'r-interoperator-broker').spec).toMatchObject({
      ports: [
        { name: 'http', port: 8080, targetPort: 'http' },
        { name: 'codec', port: 8081, targetPort: 'codec' },
      ],
    });
    const token = find(manifests, 'Secret', 'r-interoperator').data?.codecToken ?? '';
    expect(Buffer.from(token, 'base64').toString('utf8')).toMatch(/^[A-Za-z0-9]{40}$/);

    const own = render('codec.enabled=true', 'codec.tokenSecret.name=codec', 'auth.existingSecret=mine');
    expect(podSpec(find(own, 'Deployment', 'r-interoperator-broker')).volumes).toContainEqual({
      name: 'codec-token',
      secret: { secretName: 'codec', items: [{ key: 'token', path: 'token' }] },
    });
    expect(() => render('codec.enabled=true', 'auth.existingSecret=mine')).toThrow(
      /needs codec.tokenSecret.name/,
    );
    expect(render().find((m) => m.kind === 'Secret')?.data).not.toHaveProperty('codecToken');
  });

  test('GIVEN a metrics token and a ServiceMonitor THEN every process requires the token and the ServiceMonitor sends it', () => {
    const manifests = render(
      'metrics.tokenSecret.name=metrics',
      'metrics.serviceMonitor.enabled=true',
      'metrics.serviceMonitor.labels.release=prom',
      'metrics.scrapeAnnotations=false',
    );
    for (const name of ['r-interoperator-broker', 'r-interoperator-worker']) {
      const deployment = find(manifests, 'Deployment', name);
      expect(envOf(deployment).INTEROP_METRICS_TOKEN_FILE).toBe('/etc/interoperator/metrics/token');
      expect(podSpec(deployment).containers[0]!.volumeMounts).toContainEqual({
        name: 'metrics-token',
        mountPath: '/etc/interoperator/metrics',
        readOnly: true,
      });
      expect(podSpec(deployment).volumes).toContainEqual({
        name: 'metrics-token',
        secret: { secretName: 'metrics', items: [{ key: 'token', path: 'token' }] },
      });
      expect(Object.keys(podAnnotations(deployment))).not.toContain('prometheus.io/scrape');
    }
    const service = find(manifests, 'Service', 'r-interoperator-metrics');
    expect(service.spec).toEqual({
      clusterIP: 'None',
      selector: { 'app.kubernetes.io/name': 'interoperator', 'app.kubernetes.io/instance': 'r' },
      ports: [{ name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' }],
    });
    const monitor = find(manifests, 'ServiceMonitor', 'r-interoperator') as Manifest & {
      apiVersion: string;
      metadata: { labels: Record<string, string> };
    };
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata.labels.release).toBe('prom');
    const selected = (monitor.spec as { selector: { matchLabels: Record<string, string> } }).selector
      .matchLabels;
    expect((service as Manifest & { metadata: { labels: object } }).metadata.labels).toMatchObject(selected);
    expect(monitor.spec).toMatchObject({
      namespaceSelector: { matchNames: ['interop'] },
      endpoints: [
        {
          port: 'metrics',
          path: '/metrics',
          authorization: { type: 'Bearer', credentials: { name: 'metrics', key: 'token' } },
        },
      ],
    });
    const open = find(render('metrics.serviceMonitor.enabled=true'), 'ServiceMonitor', 'r-interoperator');
    expect((open.spec as { endpoints: object[] }).endpoints[0]).not.toHaveProperty('authorization');
  });

  test('GIVEN dashboards enabled THEN a ConfigMap with the sidecar label holds the dashboard JSON', () => {
    const dashboard = find(
      render('dashboards.enabled=true', 'dashboards.annotations.grafana_folder=Inter-operator'),
      'ConfigMap',
      'r-interoperator-dashboard',
    ) as Manifest & { metadata: { labels: Record<string, string>; annotations: Record<string, string> } };
    expect(dashboard.metadata.labels.grafana_dashboard).toBe('1');
    expect(dashboard.metadata.annotations).toEqual({ grafana_folder: 'Inter-operator' });
    expect(JSON.parse(dashboard.data!['interoperator.json']!)).toEqual(
      JSON.parse(readFileSync(path.join(chartDir, 'dashboards', 'interoperator.json'), 'utf8')),
    );
  });

  test('GIVEN OSB authentication by client certificate THEN the ConfigMap sets it and the subject; without a subject the chart refuses', () => {
    const data = find(
      render(
        'auth.osb=client-certificate',
        'auth.osbClientSubject=/C=DE/O=Example/CN=sm',
        'settings.sendBindingMetadata=false',
      ),
      'ConfigMap',
      'r-interoperator',
    ).data;
    expect(data).toMatchObject({
      INTEROP_OSB_AUTH: 'client-certificate',
      INTEROP_OSB_CLIENT_SUBJECT: '/C=DE/O=Example/CN=sm',
      INTEROP_SEND_BINDING_METADATA: 'false',
    });
    expect(Object.keys(find(render(), 'ConfigMap', 'r-interoperator').data!)).not.toContain(
      'INTEROP_OSB_AUTH',
    );
    expect(() => render('auth.osb=client-certificate')).toThrow(/auth.osbClientSubject/);
    expect(() => render('auth.osb=mtls')).toThrow(/auth.osb must be basic or client-certificate/);
  });

  test('GIVEN an OTLP endpoint THEN both processes get it; without one, no OTEL setting', () => {
    expect(
      find(render('tracing.otlpEndpoint=http://collector:4318'), 'ConfigMap', 'r-interoperator').data,
    ).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    expect(Object.keys(find(render(), 'ConfigMap', 'r-interoperator').data!)).not.toContain(
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    );
  });

  test('GIVEN broker autoscaling THEN an HPA scales the brokers and their PDB counts on the minimum', () => {
    const manifests = render('broker.autoscaling.enabled=true', 'broker.autoscaling.minReplicas=3');
    expect(find(manifests, 'Deployment', 'r-interoperator-broker').spec?.replicas).toBeUndefined();
    expect(find(manifests, 'HorizontalPodAutoscaler', 'r-interoperator-broker').spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'r-interoperator-broker' },
      minReplicas: 3,
      maxReplicas: 6,
    });
    find(manifests, 'PodDisruptionBudget', 'r-interoperator-broker');
    expect(
      manifests.some(
        (m) => m.metadata.name === 'r-interoperator-worker' && m.kind === 'HorizontalPodAutoscaler',
      ),
    ).toBe(false);
    expect(
      find(
        render('broker.podDisruptionBudget.minAvailable=null'),
        'PodDisruptionBudget',
        'r-interoperator-broker',
      ).spec,
    ).toMatchObject({ maxUnavailable: 1 });
    // One replica: no budget, which would block every drain.
    expect(
      render('broker.replicas=1').some(
        (m) => m.metadata.name === 'r-interoperator-broker' && m.kind === 'PodDisruptionBudget',
      ),
    ).toBe(false);
  });

  test('GIVEN a cluster worker alone THEN one Deployment serves that cluster, reaching the master by the kubeconfig in its Secret, with only its cluster’s payload keys', () => {
    const manifests = render(
      'broker.enabled=false',
      'worker.enabled=false',
      'clusterWorker.enabled=true',
      'clusterWorker.clusterId=sister-1',
      'clusterWorker.masterKubeconfigSecret=master-kubeconfig',
      `clusterWorker.payloadKeys=${SISTER_1_KEYS}`,
    );
    expect(manifests.filter((m) => m.kind === 'Deployment').map((m) => m.metadata.name)).toEqual([
      'r-interoperator-cluster-worker',
    ]);
    expect(manifests.some((m) => m.kind === 'Service')).toBe(false);
    // no Secret with master keys: only the one of its derived keys
    expect(manifests.filter((m) => m.kind === 'Secret').map((m) => m.metadata.name)).toEqual([
      'r-interoperator-cluster-worker-keys',
    ]);
    const keys = find(manifests, 'Secret', 'r-interoperator-cluster-worker-keys');
    expect(Buffer.from((keys.data as Record<string, string>).payloadKeys!, 'base64').toString()).toBe(
      SISTER_1_KEYS,
    );
    const deployment = find(manifests, 'Deployment', 'r-interoperator-cluster-worker');
    expect(envOf(deployment)).toMatchObject({
      INTEROP_CLUSTER_ID: 'sister-1',
      INTEROP_MASTER_KUBECONFIG: '/etc/interoperator/master/kubeconfig',
      INTEROP_PAYLOAD_KEYS: { name: 'r-interoperator-cluster-worker-keys', key: 'payloadKeys' },
    });
    // its pods roll when its keys change
    const rotated = render(
      'broker.enabled=false',
      'worker.enabled=false',
      'clusterWorker.enabled=true',
      'clusterWorker.clusterId=sister-1',
      'clusterWorker.masterKubeconfigSecret=master-kubeconfig',
      `clusterWorker.payloadKeys=k3@sister-1:${'B'.repeat(43)}=\\,${SISTER_1_KEYS}`,
    );
    const checksum = (m: Manifest[]) =>
      podAnnotations(find(m, 'Deployment', 'r-interoperator-cluster-worker'))['checksum/cluster-keys'];
    expect(checksum(manifests)).toBeDefined();
    expect(checksum(rotated)).not.toBe(checksum(manifests));
    const pod = podSpec(deployment);
    expect(pod.containers[0]!.command).toEqual(['node', 'dist/src/main.js', 'worker']);
    expect(pod.containers[0]!.volumeMounts).toContainEqual({
      name: 'master-kubeconfig',
      mountPath: '/etc/interoperator/master',
      readOnly: true,
    });
    expect(pod.volumes).toContainEqual({
      name: 'master-kubeconfig',
      secret: { secretName: 'master-kubeconfig', items: [{ key: 'kubeconfig', path: 'kubeconfig' }] },
    });
    find(manifests, 'PodDisruptionBudget', 'r-interoperator-cluster-worker');
    find(manifests, 'ClusterRole', 'r-interoperator');

    // its keys from a Secret of one's own: the chart makes none
    const fromSecret = render(
      'broker.enabled=false',
      'worker.enabled=false',
      'clusterWorker.enabled=true',
      'clusterWorker.clusterId=sister-1',
      'clusterWorker.masterKubeconfigSecret=master-kubeconfig',
      'clusterWorker.payloadKeysSecret=sister-keys',
    );
    expect(fromSecret.some((m) => m.kind === 'Secret')).toBe(false);
    expect(envOf(find(fromSecret, 'Deployment', 'r-interoperator-cluster-worker'))).toMatchObject({
      INTEROP_PAYLOAD_KEYS: { name: 'sister-keys', key: 'payloadKeys' },
    });

    const cluster = ['clusterWorker.enabled=true', 'broker.enabled=false', 'worker.enabled=false'];
    const keyed = [...cluster, `clusterWorker.payloadKeys=${CLUSTER_2_KEYS}`];
    expect(() => render(...keyed, 'clusterWorker.masterKubeconfigSecret=k')).toThrow(
      /needs clusterWorker.clusterId/,
    );
    expect(() =>
      render(...cluster, 'clusterWorker.clusterId=1', 'clusterWorker.masterKubeconfigSecret=k'),
    ).toThrow(/clusterWorker.clusterId 1 is the master/);
    expect(() => render(...keyed, 'clusterWorker.clusterId=2')).toThrow(
      /needs clusterWorker.masterKubeconfigSecret/,
    );
    const sister2 = [...cluster, 'clusterWorker.clusterId=2', 'clusterWorker.masterKubeconfigSecret=k'];
    expect(() => render(...sister2)).toThrow(
      /needs the payload keys derived for cluster 2: set clusterWorker.payloadKeys \(`interoperator payload-key derive --cluster 2`/,
    );
    expect(() => render(...sister2, `clusterWorker.payloadKeys=k1:${'A'.repeat(43)}=`)).toThrow(
      /key "k1" is a master key/,
    );
    expect(() => render(...sister2, `clusterWorker.payloadKeys=${SISTER_1_KEYS}`)).toThrow(
      /key "k1@sister-1" is not derived for cluster 2/,
    );
    expect(() =>
      render(
        ...sister2,
        `clusterWorker.payloadKeys=${CLUSTER_2_KEYS}`,
        `auth.payloadKeys=k1:${'A'.repeat(43)}=`,
      ),
    ).toThrow(/a release with only a cluster worker holds no master keys/);
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

  test('GIVEN Worker Versioning THEN the workers of the image’s tag are a Deployment of their own, kept by later upgrades, and a hook makes them current', () => {
    const manifests = render('worker.versioning.enabled=true', 'image.tag=1.4.2');
    expect(kinds(manifests).filter((k) => k.startsWith('Deployment/') || k.startsWith('Job/'))).toEqual([
      'Deployment/r-interoperator-broker',
      'Deployment/r-interoperator-worker-1-4-2',
      'Job/r-interoperator-worker-version',
    ]);
    const worker = find(manifests, 'Deployment', 'r-interoperator-worker-1-4-2');
    const build = { 'interoperator.servicefabrik.io/build-id': '1.4.2' };
    expect(worker.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(worker.metadata.labels).toMatchObject({ 'app.kubernetes.io/component': 'worker', ...build });
    expect(worker.spec).toMatchObject({
      selector: { matchLabels: { 'app.kubernetes.io/component': 'worker', ...build } },
      template: { metadata: { labels: build } },
    });
    expect(envOf(worker)).toMatchObject({ INTEROP_WORKER_BUILD_ID: '1.4.2' });
    expect(envOf(worker)).not.toHaveProperty('INTEROP_WORKER_DEPLOYMENT');

    const job = find(manifests, 'Job', 'r-interoperator-worker-version');
    expect(job.metadata.annotations).toEqual({
      'helm.sh/hook': 'post-install,post-upgrade',
      'helm.sh/hook-weight': '0',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    });
    const container = podSpec(job).containers[0]!;
    expect(container.command).toEqual([
      'node',
      'dist/src/cli/main.js',
      'worker-version',
      'set-current',
      '1.4.2',
      '--wait-seconds',
      '300',
    ]);
    expect(container.envFrom).toEqual([{ configMapRef: { name: 'r-interoperator' } }]);
    // It reads no payload: the payload keys stay out of it.
    expect(container.env ?? []).toEqual([]);
    expect(container.securityContext).toEqual(podSpec(worker).containers[0]!.securityContext);
  });

  test('GIVEN Worker Versioning with a deployment name, a build id, a ramp and autoscaling THEN each is used', () => {
    const manifests = render(
      'worker.versioning.enabled=true',
      'worker.versioning.deploymentName=osb-eu',
      'worker.versioning.buildId=Build_7.a',
      'worker.versioning.setCurrent.rampPercent=20',
      'worker.versioning.setCurrent.waitSeconds=60',
      'worker.autoscaling.enabled=true',
      'temporal.apiKeySecret.name=temporal-key',
      'temporal.apiKeySecret.key=apiKey',
    );
    const worker = find(manifests, 'Deployment', 'r-interoperator-worker-build-7-a');
    expect(envOf(worker)).toMatchObject({
      INTEROP_WORKER_BUILD_ID: 'Build_7.a',
      INTEROP_WORKER_DEPLOYMENT: 'osb-eu',
    });
    expect(find(manifests, 'HorizontalPodAutoscaler', 'r-interoperator-worker').spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'r-interoperator-worker-build-7-a' },
    });
    const job = find(manifests, 'Job', 'r-interoperator-worker-version');
    expect(podSpec(job).containers[0]!.command.slice(3)).toEqual([
      'set-current',
      'Build_7.a',
      '--wait-seconds',
      '60',
      '--ramp',
      '20',
    ]);
    expect(envOf(job)).toEqual({
      INTEROP_TEMPORAL_API_KEY: { name: 'temporal-key', key: 'apiKey' },
      INTEROP_WORKER_DEPLOYMENT: 'osb-eu',
    });
  });

  test('GIVEN the defaults THEN `helm test` runs a pod of the chart’s image that asks the broker Service by its variables, with the Secret’s credentials', () => {
    const manifests = render('image.repository=example/interoperator', 'image.tag=1.4.2');
    const pod = find(manifests, 'Pod', 'r-interoperator-test-broker');
    expect(pod.metadata.annotations).toEqual({
      'helm.sh/hook': 'test',
      'helm.sh/hook-delete-policy': 'before-hook-creation',
    });
    const spec = pod.spec as unknown as PodSpec & { restartPolicy: string };
    expect(spec.restartPolicy).toBe('Never');
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    const container = spec.containers[0]!;
    expect(container).toMatchObject({
      image: 'example/interoperator:1.4.2',
      imagePullPolicy: 'IfNotPresent',
    });
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    // The Service's variables, which the kubelet sets for the Service the chart made before the hook.
    const service = find(manifests, 'Service', 'r-interoperator-broker');
    expect((service.spec as { ports: { name: string }[] }).ports[0]!.name).toBe('http');
    expect(
      Object.fromEntries(container.env.map((e) => [e.name, e.value ?? e.valueFrom?.secretKeyRef])),
    ).toEqual({
      BROKER_URL: 'http://$(R_INTEROPERATOR_BROKER_SERVICE_HOST):$(R_INTEROPERATOR_BROKER_SERVICE_PORT_HTTP)',
      BROKER_USERNAME: { name: 'r-interoperator', key: 'username' },
      BROKER_PASSWORD: { name: 'r-interoperator', key: 'password' },
    });
    expect(container.command.slice(0, 2)).toEqual(['node', '-e']);
    const script = container.command[2]!;
    for (const check of ["'/healthz'", "'/v2/catalog'", 'status === 401', 'status === 200'])
      expect(script).toContain(check);
    // An existing Secret's credentials; no test without a broker.
    const existing = find(
      render('auth.existingSecret=osb-credentials'),
      'Pod',
      'r-interoperator-test-broker',
    );
    expect((existing.spec as unknown as PodSpec).containers[0]!.env[1]!.valueFrom?.secretKeyRef?.name).toBe(
      'osb-credentials',
    );
    expect(kinds(render('broker.enabled=false')).filter((k) => k.startsWith('Pod/'))).toEqual([]);
  });

  test('GIVEN Worker Versioning off (the default) THEN one worker Deployment, no build id and no hook', () => {
    const manifests = render();
    expect(envOf(find(manifests, 'Deployment', 'r-interoperator-worker'))).not.toHaveProperty(
      'INTEROP_WORKER_BUILD_ID',
    );
    expect(kinds(manifests).filter((k) => k.startsWith('Job/'))).toEqual([]);
    expect(
      kinds(render('worker.versioning.enabled=true', 'worker.versioning.setCurrent.enabled=false')).filter(
        (k) => k.startsWith('Job/'),
      ),
    ).toEqual([]);
  });

  test.each([
    [['worker.versioning.buildId=1.4/2'], /the build id "1.4\/2" must be letters, digits/],
    [
      ['worker.versioning.setCurrent.rampPercent=100'],
      /rampPercent must be 0 \(current at once\) or above 0 and below 100/,
    ],
  ])('GIVEN Worker Versioning with %j THEN a clear failure', (set, message) => {
    expect(() => render('worker.versioning.enabled=true', ...set)).toThrow(message);
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
    const pod = podSpec(find(manifests, 'Deployment', 'r-interoperator-broker'));
    const env = pod.containers[0]!.env;
    expect(env.flatMap((e) => e.valueFrom?.secretKeyRef?.name ?? [])).toEqual(['mine']);
    expect(pod.volumes).toContainEqual(
      expect.objectContaining({ name: 'auth', secret: expect.objectContaining({ secretName: 'mine' }) }),
    );
  });

  test('GIVEN no admin user THEN the Secret holds no admin credentials (the admin API is off)', () => {
    const secret = find(render('auth.adminUsername='), 'Secret', 'r-interoperator');
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(['password', 'payloadKeys', 'username']);
  });

  test('GIVEN rbac.installCrds THEN the workers may install and upgrade CRDs, never delete them', () => {
    const rules = find(render('rbac.installCrds=true'), 'ClusterRole', 'r-interoperator').rules as Rule[];
    expect(verbsOn(rules, 'apiextensions.k8s.io', 'customresourcedefinitions')).toEqual([
      'create',
      'get',
      'patch',
    ]);
  });

  test('GIVEN rbac.clusterWide=false THEN Roles in the SF and the instance namespaces, or a clear failure', () => {
    const manifests = render('rbac.clusterWide=false', 'settings.instanceNamespace=instances');
    expect(manifests.some((m) => m.kind === 'ClusterRole')).toBe(false);
    expect(manifests.filter((m) => m.kind === 'Role').map((m) => m.metadata.namespace)).toEqual([
      'interop',
      'instances',
    ]);
    expect(manifests.filter((m) => m.kind === 'RoleBinding')).toHaveLength(2);
    const rulesIn = (namespace: string) =>
      manifests.find((m) => m.kind === 'Role' && m.metadata.namespace === namespace)!.rules as Rule[];
    // The registry's namespace: kubeconfigs read by name, nothing of the instances.
    expect(verbsOn(rulesIn('interop'), '', 'secrets')).toEqual(['get']);
    expect(verbsOn(rulesIn('interop'), 'acid.zalan.do', 'postgresqls')).toEqual([]);
    // ...and the schedulers' state.
    expect(verbsOn(rulesIn('interop'), '', 'configmaps')).toEqual(['create', 'get', 'update']);
    // The instances' namespace: the binding responses written, the plans' objects applied.
    expect(verbsOn(rulesIn('instances'), '', 'secrets')).toEqual(['create', 'delete', 'get', 'patch']);
    expect(verbsOn(rulesIn('instances'), 'acid.zalan.do', 'postgresqls')).toEqual([
      'create',
      'delete',
      'get',
      'list',
      'patch',
      'watch',
    ]);
    // One namespace for both: the instances' rules.
    const one = render('rbac.clusterWide=false', 'settings.instanceNamespace=interop');
    expect(one.filter((m) => m.kind === 'Role')).toHaveLength(1);
    expect(verbsOn(one.find((m) => m.kind === 'Role')!.rules as Rule[], '', 'secrets')).toContain('create');

    expect(() => render('rbac.clusterWide=false')).toThrow(/needs settings.instanceNamespace/);
  });

  test("GIVEN the cluster-wide ClusterRole THEN an admission policy keeps the service account's writes to the instances' namespaces, the registry's and the listed ones", () => {
    const manifests = render('rbac.allowedNamespaces={monitoring,shared}', 'settings.instanceNamespace=');
    const policy = find(manifests, 'ValidatingAdmissionPolicy', 'r-interoperator-namespaces');
    const spec = policy.spec as {
      failurePolicy: string;
      matchConstraints: { resourceRules: { operations: string[]; resources: string[]; scope: string }[] };
      matchConditions: { expression: string }[];
      validations: { expression: string }[];
    };
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints.resourceRules[0]).toMatchObject({
      operations: ['CREATE', 'UPDATE', 'DELETE'],
      resources: ['*/*'],
      scope: 'Namespaced',
    });
    // The chart's service account alone.
    expect(spec.matchConditions[0]!.expression).toBe(
      'request.userInfo.username == "system:serviceaccount:interop:r-interoperator"',
    );
    expect(spec.validations[0]!.expression).toContain(
      'request.namespace in ["interop","monitoring","shared"]',
    );
    expect(spec.validations[0]!.expression).toContain(
      "namespaceObject.metadata.labels['interoperator.servicefabrik.io/instance-namespace'] == 'true'",
    );
    expect(find(manifests, 'ValidatingAdmissionPolicyBinding', 'r-interoperator-namespaces').spec).toEqual({
      policyName: 'r-interoperator-namespaces',
      validationActions: ['Deny'],
    });
    // The shared instance namespace counts as the instances'.
    const shared = find(
      render('settings.instanceNamespace=instances'),
      'ValidatingAdmissionPolicy',
      'r-interoperator-namespaces',
    );
    expect(JSON.stringify(shared.spec)).toContain('request.namespace in [\\"interop\\",\\"instances\\"]');
    // The drop boxes of the clusters with workers of their own too: the landscape moves their Secrets on and takes them out.
    const long = 'a-cluster-id-long-enough-to-push-the-drop-box-name-past-sixty-three';
    const withDropBoxes = find(
      render('clusterWorkerIdentities[0]=sister-a', `clusterWorkerIdentities[1]=${long}`),
      'ValidatingAdmissionPolicy',
      'r-interoperator-namespaces',
    );
    expect(JSON.stringify(withDropBoxes.spec)).toContain(
      `request.namespace in [\\"interop\\",\\"${dropBoxNamespace('interop', 'sister-a')}\\",\\"${dropBoxNamespace('interop', long)}\\"]`,
    );
    // Namespaced Roles need none, and it can be left out (an apiserver before 1.30).
    const namespaced = render('rbac.clusterWide=false', 'settings.instanceNamespace=instances');
    expect(namespaced.some((m) => m.kind.startsWith('ValidatingAdmissionPolicy'))).toBe(false);
    expect(
      render('rbac.namespacePolicy=false').some((m) => m.kind.startsWith('ValidatingAdmissionPolicy')),
    ).toBe(false);
  });

  test('GIVEN an operator entry without its API groups THEN a clear failure', () => {
    // `--set list[0].field=...` replaces the whole entry: the groups would be lost.
    expect(() => render('rbac.operatorResources[0].resources={postgresqls,backups}')).toThrow(
      /every entry needs apiGroups and resources/,
    );
    const two = render(
      'rbac.operatorResources[0].apiGroups={acid.zalan.do}',
      'rbac.operatorResources[0].resources={postgresqls,backups}',
    );
    expect(find(two, 'ClusterRole', 'r-interoperator').rules).toContainEqual({
      apiGroups: ['acid.zalan.do'],
      resources: ['postgresqls', 'backups'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    });
  });

  test('GIVEN kinds that references read THEN they may be listed and watched, and an entry without its groups fails clearly', () => {
    expect(() => render('rbac.referencedResources[0].resources={configmaps}')).toThrow(
      /rbac.referencedResources: every entry needs apiGroups and resources/,
    );
    const manifests = render(
      'rbac.referencedResources[0].apiGroups={apps}',
      'rbac.referencedResources[0].resources={deployments}',
    );
    expect(find(manifests, 'ClusterRole', 'r-interoperator').rules).toContainEqual({
      apiGroups: ['apps'],
      resources: ['deployments'],
      verbs: ['get', 'list', 'watch'],
    });
    const byDefault = find(render(), 'ClusterRole', 'r-interoperator').rules as {
      resources: string[];
      verbs: string[];
    }[];
    expect(byDefault.filter((r) => r.resources.includes('configmaps') && r.verbs.includes('list'))).toEqual(
      [],
    );
  });

  test('GIVEN other operators THEN their API groups are in the rules', () => {
    const manifests = render('rbac.operatorApiGroups={acid.zalan.do,kubedb.com}');
    expect(JSON.stringify(find(manifests, 'ClusterRole', 'r-interoperator').rules)).toContain(
      '"apiGroups":["acid.zalan.do","kubedb.com"]',
    );
  });
});
