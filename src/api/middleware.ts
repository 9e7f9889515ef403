/**
 * The OSB middleware, in the order the app registers it: the one error handler (every error
 * becomes an OSB error body here and nowhere else; it also writes the access log), the request
 * identity echo, then, on /v2 routes, Basic authentication, the API version and the originating
 * identity.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { SpanKind, SpanStatusCode, context, propagation, type Tracer } from '@opentelemetry/api';
import type { Context, Next } from 'koa';
import type { Logger } from '../log.js';
import {
  OsbError,
  internalError,
  isOsbError,
  methodNotAllowed,
  notFound,
  notImplemented,
  unauthorized,
  BASIC_CHALLENGE,
} from '../osb/errors.js';
import { parseOriginatingIdentity } from '../osb/requests.js';
import type { RequestMeta } from '../osb/service-broker.js';
import { parseApiVersion, type ApiVersion } from '../osb/version.js';
import { sameSubject, subjectRdns, type SubjectRdns } from './client-subject.js';

/** What the /v2 middleware leaves in `ctx.state` for the routes. */
export interface OsbState {
  /** The request's `X-Broker-API-Version`. */
  version: ApiVersion;
  /** Who asked, for the service layer. */
  meta: RequestMeta;
}

/** One Basic-auth credential the broker accepts. */
export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/**
 * Paths under the OSB API, which need authentication and the version header: `/v2`, and
 * `/<platform>/v2` and `/<platform>/region/<region>/v2` for the platforms `cf`, `k8s` and `sm`, in
 * any case.
 * The router matches only paths written as they are (case-sensitive, fixed segments not
 * percent-encoded, see router.ts), so whatever it would serve as an OSB route is one here too.
 */
export const isOsbPath = (path: string): boolean =>
  /^(?:\/(?:cf|k8s|sm)(?:\/region\/[^/]*)?)?\/v2(?:\/|$)/i.test(path);

/** Paths under the admin API, which need the admin credentials: `/admin` in any case. */
export const isAdminPath = (path: string): boolean => /^\/admin(?:\/|$)/i.test(path);

/** What the admin middleware leaves in `ctx.state` for the admin routes. */
export interface AdminState {
  /** Who asked: the admin's user, and the name the request gives in `X-Requested-By`. */
  requestedBy: string;
}

/** The header in which an admin client names the person behind the shared admin credentials. */
export const REQUESTED_BY = 'X-Requested-By';

const REQUEST_IDENTITY = 'X-Broker-API-Request-Identity';

/** An error from koa or a library (http-errors) that is safe to show: a 4xx with `expose`. */
function exposedClientError(err: unknown): OsbError | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const e = err as { status?: unknown; statusCode?: unknown; expose?: unknown; message?: unknown };
  const status = typeof e.status === 'number' ? e.status : e.statusCode;
  if (typeof status !== 'number' || status < 400 || status > 499 || e.expose !== true) return undefined;
  const description = typeof e.message === 'string' && e.message ? e.message : 'The request is invalid.';
  return new OsbError(status, description, status === 400 ? 'BadRequest' : undefined);
}

/** The OSB error for a router answer without a body (unknown route, wrong method). */
function routerError(ctx: Context): OsbError | undefined {
  if (ctx.body !== undefined && ctx.body !== null) return undefined;
  switch (ctx.status) {
    case 404:
      return notFound(`There is no route ${ctx.method} ${ctx.path}.`);
    case 405:
      return methodNotAllowed(
        `${ctx.method} is not allowed on ${ctx.path}; allowed: ${ctx.response.get('Allow')}.`,
      );
    case 501:
      return notImplemented(`${ctx.method} is not implemented by this broker.`);
    default:
      return undefined;
  }
}

/**
 * The one error handler. OsbErrors become their status and
 * `{error?, description}` body (410 is `{}`, as the spec expects), with `Retry-After` when they
 * carry one; errors safe to show (4xx with
 * `expose`) keep their status and message; anything else is a 500 with a generic description.
 * Unknown errors and every 5xx but 501 are emitted as the app's `error` event, which logs them
 * with their stack: the client never sees a stack. A client's mistake (a 4xx, or a 501 for a
 * method or feature the broker does not have) is not the broker's failure and is only in the
 * access log: once the answer is settled, each /v2 request gets one line at info (method, path,
 * status, duration, request identity, the instance, binding and operation ids it names, and the
 * OSB error code of a failure), and each /admin request one too (with who asked).
 */
