/**
 * Hostile input at volume, against a broker and worker (`main.js all`) of a landscape of its own
 * (its own registry namespace, service and plans, task queue) on the real servers, with the
 * example operator reconciling:
 *
 * - generated OSB requests (test/support/fuzz-requests.ts): no answer is a 5xx (501 for a method
 *   no route has is HTTP's answer to an unknown method, and counted apart), none hangs, the
 *   process stays up and logs no error, every 4xx has a JSON `error` and `description`, and no 4xx
 *   changes anything: the records, the workflows of the task queue and the objects in the
 *   instances' namespaces are the same before and after, but for the instances a request was
 *   accepted for (2xx);
 * - generated plans with hostile templates, in gotemplate, mustache and jsonnet (endless loops, huge
 *   outputs, deep recursion, unbounded allocation, prototype keys, imports, YAML bombs in sources): each provision fails with a description
 *   in bounded time, and a normal provision succeeds afterwards;
 * - after both, the secrets sweep (test/support/secrets-sweep.ts) finds no credential of the run
 *   in the decoded histories, search attributes, logs, records and descriptions.
 *
 * Sized by INTEROP_FUZZ_REQUESTS (default 3000) and INTEROP_FUZZ_PLANS (default 6);
 * INTEROP_FUZZ_SEED replays a run (the seed is printed with every verdict and failure).
 */
