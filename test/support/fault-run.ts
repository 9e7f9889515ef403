/**
 * What the fault tests share: their plans (the mustache PostgreSQL plan with every operation
 * asynchronous, and a twin whose operator never reports), a platform that runs operations the way
 * an OSB platform does (retrying a request it got no answer to, polling last_operation), a record
 * of every accepted operation for the audit, and the sizes of a run.
 */
import { randomUUID } from 'node:crypto';
import { applyObject } from '../../src/kube/objects.js';
import { resourceName } from '../../src/resources/names.js';
import type { KubeObject, SFPlan } from '../../src/resources/types.js';
import type { AcceptedOperation, ExpectedInstance, PlanKind } from './audit.js';
import type { Credential } from './secrets-sweep.js';
import { clusters, environment, eventually } from './env.js';
import { osbClient, provisionBody, type OsbClient, type OsbResponse } from './osb.js';
import { CREDENTIALS, installCatalog } from './system.js';

export const SERVICE_ID = '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01';
/** The mustache plan of the examples with asynchronous bindings: every operation answers 202. */
export const PLAN_ID = 'f4a17c1e-3b0d-4d55-9c1e-0fa0175e0001';
/** The same plan, whose status template never reports the provision done, with a short deadline. */
export const SILENT_PLAN_ID = 'f4a17c1e-3b0d-4d55-9c1e-0fa0175e0002';
/** The deadline of the silent plan's operations (`maximum_polling_duration`), in seconds. */
export const SILENT_DEADLINE_SECONDS = 15;

