/**
 * The OSB API (v2.12 to v2.17) as a Koa app, and beside it, under `/admin`, the admin API with its
 * own credentials. Routes parse and check the request, call the service layer (ServiceBroker,
 * AdminService) and map its answer; errors become responses in one place (middleware.ts).
 */
import type { Tracer } from '@opentelemetry/api';
import Koa, { type Context } from 'koa';
import { silentLogger, type Logger } from '../log.js';
import type { OsbRequestRecorder } from '../metrics/recorders.js';
import type { AdminService } from '../admin/service.js';
import { BROKER_PLATFORMS } from '../osb/platforms.js';
import type { CatalogSource, ServiceBroker } from '../osb/service-broker.js';
import type { SubjectRdns } from './client-subject.js';
import { DEFAULT_MAX_BODY_BYTES } from './body.js';
import {
  adminAuth,
  basicAuth,
  clientCertificateAuth,
  echoRequestIdentity,
  errorHandler,
  onOsbPaths,
  osbHeaders,
  traceRequests,
  type AdminState,
  type Credentials,
  type OsbState,
} from './middleware.js';
import { requestMetrics } from './request-metrics.js';
import { adminRoutes, type AdminRouteDeps } from './routes/admin.js';
import { bindingRoutes } from './routes/bindings.js';
import { catalogRoutes } from './routes/catalog.js';
import { instanceRoutes } from './routes/instances.js';
import type { RouteDeps } from './routes/shared.js';
import { Routes } from './router.js';

export type { Credentials } from './middleware.js';

export interface AppOptions {
  /** The service layer the routes call. */
  readonly broker: ServiceBroker;
  /** The catalog, read on every request (so it may change underneath). */
  readonly catalog: CatalogSource;
  /**
   * The Basic-auth credentials accepted, read on every request; return several while rotating.
   * Credentials with an empty username or password never match. The objects are read-only (their
   * digests are kept): return new ones to change them.
   */
  readonly credentials: () => Credentials | readonly Credentials[];
  /**
   * When set, OSB requests are authenticated by the client certificate an ingress verified (its
   * `ssl-client-cert` and `ssl-client-subject-dn` headers), whose subject must hold these RDNs,
   * instead of Basic auth (see `clientCertificateAuth`). @default Basic auth with `credentials`
   */
  readonly clientSubject?: SubjectRdns;
  /**
   * Whether bind answers carry the binding's `metadata` (Service Fabrik's `send_binding_metadata`).
   * @default true
   */
  readonly sendBindingMetadata?: boolean;
  /** Largest request body accepted, in bytes; larger bodies get 413. @default 1 MiB */
  readonly maxBodyBytes?: number;
  /** Where requests and failures are logged. @default a logger that drops everything */
  readonly log?: Logger;
  /**
   * True once the broker is stopping: `/healthz` answers 503, so the load balancer takes it out
   * of rotation, and every answer closes its connection, so clients reconnect to another broker.
   * @default never
   */
  readonly stopping?: () => boolean;
  /** Where each OSB request is counted and timed. @default nowhere */
  readonly requests?: OsbRequestRecorder;
  /** Traces each request (a server span) with this tracer. @default no tracing */
  readonly tracer?: Tracer;
  /**
   * The admin API under `/admin`: the service it calls and the credentials it accepts, never the
   * OSB API's. Without it, `/admin` is served by nothing (401, then 404).
   */
  readonly admin?: {
    readonly service: AdminService;
    readonly credentials: () => Credentials | readonly Credentials[];
  };
}

/** The routes of the admin API, under `/admin`. */
export function createAdminRoutes(deps: AdminRouteDeps): Routes<AdminState> {
  const routes = new Routes<AdminState>();
  adminRoutes(routes.under('/admin'), deps);
  return routes;
}

/** Where the OSB routes are: `/v2`, `/<platform>/v2` and `/<platform>/region/<region>/v2`. */
// No capturing group in the pattern: find-my-way would count it as a parameter of its own.
const PLATFORM = `:platform(^(?:${BROKER_PLATFORMS.join('|')})$)`;
export const OSB_PREFIXES = ['/v2', `/${PLATFORM}/v2`, `/${PLATFORM}/region/:region/v2`] as const;

/** The routes of the app: `/healthz`, and the OSB routes under each of {@link OSB_PREFIXES}. */
export function createRoutes(deps: RouteDeps, stopping: () => boolean = () => false): Routes<OsbState> {
  const routes = new Routes<OsbState>();
  /** GET /healthz: for load balancers; no authentication, no version header. 503 while stopping. */
  routes.get('/healthz', (ctx) => {
    if (stopping()) {
      ctx.status = 503;
      ctx.body = { status: 'stopping' };
      return;
    }
    ctx.body = { status: 'ok' };
  });

  // The same routes under each prefix Service Fabrik's broker was registered with: the platform,
  // and the platform and region, which the routes pass on (platformOf in routes/shared.ts).
  for (const prefix of OSB_PREFIXES) {
    const osb = routes.under(prefix);
    catalogRoutes(osb, deps);
    instanceRoutes(osb, deps);
    bindingRoutes(osb, deps);
  }
  return routes;
}

/**
 * The OSB API as a Koa app: serve it with `app.listen()`, or test it with
 * `supertest(app.callback())`.
 */
export function createApp(options: AppOptions): Koa {
  const log = options.log ?? silentLogger;
  const app = new Koa();
  app.on('error', (err: unknown, ctx?: Context) => {
    log.error('request failed', {
      ...(ctx ? { method: ctx.method, path: ctx.path, status: ctx.status } : {}),
      error: err instanceof Error ? err.message : String(err),
      ...(err instanceof Error && err.stack ? { stack: err.stack } : {}),
    });
  });

  const stopping = options.stopping ?? (() => false);
  const routes = createRoutes(
    {
      broker: options.broker,
      catalog: options.catalog,
      maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      ...(options.sendBindingMetadata !== undefined
        ? { sendBindingMetadata: options.sendBindingMetadata }
        : {}),
      log,
    },
    stopping,
  );
  if (options.requests) app.use(requestMetrics(options.requests, routes));
  if (options.tracer) app.use(traceRequests(options.tracer));
  app.use((ctx, next) => {
    if (stopping()) ctx.set('Connection', 'close');
    return next();
  });
  app.use(errorHandler(log));
  app.use(echoRequestIdentity);
  const osbAuth = options.clientSubject
    ? clientCertificateAuth(options.clientSubject)
    : basicAuth(options.credentials);
  app.use(onOsbPaths(osbAuth, osbHeaders));
  // Admin paths without admin credentials configured still need them: nothing gets through.
  app.use(adminAuth(options.admin?.credentials ?? (() => [])));
  // 405 (with Allow) and 501 without a body: the error handler writes the OSB error body.
  app.use(routes.middleware());
  if (options.admin) {
    const admin = createAdminRoutes({
      admin: options.admin.service,
      maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    });
    app.use(admin.middleware() as Koa.Middleware);
  }
  return app;
}