import { randomUUID } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { listRecordsAnywhere, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { instanceNamespace, LABELS, labelValue } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFPlan,
  type SFService,
} from '../../src/resources/types.js';
import { removeRegistry } from '../support/clusters.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { fuzzRequests, type FuzzRequest, type FuzzTargets } from '../support/fuzz-requests.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { sweepForSecrets, type Credential } from '../support/secrets-sweep.js';
import {
  CREDENTIALS,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const REQUESTS = Number(process.env.INTEROP_FUZZ_REQUESTS || 3000);
const HOSTILE_PLANS = Number(process.env.INTEROP_FUZZ_PLANS || 6);
const SEED = process.env.INTEROP_FUZZ_SEED
  ? Number(process.env.INTEROP_FUZZ_SEED)
  : Math.floor(Math.random() * 2 ** 31);
/** Past this, a request counts as hung. The broker answers every request of this run within it. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Node's limit of a request's headers (`--max-http-header-size`), which the broker keeps. */
const HEADER_LIMIT_BYTES = 16 * 1024;
/** Methods some route has: 501 is right for the others only. */
const ROUTED_METHODS = new Set(['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'POST', 'OPTIONS']);

const env = environment();
const [master] = clusters();
const registry = unique('fuzz');
const SERVICE_ID = randomUUID();
const PLAN_ID = randomUUID();
const SCHEMA_PLAN_ID = randomUUID();
const ADMIN = { username: 'fuzz-admin', password: `admin-${randomUUID()}` };
const METRICS_TOKEN = `metrics-${randomUUID()}`;

let operator: { stop(): Promise<void> };
let settings: SystemSettings;
let system: SystemProcess;
let osb: OsbClient;
let basePlan: SFPlan;
const knownInstances = [randomUUID(), randomUUID()];
const knownBindings = [randomUUID()];
/** Credentials the landscape handed out (bindings'), for the sweep. */
const handedOut: Credential[] = [];
/** Wrong passwords the fuzz sent, for the sweep. */
const wrongPasswords = new Set<string>();

console.log(`fuzz seed ${SEED} (INTEROP_FUZZ_SEED=${SEED} replays it)`);

/** The example mustache service and plan under this landscape's ids. */
function catalogObjects(): { service: SFService; plan: SFPlan } {
  const read = (file: string) =>
    parseAllDocuments(readFileSync(`examples/mustache/${file}`, 'utf8'))[0]!.toJS() as KubeObject;
  const service = read('sfservice.yaml') as SFService;
  const plan = read('sfplan.yaml') as SFPlan;
  return {
    service: {
      ...service,
      metadata: { name: SERVICE_ID, namespace: registry },
      spec: { ...service.spec, id: SERVICE_ID, name: `fuzz-${SERVICE_ID}` },
    },
    plan: {
      ...plan,
      metadata: { name: PLAN_ID, namespace: registry, labels: { serviceId: SERVICE_ID, planId: PLAN_ID } },
      spec: { ...plan.spec, id: PLAN_ID, serviceId: SERVICE_ID, name: 'fuzz' },
    },
  };
}

/** A plan of this landscape: the base plan under another id, with its spec changed. */
async function installPlan(id: string, name: string, spec: Partial<SFPlan['spec']>): Promise<void> {
  await applyObject(master!, {
    ...basePlan,
    metadata: { name: id, namespace: registry, labels: { serviceId: SERVICE_ID, planId: id } },
    spec: { ...basePlan.spec, ...spec, id, name },
  } as KubeObject);
}

async function untilInCatalog(planIds: readonly string[]): Promise<void> {
  await eventually(
    'the plans in the catalog',
    async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      const offered = new Set(services?.flatMap((s) => s.plans.map((p) => p.id)));
      return planIds.every((id) => offered.has(id)) ? true : undefined;
    },
    60_000,
  );
}

async function provision(instanceId: string, planId: string, parameters: Record<string, unknown> = {}) {
  const path = `/v2/service_instances/${instanceId}`;
  const accepted = await osb(
    'PUT',
    `${path}?accepts_incomplete=true`,
    provisionBody(SERVICE_ID, planId, parameters),
  );
  expect([accepted.status, accepted.body]).toEqual([
    202,
    expect.objectContaining({ operation: expect.any(String) }),
  ]);
  return untilSettled(
    osb,
    `${path}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    120_000,
  );
}

beforeAll(async () => {
  await registerCluster(master!, registry, env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
  await patchRecordStatus(master!, SFCLUSTER, registry, env.clusters[0]!.id, { phase: 'running' });
  const { service, plan } = catalogObjects();
  await applyObject(master!, service);
  basePlan = (await applyObject(master!, plan)) as SFPlan;
  await installPlan(SCHEMA_PLAN_ID, 'fuzz-schema', {
    schemas: {
      service_instance: {
        create: {
          parameters: {
            $schema: 'http://json-schema.org/draft-06/schema#',
            type: 'object',
            additionalProperties: false,
            properties: { foo: { type: 'string', maxLength: 100 } },
            required: ['foo'],
          },
        },
      },
    },
  } as Partial<SFPlan['spec']>);
  operator = await startOperator();
  settings = await systemSettings({
    INTEROP_NAMESPACE: registry,
    INTEROP_ADMIN_USERNAME: ADMIN.username,
    INTEROP_ADMIN_PASSWORD: ADMIN.password,
    INTEROP_METRICS_TOKEN: METRICS_TOKEN,
  });
  system = await startProcess('all', settings);
  osb = osbClient(system.url);
  await untilInCatalog([PLAN_ID, SCHEMA_PLAN_ID]);
  for (const id of knownInstances) expect((await provision(id, PLAN_ID)).body.state).toBe('succeeded');
  const bound = await osb(
    'PUT',
    `/v2/service_instances/${knownInstances[0]}/service_bindings/${knownBindings[0]}`,
    {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    },
  );
  expect(bound.status).toBe(201);
  const credentials = bound.body.credentials as Record<string, string>;
  handedOut.push(
    ["a binding's password", credentials.password!],
    ["a binding's username", credentials.username!],
  );
});

afterAll(async () => {
  await system?.stop();
  await operator?.stop();
  await removeRegistry(master!, registry).catch(() => undefined);
});

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Sends one request on a connection of its own; rejects when no answer came within the timeout. */
function send(r: FuzzRequest): Promise<Answer> {
  const { port } = new URL(system.url);
  return new Promise((resolve, reject) => {
    // A request line and headers over the server's limit are refused before any body is read, and the connection
    // closed at once: a body sent after them would only meet a closed socket (EPIPE), not an answer.
    // The request line counts towards the limit too.
    const headerBytes = Object.entries(r.headers).reduce(
      (n, [k, v]) => n + k.length + v.length + 4,
      r.method.length + r.path.length + 12,
    );
    const body = headerBytes > HEADER_LIMIT_BYTES ? undefined : r.body;
    // A body always has its length (or is chunked): requests the HTTP parser refuses are tested apart.
    // Keep-alive, as platforms' clients send: the server reads past a body it answered without
    // reading (Connection: close would let it close while a large body is still being sent).
    const headers = {
      Connection: 'keep-alive',
      ...r.headers,
      ...(body && !r.headers['Transfer-Encoding'] ? { 'Content-Length': String(body.length) } : {}),
    };
    const req = request({
      host: '127.0.0.1',
      port,
      method: r.method,
      path: r.path,
      headers,
      agent: false,
    });
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms (hung)`)),
      REQUEST_TIMEOUT_MS,
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) });
        req.destroy();
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}

