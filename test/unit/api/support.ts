/**
 * What the HTTP-layer tests share: the test catalog (the example service and plan, and variants of
 * the plan, one per rule), an in-memory ServiceBroker that records its calls, and a client that
 * sends the OSB headers.
 */
import type Koa from 'koa';
import supertest from 'supertest';
import { createApp, type AppOptions } from '../../../src/api/app.js';
import type { Logger } from '../../../src/log.js';
import { catalogLookup } from '../../../src/osb/catalog.js';
import { gone, notFound } from '../../../src/osb/errors.js';
import { checkUpdate } from '../../../src/osb/rules.js';
import type {
  BindOutcome,
  BindingView,
  CatalogSource,
  InstanceView,
  LastOperation,
  OperationOutcome,
  RequestMeta,
  ServiceBroker,
} from '../../../src/osb/service-broker.js';
import {
  MemoryCatalog,
  PLAN_ID,
  SERVICE_ID,
  examplePlan,
  exampleService,
  planVariant,
  serviceVariant,
} from '../../fixtures/catalog/index.js';

export { PLAN_ID, SERVICE_ID } from '../../fixtures/catalog/index.js';

/** Plan ids of the test catalog, each a variant of the example plan for one rule. */
export const PLANS = {
  /** The example plan: async, planUpdatable, bindable, draft-06 create schema requiring `foo`. */
  example: PLAN_ID,
  /** Synchronous, no schemas. */
  sync: 'plan-sync',
  /** Synchronous instances, asynchronous bindings. */
  asyncBinding: 'plan-async-binding',
  /** maintenance_info 2.0.0. */
  maintained: 'plan-maintained',
  /** plan_updateable false. */
  fixed: 'plan-fixed',
  /** Accepts instances of plan-sync only (update_predecessors). */
  picky: 'plan-picky',
  /** bindable false. */
  unbindable: 'plan-unbindable',
  /** manager.requiresApp. */
  app: 'plan-app',
  /** bindingRotatable, and a bindingLifetime. */
  rotatable: 'plan-rotatable',
  /** Update and binding schemas (draft-07). */
  schemas: 'plan-schemas',
  /** A create schema ajv cannot compile. */
  brokenSchema: 'plan-broken-schema',
  /** The plans of the other service, which is not plan_updateable (and they say nothing). */
  other: 'plan-other',
  other2: 'plan-other-2',
  /** The plan of the service that allows context updates. */
  contextual: 'plan-contextual',
} as const;

export const OTHER_SERVICE_ID = 'service-other';
export const CONTEXT_SERVICE_ID = 'service-contextual';

const sync = { async: false, asyncBinding: false };

/** The test catalog, fresh for each test. */
export function testCatalog(): MemoryCatalog {
  return new MemoryCatalog(
    [
      exampleService(),
      serviceVariant({ id: OTHER_SERVICE_ID, name: 'other', planUpdatable: false }),
      serviceVariant({ id: CONTEXT_SERVICE_ID, name: 'contextual', allowContextUpdates: true }),
    ],
    [
      { ...examplePlan(), metadata: { ...examplePlan().metadata, uid: 'uid-example', resourceVersion: '1' } },
      planVariant(PLANS.sync, 'sync', { manager: sync, schemas: undefined }),
      planVariant(PLANS.asyncBinding, 'async-binding', {
        manager: { async: false, asyncBinding: true },
        schemas: undefined,
      }),
      planVariant(PLANS.maintained, 'maintained', {
        manager: sync,
        schemas: undefined,
        maintenance_info: { version: '2.0.0', description: 'PostgreSQL 16' },
      }),
      planVariant(PLANS.fixed, 'fixed', { manager: sync, schemas: undefined, planUpdatable: false }),
      planVariant(PLANS.picky, 'picky', {
        manager: sync,
        schemas: undefined,
        update_predecessors: [PLANS.sync],
      }),
      planVariant(PLANS.unbindable, 'unbindable', { manager: sync, schemas: undefined, bindable: false }),
      planVariant(PLANS.app, 'app', { manager: { ...sync, requiresApp: true }, schemas: undefined }),
      planVariant(PLANS.rotatable, 'rotatable', {
        manager: sync,
        schemas: undefined,
        bindingRotatable: true,
        bindingLifetime: { expiresAfter: '720h', renewBefore: '168h' },
      }),
      planVariant(PLANS.schemas, 'schemas', {
        manager: sync,
        schemas: {
          service_instance: {
            update: {
              parameters: {
                $schema: 'http://json-schema.org/draft-07/schema#',
                type: 'object',
                properties: { size: { type: 'integer', minimum: 1, maximum: 10 } },
                additionalProperties: false,
              },
            },
          },
          service_binding: {
            create: {
              parameters: {
                $schema: 'http://json-schema.org/draft-07/schema#',
                type: 'object',
                properties: { role: { enum: ['reader', 'writer'] } },
                required: ['role'],
              },
            },
          },
        },
      }),
      planVariant(PLANS.brokenSchema, 'broken-schema', {
        manager: sync,
        schemas: {
          service_instance: {
            create: { parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'nope' } },
          },
        },
      }),
      planVariant(PLANS.other, 'other', {
        serviceId: OTHER_SERVICE_ID,
        manager: sync,
        schemas: undefined,
        planUpdatable: undefined,
      }),
      planVariant(PLANS.other2, 'other-2', {
        serviceId: OTHER_SERVICE_ID,
        manager: sync,
        schemas: undefined,
        planUpdatable: undefined,
      }),
      planVariant(PLANS.contextual, 'contextual', {
        serviceId: CONTEXT_SERVICE_ID,
        manager: sync,
        schemas: undefined,
      }),
    ],
  );
}