export function errorHandler(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const started = performance.now();
    let code: string | undefined;
    try {
      await next();
      const routed = routerError(ctx);
      if (routed) throw routed;
    } catch (err) {
      const failure = isOsbError(err) ? err : (exposedClientError(err) ?? internalError());
      ctx.status = failure.status;
      const body = failure.toBody();
      ctx.body = failure.status === 410 ? {} : body;
      code = body.error;
      if (failure.challenge) ctx.set('WWW-Authenticate', failure.challenge);
      if (failure.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(failure.retryAfterSeconds));
      if (isServerFailure(failure.status)) ctx.app.emit('error', err, ctx);
    }
    if (isOsbPath(ctx.path)) {
      const requestIdentity = ctx.get(REQUEST_IDENTITY);
      log.info('osb request', {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round(performance.now() - started),
        ...(requestIdentity ? { requestIdentity } : {}),
        ...namedIds(ctx),
        ...(code ? { error: code } : {}),
      });
    }
    if (isAdminPath(ctx.path)) {
      const { requestedBy } = ctx.state as Partial<AdminState>;
      log.info('admin request', {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round(performance.now() - started),
        ...(requestedBy ? { requestedBy } : {}),
      });
    }
  };
}

/** Whether an answer's status is the broker's failure: a 5xx, but not 501 (the client asked for what is not there). */
export const isServerFailure = (status: number): boolean => status >= 500 && status !== 501;

/** The instance and binding ids of the route, and the operation of the answer, for the log. */
function namedIds(ctx: Context): { instanceId?: string; bindingId?: string; operation?: string } {
  const params = (ctx as { params?: Readonly<Record<string, string>> }).params;
  const body = ctx.body as { operation?: unknown } | null | undefined;
  const operation =
    body && typeof body === 'object' && typeof body.operation === 'string' ? body.operation : undefined;
  return {
    ...(params?.instance_id ? { instanceId: params.instance_id } : {}),
    ...(params?.binding_id ? { bindingId: params.binding_id } : {}),
    ...(operation ? { operation } : {}),
  };
}

/**
 * A server span for each request, registered first when tracing is on: named by the method and
 * the route's pattern, continuing the caller's trace when it sent a `traceparent`, and the parent
 * of the spans of the Temporal calls the request makes (the workflow it starts carries it on).
 */
export function traceRequests(tracer: Tracer) {
  return (ctx: Context, next: Next): Promise<void> => {
    const parent = propagation.extract(context.active(), ctx.headers);
    return tracer.startActiveSpan(
      ctx.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path },
      },
      parent,
      async (span) => {
        try {
          await next();
        } finally {
          const route = (ctx as { routePath?: string }).routePath;
          if (route) {
            span.updateName(`${ctx.method} ${route}`);
            span.setAttribute('http.route', route);
          }
          span.setAttribute('http.response.status_code', ctx.status);
          if (isServerFailure(ctx.status)) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
      },
    );
  };
}

/** Echoes `X-Broker-API-Request-Identity` on every response, errors included. */
export function echoRequestIdentity(ctx: Context, next: Next): Promise<void> {
  const requestIdentity = ctx.get(REQUEST_IDENTITY);
  if (requestIdentity) ctx.set(REQUEST_IDENTITY, requestIdentity);
  return next();
}

/** SHA-256 of a text, as bytes. */
const digest = (text: string): Buffer => hash('sha256', text, 'buffer');