/** What is wrong with an answer, if anything. */
function problemWith(r: FuzzRequest, a: Answer): string | undefined {
  if (a.status >= 500 && !(a.status === 501 && !ROUTED_METHODS.has(r.method))) return `answered ${a.status}`;
  if (a.status < 400 || r.method === 'HEAD') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(a.body.toString('utf8'));
  } catch {
    return `answered ${a.status} with a body that is not JSON: ${a.body.toString('utf8').slice(0, 200)}`;
  }
  // 410 is `{}`, as the OSB spec has it.
  if (a.status === 410)
    return JSON.stringify(body) === '{}' ? undefined : `answered 410 with ${JSON.stringify(body)}`;
  const { error, description } = (body ?? {}) as { error?: unknown; description?: unknown };
  if (typeof error !== 'string' || !error || typeof description !== 'string' || !description)
    return `answered ${a.status} without an error and a description: ${JSON.stringify(body).slice(0, 200)}`;
  if (!String(a.headers['content-type']).startsWith('application/json'))
    return `answered ${a.status} as ${a.headers['content-type']}`;
  return undefined;
}

/** Everything a request could change, by key, with the instance it belongs to. */
type Snapshot = Map<string, { readonly instanceId: string; readonly value: string }>;

const contentOf = (o: KubeObject): string => {
  const { spec, data, stringData } = o as { spec?: unknown; data?: unknown; stringData?: unknown };
  return `${o.metadata.uid} ${JSON.stringify(spec ?? data ?? stringData ?? null)}`;
};

/**
 * The landscape's state: its records (with their resourceVersion), the executions of its task
 * queue (with their status), the instances' namespaces, and the objects in them (their content).
 */
async function snapshot(): Promise<Snapshot> {
  const state: Snapshot = new Map();
  const selector = `${LABELS.serviceId}=${labelValue(SERVICE_ID)}`;
  const namespaces = new Map<string, string>();
  for (const kind of [SFSERVICEINSTANCE, SFSERVICEBINDING]) {
    for (const r of await listRecordsAnywhere(master!, kind, undefined, selector)) {
      const instanceId = String((r.spec as { instanceId?: string }).instanceId);
      state.set(`${kind.kind} ${r.metadata.namespace}/${r.metadata.name}`, {
        instanceId,
        value: r.metadata.resourceVersion!,
      });
      namespaces.set(r.metadata.namespace!, instanceId);
    }
  }
  const temporal = await temporalClient(settings.payloadKeys);
  try {
    for await (const w of temporal.client.workflow.list({ query: `TaskQueue = "${settings.taskQueue}"` })) {
      const instanceId = String((w.searchAttributes?.OsbInstanceId as string[] | undefined)?.[0]);
      state.set(`workflow ${w.workflowId} ${w.runId}`, { instanceId, value: w.status.name });
    }
  } finally {
    await temporal.close();
  }
  for (const ns of (await master!.core.listNamespace()).items) {
    const name = ns.metadata!.name!;
    if (name.startsWith('sf-'))
      state.set(`namespace ${name}`, { instanceId: `namespace:${name}`, value: ns.metadata!.uid! });
  }
  for (const [namespace, instanceId] of namespaces) {
    const lists = [
      master!.core.listNamespacedSecret({ namespace }),
      master!.core.listNamespacedConfigMap({ namespace }),
      master!.core.listNamespacedService({ namespace }),
      master!.custom.listNamespacedCustomObject({
        group: 'acid.zalan.do',
        version: 'v1',
        plural: 'postgresqls',
        namespace,
      }),
    ];
    for (const list of await Promise.all(lists)) {
      for (const o of (list as { items: KubeObject[] }).items) {
        // The service account token machinery writes the namespace's root CA ConfigMap on its own.
        if (o.metadata.name === 'kube-root-ca.crt') continue;
        state.set(`${o.kind ?? 'object'} ${namespace}/${o.metadata.name}`, {
          instanceId,
          value: contentOf(o),
        });
      }
    }
  }
  return state;
}