/** The sizes of a run: INTEROP_FAULT_OPERATIONS operations, INTEROP_FAULT_KILLS kills. */
export function faultSizes(defaults: { operations: number; kills: number }): {
  operations: number;
  kills: number;
} {
  const read = (name: string, fallback: number): number => {
    const raw = process.env[name];
    if (!raw) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, not "${raw}"`);
    return n;
  };
  return {
    operations: read('INTEROP_FAULT_OPERATIONS', defaults.operations),
    kills: read('INTEROP_FAULT_KILLS', defaults.kills),
  };
}

/** Installs the example mustache catalog and the fault plans; resolves once the broker at `url` serves them. */
export async function installFaultPlans(url: string): Promise<void> {
  const installed = await installCatalog('examples/mustache');
  const mustache = installed.find((o) => o.kind === 'SFPlan') as SFPlan;
  const [master] = clusters();
  const plan = (id: string, name: string, spec: Partial<SFPlan['spec']>): KubeObject => ({
    apiVersion: mustache.apiVersion,
    kind: mustache.kind,
    metadata: { name: id, namespace: environment().namespace },
    spec: {
      ...mustache.spec,
      id,
      name,
      manager: { ...mustache.spec.manager, async: true, asyncBinding: true },
      // An instance of the silent plan can move to the plan that answers.
      planUpdatable: true,
      ...spec,
    },
  });
  await applyObject(master!, plan(PLAN_ID, 'faults', {}));
  await applyObject(
    master!,
    plan(SILENT_PLAN_ID, 'faults-silent', {
      maximum_polling_duration: SILENT_DEADLINE_SECONDS,
      templates: mustache.spec.templates.map((t) =>
        t.action === 'status' ? { ...t, content: silentStatus(t.content ?? '') } : t,
      ),
    }),
  );
  const osb = osbClient(url);
  await eventually('the fault plans in the catalog', async () => {
    const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
    const ids = services?.flatMap((s) => s.plans.map((p) => p.id)) ?? [];
    return ids.includes(PLAN_ID) && ids.includes(SILENT_PLAN_ID) ? true : undefined;
  });
}

/** The status template with the provision (and so the update) `in progress` whatever the operator does. */
function silentStatus(content: string): string {
  const start = content.indexOf('provision:');
  const end = content.indexOf('bind:');
  if (start < 0 || end < 0)
    throw new Error('the mustache plan status template has no provision or bind part');
  return `${content.slice(0, start)}provision:\n  state: in progress\n  description: waiting for the operator\n${content.slice(end)}`;
}

/**
 * The plan's objects for the audit: the postgresql, and what the example operator makes of it (its
 * Service, and a credentials Secret per user: the instance's own and one per live binding).
 */
export const PLAN_KINDS: readonly PlanKind[] = [
  { label: 'postgresql', group: 'acid.zalan.do', version: 'v1', plural: 'postgresqls', count: () => 1 },
  {
    label: 'Service',
    group: '',
    version: 'v1',
    plural: 'services',
    count: () => 1,
    select: (o) => o.metadata.labels?.application === 'spilo',
  },
  {
    label: 'user Secret',
    group: '',
    version: 'v1',
    plural: 'secrets',
    count: (_instance, bindings) => 1 + bindings.length,
    select: (o) => o.metadata.labels?.application === 'spilo',
  },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How a platform behaves beyond sending each request and polling its operation. */
export interface PlatformOptions {
  /**
   * Tells whether an operation's record (the instance's, or the binding's) is gone: with it, the
   * platform measures how long each deletion takes to end after its work was done.
   */
  readonly recordGone?: (what: Operation) => Promise<boolean>;
  /** The share of provisions and binds sent again identically, once while they run and once after. @default 0 */
  readonly repeatShare?: number;
  /**
   * Sends a request answered 422 `ConcurrencyError` again a moment later, as a platform's user does
   * while the broker's own operations (rollouts) run on the instance. @default false
   */
  readonly retryWhileBusy?: boolean;
  /**
   * Rotates the binding a life keeps (`predecessor_binding_id`; the plan must be binding_rotatable)
   * and unbinds the predecessor after. @default false
   */
  readonly rotateBindings?: boolean;
}

/** An operation on an instance, or on one of its bindings. */
export interface Operation {
  readonly instanceId: string;
  readonly bindingId?: string;
  readonly type: string;
}

/**
 * A platform: sends OSB requests to whichever broker is current, retries a request it got no
 * answer to (connection refused or reset, 5xx) as a platform does, and keeps every accepted
 * operation and what should exist at the end.
 */
export class Platform {
  readonly operations: AcceptedOperation[] = [];
  readonly instances = new Map<string, { id: string; live: boolean; bindings: Map<string, boolean> }>();
  /** Answers other than the ones a request is expected to get, kept for the test to assert on. */
  readonly surprises: string[] = [];
  /** Operations accepted and not yet settled. */
  inFlight = 0;
  /** Requests without an answer, retried. */
  retries = 0;
  /** Requests sent again after no answer and answered as ended: the first sending's operation ended meanwhile. */
  endedBeforeAnswered = 0;
  /** Requests answered 422 `ConcurrencyError`, sent again (with `retryWhileBusy`). */
  busyRetries = 0;
  /** The credentials the bindings handed out, for the secrets sweep. */
  readonly credentials: Credential[] = [];
  /**
   * The description of every answer that had one (errors, last_operation), for the secrets sweep;
   * not whole bodies: a binding's answer holds its credentials by right.
   */
  readonly descriptions: string[] = [];

  /**
   * Each deletion (deprovision, unbind) that ended, with how long its answer came after its work was
   * done: after its record was found gone (the operation's last step), or 0 if it never was while
   * the platform polled.
   */
  readonly deletions: { readonly what: Operation; readonly state: string; readonly lateMs: number }[] = [];

  /** Identical repeats of provisions and binds sent, and those answered otherwise than the first request. */
  repeats = 0;
  readonly repeatSurprises: string[] = [];
  /** Operations still in progress when the platform stopped polling (`stopPollingAt`). */
  readonly stuck: string[] = [];
  /** When the platform stops polling operations that have not ended (epoch ms): those are stuck. */
  stopPollingAt = Number.POSITIVE_INFINITY;
  /** The OSB credentials the platform presents; a platform's rotation replaces them. */
  credentialsInUse: { readonly username: string; readonly password: string } = CREDENTIALS;

  constructor(
    private broker: () => string,
    private readonly options: PlatformOptions = {},
  ) {}

  private get osb(): OsbClient {
    return osbClient(this.broker(), '2.17', this.credentialsInUse);
  }

  /** The run's instances, for the audit. */
  expected(): ExpectedInstance[] {
    return [...this.instances.values()].map((i) => ({
      id: i.id,
      live: i.live,
      bindings: [...i.bindings].map(([id, live]) => ({ id, live })),
    }));
  }

  /**
   * Sends the request until it gets an answer that is not a 5xx; a missing answer is retried.
   * `retried` says the answer is to a request sent again, whose first sending may have been acted on.
   */
  async send(method: string, path: string, body?: unknown): Promise<OsbResponse & { retried: boolean }> {
    for (let attempt = 1; ; attempt += 1) {
      const res = await this.osb(method, path, body).catch((err: unknown) => ({ error: err }));
      if ('status' in res && typeof res.body?.description === 'string')
        this.descriptions.push(`${method} ${path}: ${res.status} ${res.body.description}`);
      const busy = 'status' in res && res.status === 422 && res.body?.error === 'ConcurrencyError';
      if (busy && this.options.retryWhileBusy && attempt <= 120) {
        // Another operation of the instance runs (a rollout's update): a platform tries again later.
        this.busyRetries += 1;
        await sleep(1000);
        continue;
      }
      if ('status' in res && res.status < 500) return { ...res, retried: attempt > 1 };
      if ('status' in res && res.status !== 503)
        this.surprises.push(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      if (attempt > 600) throw new Error(`${method} ${path}: no answer after ${attempt} attempts`);
      this.retries += 1;
      await sleep(500);
    }
  }

  /** The path (with its query) and body of an operation's request. */
  static request(
    what: Operation,
    method: string,
    body: unknown,
  ): { path: string; base: string; body: unknown } {
    const base = `/v2/service_instances/${what.instanceId}${what.bindingId ? `/service_bindings/${what.bindingId}` : ''}`;
    const query =
      method === 'DELETE'
        ? `?accepts_incomplete=true&service_id=${SERVICE_ID}&plan_id=${(body as { plan_id: string }).plan_id}`
        : '?accepts_incomplete=true';
    return { path: `${base}${query}`, base, body: method === 'DELETE' ? undefined : body };
  }

  /**
   * Sends an operation's request and polls its last_operation until it settles; returns the settled
   * state. An answer other than 202 is a surprise and ends the operation (`refused`).
   */
  async operate(
    what: Operation,
    method: string,
    body: unknown,
    expected: 'succeeded' | 'failed' = 'succeeded',
  ): Promise<string> {
    const request = Platform.request(what, method, body);
    const res = await this.send(method, request.path, request.body);
    if (res.retried && expected === 'succeeded' && Platform.endedMeanwhile(method, res)) {
      // A request sent again after no answer: what the first started may have ended meanwhile.
      this.endedBeforeAnswered += 1;
      return 'succeeded';
    }
    if (res.status !== 202 || typeof res.body.operation !== 'string') {
      this.surprises.push(`${what.type} ${request.base}: ${res.status} ${JSON.stringify(res.body)}`);
      return 'refused';
    }
    const repeatable = method === 'PUT' && expected === 'succeeded';
    const operation = res.body.operation;
    // A platform that got no answer sends the same request again: the same operation, or its end.
    if (repeatable && this.repeatNow())
      await this.repeat(what, request, (again) =>
        again.status === 202
          ? again.body.operation === operation
          : again.status === 200 || again.status === 201,
      );
    const state = await this.follow(what, operation, expected);
    // And again once it ended: 200, whatever the broker did to the instance meanwhile.
    if (repeatable && state === 'succeeded' && this.repeatNow())
      await this.repeat(what, request, (again) => again.status === 200);
    return state;
  }

  /** OSB's answers to a request whose operation has ended: 200 or 201 for a PUT, 410 for a DELETE. */
  private static endedMeanwhile(method: string, res: OsbResponse): boolean {
    return method === 'DELETE'
      ? res.status === 410
      : method === 'PUT' && (res.status === 200 || res.status === 201);
  }

  private repeatNow(): boolean {
    return Math.random() < (this.options.repeatShare ?? 0);
  }

  private async repeat(
    what: Operation,
    request: { path: string; base: string; body: unknown },
    expected: (res: OsbResponse) => boolean,
  ): Promise<void> {
    this.repeats += 1;
    const again = await this.send('PUT', request.path, request.body);
    if (!expected(again))
      this.repeatSurprises.push(
        `repeated ${what.type} ${request.base}: ${again.status} ${JSON.stringify(again.body)}`,
      );
  }

  /** Records `operation` as accepted and polls its last_operation until it settles; returns the state. */
  async follow(
    what: Operation,
    operation: string,
    expected: 'succeeded' | 'failed' = 'succeeded',
  ): Promise<string> {
    const { base } = Platform.request(what, 'GET', undefined);
    this.operations.push({
      instanceId: what.instanceId,
      ...(what.bindingId ? { bindingId: what.bindingId } : {}),
      operation,
      expected,
    });
    this.inFlight += 1;
    const deletion = what.type === 'deprovision' || what.type === 'unbind';
    let goneAt: number | undefined;
    try {
      const poll = `${base}/last_operation?operation=${encodeURIComponent(operation)}`;
      for (;;) {
        if (Date.now() > this.stopPollingAt) {
          this.stuck.push(`${what.type} ${base} (${operation})`);
          return 'stuck';
        }
        const state = await this.send('GET', poll);
        if (state.status !== 200) {
          this.surprises.push(`${what.type} ${poll}: ${state.status} ${JSON.stringify(state.body)}`);
          return 'unknown';
        }
        if (state.body.state !== 'in progress') {
          if (deletion)
            this.deletions.push({
              what,
              state: String(state.body.state),
              lateMs: goneAt === undefined ? 0 : Date.now() - goneAt,
            });
          return String(state.body.state);
        }
        if (deletion && goneAt === undefined && (await this.options.recordGone?.(what).catch(() => false)))
          goneAt = Date.now();
        await sleep(300);
      }
    } finally {
      this.inFlight -= 1;
    }
  }

  /** Provisions an instance of `planId`; returns its id and settled state. */
  async provision(
    planId = PLAN_ID,
    expected: 'succeeded' | 'failed' = 'succeeded',
    parameters?: Record<string, unknown>,
  ) {
    const id = randomUUID();
    this.instances.set(id, { id, live: true, bindings: new Map() });
    const state = await this.operate(
      { instanceId: id, type: 'provision' },
      'PUT',
      provisionBody(SERVICE_ID, planId, parameters),
      expected,
    );
    return { id, state };
  }

  async update(instanceId: string, parameters: Record<string, unknown>, planId = PLAN_ID) {
    return this.operate({ instanceId, type: 'update' }, 'PATCH', {
      service_id: SERVICE_ID,
      plan_id: planId,
      parameters,
    });
  }

  /** Binds the instance; with `predecessor`, rotates that binding (OSB's `predecessor_binding_id`). */
  async bind(instanceId: string, planId = PLAN_ID, predecessor?: string) {
    const id = randomUUID();
    const bindings = this.instances.get(instanceId)!.bindings;
    bindings.set(id, true);
    const state = await this.operate({ instanceId, bindingId: id, type: 'bind' }, 'PUT', {
      service_id: SERVICE_ID,
      plan_id: planId,
      ...(predecessor ? { predecessor_binding_id: predecessor } : {}),
    });
    // A binding that failed leaves nothing behind.
    if (state !== 'succeeded') bindings.set(id, false);
    else await this.fetchCredentials(instanceId, id);
    return { id, state };
  }

  /** Fetches a binding made asynchronously, as a platform does once it succeeded, and keeps its credentials. */
  async fetchCredentials(instanceId: string, bindingId: string): Promise<void> {
    const res = await this.send('GET', `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`);
    const credentials = res.body.credentials as Record<string, unknown> | undefined;
    if (res.status !== 200 || typeof credentials?.password !== 'string') {
      this.surprises.push(`fetch binding ${bindingId}: ${res.status} without a password`);
      return;
    }
    this.credentials.push(["a binding's password", credentials.password]);
  }

  async unbind(instanceId: string, bindingId: string, planId = PLAN_ID) {
    const state = await this.operate({ instanceId, bindingId, type: 'unbind' }, 'DELETE', {
      plan_id: planId,
    });
    if (state === 'succeeded') this.instances.get(instanceId)!.bindings.set(bindingId, false);
    return state;
  }

  async deprovision(instanceId: string, planId = PLAN_ID) {
    const state = await this.operate({ instanceId, type: 'deprovision' }, 'DELETE', { plan_id: planId });
    if (state === 'succeeded') this.instances.get(instanceId)!.live = false;
    return state;
  }

  /**
   * One instance's life in five operations: provision, bind, update, unbind; then either a second
   * binding that stays (`keep`) or the deprovision. Stops at the first operation that does not
   * succeed (the audit reports it).
   */
  async lifecycle(keep: boolean, planId = PLAN_ID): Promise<void> {
    const { id, state } = await this.provision(planId);
    if (state !== 'succeeded') return;
    const first = await this.bind(id, planId);
    if (first.state !== 'succeeded') return;
    if ((await this.update(id, { generation: 2 }, planId)) !== 'succeeded') return;
    if ((await this.unbind(id, first.id, planId)) !== 'succeeded') return;
    if (!keep) {
      await this.deprovision(id, planId);
      return;
    }
    const kept = await this.bind(id, planId);
    // With `rotateBindings`, the kept binding is rotated, and its predecessor unbound once the successor works.
    if (!this.options.rotateBindings || kept.state !== 'succeeded') return;
    const successor = await this.bind(id, planId, kept.id);
    if (successor.state === 'succeeded') await this.unbind(id, kept.id, planId);
  }
}

/** The operations of one lifecycle. */
export const LIFECYCLE_OPERATIONS = 5;

/** The instance namespace's name of an OSB instance id. */
export const instanceName = (id: string): string => resourceName(id);