/** The user and password of an `Authorization: Basic` header, if it is one. */
function basicCredentials(header: string): { username: string; password: string } | undefined {
  const match = /^Basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * HTTP Basic authentication against every accepted credential (several while one is rotated), on
 * every request: nothing is remembered of a header once answered. The comparison is in constant
 * time: SHA-256 digests (all of one length) compared with `timingSafeEqual`, every credential
 * checked, user and password both. Credentials with an empty user or password never match, so a
 * missing configuration locks the API rather than opening it.
 *
 * `onAccepted` receives the user of each accepted request.
 *
 * @throws OsbError 401 with the Basic challenge (the error handler sends it as `WWW-Authenticate`).
 */
export function basicAuth(
  credentials: () => Credentials | readonly Credentials[],
  onAccepted?: (ctx: Context, username: string) => void,
) {
  // The digests of each configured credential (read-only objects), made once each.
  const digests = new WeakMap<Credentials, { user: Buffer; password: Buffer }>();
  const digestsOf = (c: Credentials) => {
    let known = digests.get(c);
    if (!known) {
      known = { user: digest(c.username), password: digest(c.password) };
      digests.set(c, known);
    }
    return known;
  };
  return (ctx: Context, next: Next): Promise<void> => {
    const configured = credentials();
    const all = Array.isArray(configured) ? configured : [configured as Credentials];
    const given = basicCredentials(ctx.get('Authorization'));
    const user = digest(given?.username ?? '');
    const password = digest(given?.password ?? '');
    let matched = 0;
    for (const c of all) {
      const usable = c.username !== '' && c.password !== '' ? 1 : 0;
      const accepted = digestsOf(c);
      // `&` and `|` rather than `&&` and `||`: every comparison runs whatever the others say.
      matched |=
        usable &
        Number(timingSafeEqual(user, accepted.user)) &
        Number(timingSafeEqual(password, accepted.password));
    }
    if (!given || matched !== 1) throw unauthorized(undefined, BASIC_CHALLENGE);
    onAccepted?.(ctx, given.username);
    return next();
  };
}

/** The headers in which an ingress that ends mutual TLS passes on the client's certificate and its subject. */
export const CLIENT_CERTIFICATE_HEADERS = {
  certificate: 'ssl-client-cert',
  subject: 'ssl-client-subject-dn',
} as const;

/**
 * Authentication by the client certificate an ingress verified, as Service Fabrik's
 * `secureIncomingConnections`: the request must carry the certificate (`ssl-client-cert`) and its
 * subject (`ssl-client-subject-dn`), and the subject must hold the same RDNs as `expected`, in any
 * order. The broker trusts these headers as they come: only an ingress that verifies the client's
 * certificate and removes them from what clients send may stand in front of it.
 *
 * @throws OsbError 401 naming what is missing or wrong (never the subject itself), without a
 *   `WWW-Authenticate` challenge: no header a client could send answers it.
 */
export function clientCertificateAuth(expected: SubjectRdns) {
  return (ctx: Context, next: Next): Promise<void> => {
    if (!ctx.get(CLIENT_CERTIFICATE_HEADERS.certificate))
      throw unauthorized('A client certificate is required to access this broker.');
    const subject = ctx.get(CLIENT_CERTIFICATE_HEADERS.subject);
    if (!subject) throw unauthorized("The client certificate's subject is missing.");
    if (!sameSubject(subjectRdns(subject), expected))
      throw unauthorized("The client certificate's subject is not accepted by this broker.");
    return next();
  };
}

/**
 * The OSB request headers, into `ctx.state`: `X-Broker-API-Version` (412 when missing, malformed
 * or unsupported), `X-Broker-API-Originating-Identity` (decoded; one that cannot be read never
 * fails the request, it is recorded as `unreadable`) and `X-Broker-API-Request-Identity`.
 */
export function osbHeaders(ctx: Context, next: Next): Promise<void> {
  const version = parseApiVersion(ctx.get('X-Broker-API-Version') || undefined);
  const originatingIdentity = parseOriginatingIdentity(
    ctx.get('X-Broker-API-Originating-Identity') || undefined,
  );
  const requestIdentity = ctx.get(REQUEST_IDENTITY);
  const state = ctx.state as OsbState;
  state.version = version;
  state.meta = {
    apiVersion: version.text,
    ...(originatingIdentity ? { originatingIdentity } : {}),
    ...(requestIdentity ? { requestIdentity } : {}),
  };
  return next();
}

/**
 * Runs `middleware` on /v2 paths only, in order. The middleware on the way of every request return
 * `next()` rather than awaiting it (a throw on the way in is still a rejection: koa-compose catches
 * it): the Temporal client switches on AsyncLocalStorage, which puts a hook on every promise, so
 * each async layer adds work to every request.
 */
export function onOsbPaths(...middleware: ((ctx: Context, next: Next) => Promise<void>)[]) {
  return onPaths(isOsbPath, ...middleware);
}

/**
 * The admin API's authentication: its own credentials, never the OSB API's. The accepted user,
 * with the name an `X-Requested-By` header gives (the person behind shared credentials), is who
 * asked, for the audit.
 */
export function adminAuth(credentials: () => Credentials | readonly Credentials[]) {
  return onPaths(
    isAdminPath,
    basicAuth(credentials, (ctx, username) => {
      (ctx.state as AdminState).requestedBy = requestedBy(username, ctx.get(REQUESTED_BY));
    }),
  );
}

/** Who asked: `user`, or `person (user)` when the request names a person; control characters dropped. */
export function requestedBy(username: string, person: string): string {
  const named = [...person]
    .filter((c) => c >= ' ' && c !== '\u007f')
    .join('')
    .trim()
    .slice(0, 200);
  return named && named !== username ? `${named} (${username})` : username;
}

/** Runs `middleware` on the paths `test` accepts only, in order (see {@link onOsbPaths}). */
export function onPaths(
  test: (path: string) => boolean,
  ...middleware: ((ctx: Context, next: Next) => Promise<void>)[]
) {
  return (ctx: Context, next: Next): Promise<void> => {
    if (!test(ctx.path)) return next();
    const run = (i: number): Promise<void> =>
      i < middleware.length ? middleware[i]!(ctx, () => run(i + 1)) : next();
    return run(0);
  };
}