/**
 * The changes between two snapshots, except those of the instances in `accepted`. Of the
 * instances' namespaces only those of ids the requests `named` count: other tests' may come and go.
 */
function changes(
  before: Snapshot,
  after: Snapshot,
  accepted: ReadonlySet<string>,
  named: ReadonlySet<string>,
): string[] {
  const namespaces = new Set([...named].map((id) => `namespace ${instanceNamespace(id)}`));
  const allowed = (instanceId: string) =>
    accepted.has(instanceId) ||
    // a namespace of an instance a request was accepted for
    [...accepted].some((id) => instanceId === `namespace:${instanceNamespace(id)}`);
  const changed: string[] = [];
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const b = before.get(key);
    const a = after.get(key);
    if (b?.value === a?.value) continue;
    if (key.startsWith('namespace ') && !namespaces.has(key)) continue;
    if (allowed((a ?? b)!.instanceId)) continue;
    changed.push(`${key}: ${b?.value ?? 'absent'} -> ${a?.value ?? 'absent'}`);
  }
  return changed;
}

/** Waits until no execution of the task queue runs. */
async function untilQuiet(): Promise<void> {
  const temporal = await temporalClient(settings.payloadKeys);
  try {
    await eventually(
      'the operations of the run to end',
      async () => {
        const { count } = await temporal.client.workflow.count(
          `TaskQueue = "${settings.taskQueue}" AND ExecutionStatus = "Running"`,
        );
        return count === 0 ? true : undefined;
      },
      180_000,
    );
  } finally {
    await temporal.close();
  }
}