/** One recorded call of the fake broker. */
export interface Call {
  readonly method: keyof ServiceBroker;
  readonly args: readonly unknown[];
}

type Overrides = { -readonly [K in keyof ServiceBroker]?: ServiceBroker[K] };

/**
 * An in-memory ServiceBroker for HTTP-layer tests. By default it answers as a broker would for a
 * new resource: 202 `<op>:1` when the request accepts incomplete answers, else done. Reads answer
 * from `instances`, `bindings` and `lastOperations`. `respond` replaces any method.
 *
 * An update is decided first as the real broker decides it: by `checkUpdate` on the instance in
 * `instances`, over `catalog`. An update it refuses is not recorded in `calls`: like the real
 * broker, it starts nothing.
 */
export class FakeBroker implements ServiceBroker {
  readonly calls: Call[] = [];
  readonly instances = new Map<string, InstanceView>();
  /** Keyed `<instance_id>/<binding_id>`. */
  readonly bindings = new Map<string, BindingView>();
  /** Keyed by instance id, or `<instance_id>/<binding_id>`. */
  readonly lastOperations = new Map<string, LastOperation>();
  readonly respond: Overrides = {};

  constructor(private readonly catalog: CatalogSource = testCatalog()) {}

  private record(method: keyof ServiceBroker, args: unknown[]): void {
    this.calls.push({ method, args });
  }

  /** The calls of one method, as their first argument. */
  requests(method: keyof ServiceBroker): unknown[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args[0]);
  }

  /** The RequestMeta of the last state-changing call. */
  lastMeta(): RequestMeta | undefined {
    return this.calls.at(-1)?.args[1] as RequestMeta | undefined;
  }

  async provision(...args: Parameters<ServiceBroker['provision']>): Promise<OperationOutcome> {
    this.record('provision', args);
    if (this.respond.provision) return this.respond.provision(...args);
    return args[0].acceptsIncomplete
      ? { kind: 'accepted', operation: 'provision:1' }
      : { kind: 'done', created: true };
  }

  async update(...args: Parameters<ServiceBroker['update']>): Promise<OperationOutcome> {
    const [req] = args;
    checkUpdate(
      catalogLookup(this.catalog.services(), this.catalog.plans()),
      this.instances.get(req.instanceId),
      req,
    );
    this.record('update', args);
    if (this.respond.update) return this.respond.update(...args);
    return args[0].acceptsIncomplete
      ? { kind: 'accepted', operation: 'update:1' }
      : { kind: 'done', created: false };
  }

  async deprovision(...args: Parameters<ServiceBroker['deprovision']>): Promise<OperationOutcome> {
    this.record('deprovision', args);
    if (this.respond.deprovision) return this.respond.deprovision(...args);
    if (!this.instances.has(args[0].instanceId)) throw gone('The service instance does not exist.');
    return args[0].acceptsIncomplete
      ? { kind: 'accepted', operation: 'deprovision:1' }
      : { kind: 'done', created: false };
  }

  async getInstance(...args: Parameters<ServiceBroker['getInstance']>): Promise<InstanceView | undefined> {
    this.record('getInstance', args);
    if (this.respond.getInstance) return this.respond.getInstance(...args);
    return this.instances.get(args[0]);
  }

  async instanceLastOperation(
    ...args: Parameters<ServiceBroker['instanceLastOperation']>
  ): Promise<LastOperation> {
    this.record('instanceLastOperation', args);
    if (this.respond.instanceLastOperation) return this.respond.instanceLastOperation(...args);
    const last = this.lastOperations.get(args[0]);
    if (!last) throw notFound('The service instance does not exist.');
    return last;
  }

  async bind(...args: Parameters<ServiceBroker['bind']>): Promise<BindOutcome> {
    this.record('bind', args);
    if (this.respond.bind) return this.respond.bind(...args);
    return args[0].acceptsIncomplete
      ? { kind: 'accepted', operation: 'bind:1' }
      : { kind: 'done', created: true, response: { credentials: { username: 'u', password: 'p' } } };
  }

  async unbind(...args: Parameters<ServiceBroker['unbind']>): Promise<OperationOutcome> {
    this.record('unbind', args);
    if (this.respond.unbind) return this.respond.unbind(...args);
    if (!this.bindings.has(`${args[0].instanceId}/${args[0].bindingId}`)) {
      throw gone('The service binding does not exist.');
    }
    return args[0].acceptsIncomplete
      ? { kind: 'accepted', operation: 'unbind:1' }
      : { kind: 'done', created: false };
  }

  async getBinding(...args: Parameters<ServiceBroker['getBinding']>): Promise<BindingView | undefined> {
    this.record('getBinding', args);
    if (this.respond.getBinding) return this.respond.getBinding(...args);
    return this.bindings.get(`${args[0]}/${args[1]}`);
  }

  async bindingLastOperation(
    ...args: Parameters<ServiceBroker['bindingLastOperation']>
  ): Promise<LastOperation> {
    this.record('bindingLastOperation', args);
    if (this.respond.bindingLastOperation) return this.respond.bindingLastOperation(...args);
    const last = this.lastOperations.get(`${args[0]}/${args[1]}`);
    if (!last) throw notFound('The service binding does not exist.');
    return last;
  }
}