describe('hostile input at volume', () => {
  const statuses = new Map<number, number>();
  const accepted = new Set<string>();
  const named = new Set<string>();
  let notImplemented = 0;

  test(`GIVEN ${REQUESTS} generated OSB requests THEN no 5xx, none hangs, every 4xx says what is wrong in JSON, and no 4xx changes anything`, async () => {
    await untilQuiet();
    const before = await snapshot();
    const targets: FuzzTargets = {
      username: CREDENTIALS.username,
      password: CREDENTIALS.password,
      serviceId: SERVICE_ID,
      planIds: [PLAN_ID, SCHEMA_PLAN_ID],
      knownInstances,
      knownBindings,
      freshIds: [randomUUID(), randomUUID(), randomUUID(), randomUUID()],
    };
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(fuzzRequests(targets), async (r) => {
        if (r.wrongPassword) wrongPasswords.add(r.wrongPassword);
        if (r.instanceId !== undefined) named.add(r.instanceId);
        let answer: Answer;
        try {
          answer = await send(r);
        } catch (err) {
          throw new Error(`${r.method} ${r.path.slice(0, 200)}: ${(err as Error).message}`);
        }
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === 501) notImplemented++;
        if (answer.status >= 200 && answer.status < 300 && !['GET', 'HEAD', 'OPTIONS'].includes(r.method)) {
          if (r.instanceId !== undefined) accepted.add(r.instanceId);
          const credentials = (
            JSON.parse(answer.body.toString('utf8') || '{}') as { credentials?: Record<string, unknown> }
          ).credentials;
          if (typeof credentials?.password === 'string')
            handedOut.push(["a binding's password", credentials.password]);
        }
        const problem = problemWith(r, answer);
        if (problem) throw new Error(`${r.method} ${r.path.slice(0, 200)}: ${problem}`);
      }),
      { numRuns: REQUESTS, seed: SEED, endOnFailure: false },
    );
    const seconds = Math.round((Date.now() - started) / 1000);

    // THEN the process is up, answers, and logged no failure of its own
    expect((await fetch(`${system.url}/healthz`)).status).toBe(200);
    const errors = readFileSync(system.logFile, 'utf8')
      .split('\n')
      .filter((line) => line.includes('"level":"error"'));
    expect(errors).toEqual([]);

    // AND nothing changed but what an accepted request was for
    await untilQuiet();
    const changed = changes(before, await snapshot(), accepted, named);
    const counts = [...statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`);
    console.log(
      `hostile input: ${REQUESTS} requests in ${seconds} s (seed ${SEED}): ${counts.join(', ')}; ` +
        `5xx: 0 (501 for unrouted methods: ${notImplemented}); hung: 0; crashes: 0; 4xx without a JSON error: 0; ` +
        `accepted for ${accepted.size} instances; state changed by a 4xx: ${changed.length}`,
    );
    expect(changed).toEqual([]);
    expect(before.size).toBeGreaterThan(5);
  }, 900_000);
});

/** A billion laughs: ten levels of aliases, each nine times the one before, as YAML text. */
const YAML_BOMB = [
  'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...Array.from({ length: 9 }, (_, i) => `a${i + 1}: &a${i + 1} [${Array(9).fill(`*a${i}`).join(',')}]`),
].join('\n');

const NESTED = 'plan.spec.metadata.bullets';
/** `depth` mustache sections over the plan's three bullets, around `inner`: 3^depth times `inner`. */
const sections = (depth: number, inner: string) =>
  `${`{{#${NESTED}}}`.repeat(depth)}${inner}${`{{/${NESTED}}}`.repeat(depth)}`;

type Action = 'sources' | 'provision' | 'status';
interface Attack {
  readonly name: string;
  readonly type: 'gotemplate' | 'mustache' | 'jsonnet';
  readonly actions: readonly Action[];
  readonly content: string;
}

/** Hostile templates, and the actions each is tried as. */
const ATTACKS: readonly Attack[] = [
  {
    name: 'an endless loop',
    type: 'gotemplate',
    actions: ['sources', 'provision', 'status'],
    content: '{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}',
  },
  {
    name: 'a huge output',
    type: 'gotemplate',
    actions: ['sources', 'provision', 'status'],
    content: '{{ range until 100000000 }}xxxxxxxxxxxxxxxx{{ end }}',
  },
  {
    name: 'unbounded allocation',
    type: 'gotemplate',
    actions: ['provision', 'status'],
    content: '{{ $x := until 1000000000 }}{{ len $x }}',
  },
  {
    name: 'deep recursion',
    type: 'gotemplate',
    actions: ['sources', 'provision', 'status'],
    content: '{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}',
  },
  {
    name: 'a YAML bomb',
    type: 'gotemplate',
    actions: ['sources', 'provision', 'status'],
    content: YAML_BOMB,
  },
  {
    name: 'a YAML bomb',
    type: 'mustache',
    actions: ['sources', 'provision', 'status'],
    content: YAML_BOMB,
  },
  {
    // An object whose fields would all be inherited if the key became its prototype.
    name: 'a prototype key',
    type: 'gotemplate',
    actions: ['provision'],
    content: '__proto__:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: polluted\n',
  },
  {
    // A status that would read succeeded if the key became its prototype.
    name: 'a prototype key',
    type: 'mustache',
    actions: ['status'],
    content:
      '__proto__:\n  provision:\n    state: succeeded\nconstructor:\n  prototype:\n    provision:\n      state: succeeded\n',
  },
  {
    name: 'an endless loop',
    type: 'mustache',
    actions: ['sources', 'provision', 'status'],
    content: sections(30, 'x'),
  },
  {
    name: 'a huge output',
    type: 'mustache',
    actions: ['sources', 'provision', 'status'],
    content: sections(15, 'x'.repeat(64)),
  },
  { name: 'an unclosed section', type: 'mustache', actions: ['provision', 'status'], content: '{{#plan}}' },
  {
    // 2^100 calls, never deeper than 100 frames.
    name: 'an endless loop',
    type: 'jsonnet',
    actions: ['sources', 'provision', 'status'],
    content: 'local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1); f(100)',
  },
  {
    name: 'a huge output',
    type: 'jsonnet',
    actions: ['sources', 'provision', 'status'],
    content: "std.makeArray(100000000, function(i) 'xxxxxxxxxxxxxxxx')",
  },
  {
    name: 'deep recursion',
    type: 'jsonnet',
    actions: ['sources', 'provision', 'status'],
    content: 'local f(x) = f(x + 1) + 1; f(0)',
  },
  {
    name: "recursion past the thread's stack",
    type: 'jsonnet',
    actions: ['sources', 'provision', 'status'],
    content: 'local f(n) = if n == 0 then 0 else f(n - 1) tailstrict; f(1e15)',
  },
  {
    name: 'an import of a local file',
    type: 'jsonnet',
    actions: ['sources', 'provision', 'status'],
    content: "importstr '/etc/passwd'",
  },
  {
    name: 'a prototype key',
    type: 'jsonnet',
    actions: ['provision'],
    content: "{ __proto__: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'polluted' } } }",
  },
  {
    name: 'a prototype key',
    type: 'jsonnet',
    actions: ['status'],
    content: "{ __proto__: { provision: { state: 'succeeded' } } }",
  },
];

/** A plan with one hostile template: the attack, the action it replaces, noise around it. */
const hostilePlans = fc
  .record({
    attack: fc.constantFrom(...ATTACKS),
    pick: fc.nat(),
    noise: fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789 '), maxLength: 30 }),
  })
  .map(({ attack, pick, noise }) => ({
    attack,
    action: attack.actions[pick % attack.actions.length]!,
    // A YAML comment before it: changes the text, not what the template does.
    content: `# ${noise}\n${attack.content}`,
  }));

describe('without credentials', () => {
  const i = knownInstances[0]!;
  const b = knownBindings[0]!;
  const OSB_ROUTES: [string, string][] = [
    ['GET', '/v2/catalog'],
    ...['PUT', 'PATCH', 'DELETE', 'GET'].map((m): [string, string] => [m, `/v2/service_instances/${i}`]),
    ['GET', `/v2/service_instances/${i}/last_operation`],
    ...['PUT', 'DELETE', 'GET'].map((m): [string, string] => [
      m,
      `/v2/service_instances/${i}/service_bindings/${b}`,
    ]),
    ['GET', `/v2/service_instances/${i}/service_bindings/${b}/last_operation`],
    ['POST', '/v2/catalog'],
    ['GET', '/V2/CATALOG'],
  ];
  const ADMIN_ROUTES: [string, string][] = [
    ['GET', '/admin/instances'],
    ['GET', '/admin/bindings'],
    ['POST', `/admin/instances/${i}/update`],
    ['POST', `/admin/instances/${i}/force-remove`],
    ['POST', `/admin/bindings/${b}/force-remove`],
    ['GET', `/admin/plans/${PLAN_ID}/rollout`],
    ['POST', `/admin/plans/${PLAN_ID}/rollout`],
    ['POST', `/admin/plans/${PLAN_ID}/rollout/pause`],
    ['POST', `/admin/plans/${PLAN_ID}/rollout/resume`],
    ['POST', `/admin/plans/${PLAN_ID}/rollout/abort`],
    ['POST', `/admin/plans/${PLAN_ID}/dry-run`],
    ['GET', '/admin/rollouts'],
    ['GET', `/admin/rollouts/plan-${PLAN_ID}`],
    ...['pause', 'resume', 'abort'].map((a): [string, string] => [
      'POST',
      `/admin/rollouts/plan-${PLAN_ID}/${a}`,
    ]),
    ['POST', `/admin/instances/${i}/actions/x-backup`],
    ['GET', `/admin/instances/${i}/actions/x-backup/${randomUUID()}`],
    ['POST', `/admin/instances/${i}/secrets/password/rotate`],
    ['GET', '/ADMIN/instances'],
  ];
  const basic = (user: string, password: string) =>
    `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  test.each([...OSB_ROUTES, ...ADMIN_ROUTES])(
    'GIVEN no credentials, or the other API’s WHEN %s %s THEN 401 with a JSON error, and nothing changes',
    async (method, path) => {
      const admin = path.toLowerCase().startsWith('/admin');
      const other = admin
        ? basic(CREDENTIALS.username, CREDENTIALS.password)
        : basic(ADMIN.username, ADMIN.password);
      for (const authorization of [
        undefined,
        other,
        basic(admin ? ADMIN.username : CREDENTIALS.username, 'wrong-password'),
      ]) {
        const res = await fetch(`${system.url}${path}`, {
          method,
          headers: {
            'X-Broker-API-Version': '2.17',
            'Content-Type': 'application/json',
            ...(authorization ? { Authorization: authorization } : {}),
          },
          ...(method === 'GET' ? {} : { body: JSON.stringify({ service_id: SERVICE_ID, plan_id: PLAN_ID }) }),
        });
        expect([method, path, res.status, await res.json()]).toEqual([
          method,
          path,
          401,
          { error: 'Unauthorized', description: expect.any(String) },
        ]);
      }
    },
  );

  test('GIVEN the metrics token is set WHEN /metrics is read without it THEN 401; with it, the metrics', async () => {
    expect((await fetch(`${system.metricsUrl}/metrics`)).status).toBe(401);
    expect(
      (await fetch(`${system.metricsUrl}/metrics`, { headers: { Authorization: 'Bearer wrong-token-1' } }))
        .status,
    ).toBe(401);
    const res = await fetch(`${system.metricsUrl}/metrics`, {
      headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('# TYPE');
  });
});

describe('hostile templates', () => {
  test(`GIVEN ${HOSTILE_PLANS} generated plans with hostile templates THEN each provision fails with a description in bounded time, and a normal provision succeeds after them`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(hostilePlans, { minLength: HOSTILE_PLANS, maxLength: HOSTILE_PLANS }),
        async (plans) => {
          const ids = plans.map(() => randomUUID());
          for (const [i, p] of plans.entries()) {
            await installPlan(ids[i]!, `hostile-${i}`, {
              // A failure retried rather than failed at once ends at this deadline.
              maximum_polling_duration: 30,
              templates: [
                ...basePlan.spec.templates.filter((t) => t.action !== p.action),
                { action: p.action, type: p.attack.type, content: p.content },
              ],
            });
          }
          await untilInCatalog(ids);
          const outcomes = await Promise.all(ids.map((id) => provision(randomUUID(), id)));
          console.log(
            outcomes
              .map(
                (o, i) =>
                  `${plans[i]!.attack.name} (${plans[i]!.attack.type}, ${plans[i]!.action}): ${String(o.body.description).slice(0, 160)}`,
              )
              .join('\n'),
          );
          for (const [i, outcome] of outcomes.entries()) {
            const p = plans[i]!;
            const what = `${p.attack.name} (${p.attack.type}) as the ${p.action} template`;
            const { state, description } = outcome.body as { state?: string; description?: string };
            expect([what, state]).toEqual([what, 'failed']);
            expect([what, typeof description]).toEqual([what, 'string']);
            expect(description!.length).toBeGreaterThan(10);
            // The description names what went wrong; it never carries the output it stopped.
            expect(description!.length).toBeLessThan(2000);
            expect(description).not.toMatch(/xxxxxxxxxxxxxxxx|lollol/);
          }
          // The worker is still at work: a normal provision succeeds.
          expect((await provision(randomUUID(), PLAN_ID)).body.state).toBe('succeeded');
        },
      ),
      { numRuns: 1, seed: SEED },
    );
  }, 600_000);
});

describe('one tenant cannot reach another', () => {
  const victimId = randomUUID();
  const victim = () => instanceNamespace(victimId);
  beforeAll(async () => {
    expect((await provision(victimId, PLAN_ID)).body.state).toBe('succeeded');
  });
  /** A ConfigMap, or a source, in the namespace a parameter names: what a careless plan renders. */
  const FROM_PARAMETER: readonly [string, Action, string][] = [
    [
      'an object to apply',
      'provision',
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: intruder\n  namespace: "{{instance.spec.parameters.ns}}"\ndata:\n  by: "{{instance.metadata.name}}"\n',
    ],
    [
      'a source to read',
      'sources',
      'stolen:\n  apiVersion: v1\n  kind: Secret\n  name: "{{instance.spec.parameters.name}}"\n  namespace: "{{instance.spec.parameters.ns}}"\n',
    ],
  ];

  test.each(FROM_PARAMETER)(
    "GIVEN a plan whose template takes the namespace of %s from a parameter WHEN a tenant names another instance's namespace, or the registry's THEN the operation fails saying so, and nothing is written there",
    async (_what, action, content) => {
      const planId = randomUUID();
      await installPlan(planId, `careless-${action}`, {
        // A failure retried rather than failed at once ends at this deadline.
        maximum_polling_duration: 30,
        templates: [
          ...basePlan.spec.templates.filter((t) => t.action !== action && t.action !== 'status'),
          { action, type: 'mustache', content },
          { action: 'status', type: 'mustache', content: 'provision:\n  state: succeeded\n' },
        ],
      });
      await untilInCatalog([planId]);
      for (const ns of [victim(), registry]) {
        const settled = await provision(randomUUID(), planId, {
          ns,
          name: 'credentials',
        });
        const { state, description } = settled.body as { state?: string; description?: string };
        expect([ns, state]).toEqual([ns, 'failed']);
        expect(description).toContain(
          ns === registry ? "the registry's namespace" : 'the namespace of another instance',
        );
      }
      const intruders = await master!.core.listNamespacedConfigMap({ namespace: victim() });
      expect(intruders.items.map((c) => c.metadata!.name)).not.toContain('intruder');
      // The same plan, told its own namespace, works: the refusal is of the other namespace alone.
      const own = randomUUID();
      const settled = await provision(own, planId, { ns: instanceNamespace(own), name: 'credentials' });
      expect(settled.body.state).toBe('succeeded');
    },
  );
});

describe('a bind while its instance is deprovisioned', () => {
  test('GIVEN a deprovision in progress WHEN a bind comes THEN 422 ConcurrencyError at once, and no binding is made', async () => {
    // A plan whose deprovision stays in progress until its deadline.
    const planId = randomUUID();
    await installPlan(planId, 'slow-deprovision', {
      maximum_polling_duration: 20,
      templates: [
        ...basePlan.spec.templates.filter((t) => t.action !== 'status'),
        {
          action: 'status',
          type: 'mustache',
          content:
            'provision:\n  state: succeeded\nbind:\n  state: succeeded\ndeprovision:\n  state: in progress\n',
        },
      ],
    });
    await untilInCatalog([planId]);
    const instanceId = randomUUID();
    expect((await provision(instanceId, planId)).body.state).toBe('succeeded');
    const path = `/v2/service_instances/${instanceId}`;
    const deleting = await osb(
      'DELETE',
      `${path}?accepts_incomplete=true&service_id=${SERVICE_ID}&plan_id=${planId}`,
    );
    expect(deleting.status).toBe(202);
    const bindingId = randomUUID();
    const bind = await osb('PUT', `${path}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: planId,
    });
    expect([bind.status, bind.body]).toEqual([
      422,
      {
        error: 'ConcurrencyError',
        description: 'The service instance is being deprovisioned; try again when that has finished.',
      },
    ]);
    const bindings = await listRecordsAnywhere(master!, SFSERVICEBINDING, instanceNamespace(instanceId));
    expect(bindings).toEqual([]);
  });
});