/** A logger that keeps what it is given. */
export class MemoryLogger implements Logger {
  readonly entries: {
    level: 'info' | 'warn' | 'error';
    message: string;
    fields?: Record<string, unknown>;
  }[] = [];
  info(message: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level: 'info', message, ...(fields ? { fields } : {}) });
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level: 'warn', message, ...(fields ? { fields } : {}) });
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level: 'error', message, ...(fields ? { fields } : {}) });
  }
  errors() {
    return this.entries.filter((e) => e.level === 'error');
  }
}

export const USERNAME = 'broker';
export const PASSWORD = 'secret';
export const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export interface TestApi {
  readonly app: Koa;
  readonly broker: FakeBroker;
  readonly catalog: MemoryCatalog;
  readonly log: MemoryLogger;
  /** Requests without any OSB header. */
  readonly http: ReturnType<typeof supertest>;
  /** Requests with valid Basic auth and `X-Broker-API-Version` (2.17 unless given). */
  readonly osb: {
    get(path: string): supertest.Test;
    put(path: string, body?: object | string): supertest.Test;
    patch(path: string, body?: object | string): supertest.Test;
    delete(path: string): supertest.Test;
    post(path: string, body?: object | string): supertest.Test;
  };
}

/** A fresh app over a fresh FakeBroker and test catalog. */
export function testApi(options: Partial<AppOptions> & { version?: string } = {}): TestApi {
  const catalog = (options.catalog as MemoryCatalog | undefined) ?? testCatalog();
  const broker = (options.broker as FakeBroker | undefined) ?? new FakeBroker(catalog);
  const log = new MemoryLogger();
  const app = createApp({
    broker,
    catalog,
    credentials: () => ({ username: USERNAME, password: PASSWORD }),
    log,
    ...options,
  });
  const http = supertest(app.callback());
  const version = options.version ?? '2.17';
  const headers = (t: supertest.Test) =>
    t.set('Authorization', basic(USERNAME, PASSWORD)).set('X-Broker-API-Version', version);
  const withBody = (t: supertest.Test, body: object | string | undefined) =>
    body === undefined
      ? t
      : typeof body === 'string'
        ? t.set('Content-Type', 'application/json').send(body)
        : t.send(body);
  return {
    app,
    broker,
    catalog,
    log,
    http,
    osb: {
      get: (path) => headers(http.get(path)),
      put: (path, body) => withBody(headers(http.put(path)), body),
      patch: (path, body) => withBody(headers(http.patch(path)), body),
      delete: (path) => headers(http.delete(path)),
      post: (path, body) => withBody(headers(http.post(path)), body),
    },
  };
}

/** A valid provision body for `planId` of the example service. */
export const provisionBody = (planId: string = PLANS.sync, extra: Record<string, unknown> = {}) => ({
  service_id: SERVICE_ID,
  plan_id: planId,
  organization_guid: 'org-guid',
  space_guid: 'space-guid',
  ...extra,
});