describe('secrets after the run', () => {
  test('GIVEN the fuzz and the hostile plans THEN no credential of the run is in the decoded histories, search attributes, logs, records or Events', async () => {
    // Stopped first, so that its log is whole; operations still running are read as far as they got.
    await system.stop();
    const result = await sweepForSecrets({
      taskQueue: settings.taskQueue,
      payloadKeys: settings.payloadKeys,
      credentials: [
        ['the broker password', CREDENTIALS.password],
        ['the admin password', ADMIN.password],
        ['the metrics token', METRICS_TOKEN],
        ['the payload key', settings.payloadKeys.split(':')[1]!],
        ...handedOut,
        ...[...wrongPasswords].map((p): Credential => ['a wrong password the fuzz sent', p]),
      ],
      logFiles: [system.logFile],
      records: { master: master!, labelSelector: `${LABELS.serviceId}=${labelValue(SERVICE_ID)}` },
      eventNamespaces: [registry, ...knownInstances.map((id) => instanceNamespace(id))],
    });
    console.log(
      `secrets sweep: ${result.executions} executions, ${result.payloads} payloads decoded, ` +
        `${result.corpus.size} sources read, ${wrongPasswords.size + handedOut.length + 4} credentials sought: ${result.hits.length} hits`,
    );
    expect(result.hits).toEqual([]);
    // The sweep read what it should: every operation of the run, and their payloads decoded (the
    // organization the provisions named is in the encrypted input alone).
    expect(result.executions).toBeGreaterThan(5);
    expect(result.payloads).toBeGreaterThan(result.executions);
    expect(handedOut.length).toBeGreaterThanOrEqual(2);
    const decoded = [...result.corpus.entries()].filter(([where]) => where.startsWith('workflow'));
    expect(decoded.some(([, text]) => text.includes(`"planId":"${PLAN_ID}"`))).toBe(true);
  }, 300_000);
});
