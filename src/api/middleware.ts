/**
 * The OSB middleware, in the order the app registers it: the one error handler (every error
 * becomes an OSB error body here and nowhere else; it also writes the access log), the request
 * identity echo, then, on /v2 routes, Basic authentication, the API version and the originating
 * identity.
 */
import { hash, timingSafeEqual } from 'node:crypto';
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
} from '../osb/errors.js';
import { parseOriginatingIdentity } from '../osb/requests.js';
import type { RequestMeta } from '../osb/service-broker.js';
import { parseApiVersion, type ApiVersion } from '../osb/version.js';

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
 * Paths under the OSB API, which need authentication and the version header: `/v2` in any case.
 * The router matches only paths written as they are (case-sensitive, fixed segments not
 * percent-encoded, see router.ts), so whatever it would serve as an OSB route is one here too.
 */
export const isOsbPath = (path: string): boolean => /^\/v2(?:\/|$)/i.test(path);

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
 * The one error handler, registered first. OsbErrors become their status and
 * `{error?, description}` body (410 is `{}`, as the spec expects); errors safe to show (4xx with
 * `expose`) keep their status and message; anything else is a 500 with a generic description.
 * Unknown errors and every 5xx are emitted as the app's `error` event, which does the logging: the
 * client never sees a stack. Once the answer is settled, each /v2 request gets one access-log line
 * (method, path, status, duration, request identity).
 */
export function errorHandler(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const started = performance.now();
    try {
      await next();
      const routed = routerError(ctx);
      if (routed) throw routed;
    } catch (err) {
      const failure = isOsbError(err) ? err : (exposedClientError(err) ?? internalError());
      ctx.status = failure.status;
      ctx.body = failure.status === 410 ? {} : failure.toBody();
      if (failure.status === 401) ctx.set('WWW-Authenticate', 'Basic realm="interoperator", charset="UTF-8"');
      if (failure.status >= 500) ctx.app.emit('error', err, ctx);
    }
    if (isOsbPath(ctx.path)) {
      const requestIdentity = ctx.get(REQUEST_IDENTITY);
      log.info('osb request', {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round(performance.now() - started),
        ...(requestIdentity ? { requestIdentity } : {}),
      });
    }
  };
}

/** Echoes `X-Broker-API-Request-Identity` on every response, errors included. */
export function echoRequestIdentity(ctx: Context, next: Next): Promise<void> {
  const requestIdentity = ctx.get(REQUEST_IDENTITY);
  if (requestIdentity) ctx.set(REQUEST_IDENTITY, requestIdentity);
  return next();
}

/** SHA-256 in one call: no Hash object per request (it costs a third more and leaves work for the collector). */
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
 * HTTP Basic authentication against every accepted credential (several while one is rotated). The
 * comparison is in constant time: SHA-256 digests compared with `timingSafeEqual`, every
 * credential checked, user and password both. Credentials with an empty user or password never
 * match, so a missing configuration locks the API rather than opening it.
 *
 * A platform sends the same header on every request, so a header once accepted is remembered with
 * the credential that accepted it (a few spellings each) and found again by a set lookup: the two
 * digests were about a fifth of the JavaScript of a read answered from memory. The lookup tells nothing a client
 * could not learn from the answer itself: it hashes the whole header and matches only a header that
 * was accepted before. A credential that is rotated out takes what it accepted with it.
 *
 * @throws OsbError 401 (the error handler adds `WWW-Authenticate`).
 */
export function basicAuth(credentials: () => Credentials | readonly Credentials[]) {
  // The digests of each accepted credential (read-only objects), made once each, not per request.
  const digests = new WeakMap<Credentials, { user: Buffer; password: Buffer }>();
  const digestsOf = (c: Credentials) => {
    let known = digests.get(c);
    if (!known) {
      known = { user: digest(c.username), password: digest(c.password) };
      digests.set(c, known);
    }
    return known;
  };
  // The Authorization headers each credential has accepted, in a few spellings at most.
  const acceptedHeaders = new WeakMap<Credentials, Set<string>>();
  return (ctx: Context, next: Next): Promise<void> => {
    const header = ctx.get('Authorization');
    const configured = credentials();
    const all = Array.isArray(configured) ? configured : [configured as Credentials];
    if (!all.some((c) => acceptedHeaders.get(c)?.has(header))) {
      const given = basicCredentials(header);
      const user = digest(given?.username ?? '');
      const password = digest(given?.password ?? '');
      let accepting: Credentials | undefined;
      for (const c of all) {
        const usable = c.username !== '' && c.password !== '' ? 1 : 0;
        const accepted = digestsOf(c);
        // `&` rather than `&&`: both comparisons run whatever the first one says.
        const matched =
          usable &
          Number(timingSafeEqual(user, accepted.user)) &
          Number(timingSafeEqual(password, accepted.password));
        if (matched === 1) accepting = c;
      }
      if (!given || !accepting) throw unauthorized();
      remember(acceptedHeaders, accepting, header);
    }
    return next();
  };
}

/** Spellings of one credential's header remembered (`basic` or `Basic`, spaces): a few are enough. */
const HEADERS_PER_CREDENTIAL = 4;

function remember(headers: WeakMap<Credentials, Set<string>>, credential: Credentials, header: string): void {
  let known = headers.get(credential);
  if (!known) headers.set(credential, (known = new Set()));
  if (known.size < HEADERS_PER_CREDENTIAL) known.add(header);
}

/**
 * `X-Broker-API-Version` (412 when missing, malformed or unsupported) and
 * `X-Broker-API-Originating-Identity` (400 when malformed), into `ctx.state`.
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
 * it): the Temporal client switches on AsyncLocalStorage, which on Node 20 puts a hook on every
 * promise, and each async layer cost a read about 2 µs more.
 */
export function onOsbPaths(...middleware: ((ctx: Context, next: Next) => Promise<void>)[]) {
  return (ctx: Context, next: Next): Promise<void> => {
    if (!isOsbPath(ctx.path)) return next();
    const run = (i: number): Promise<void> =>
      i < middleware.length ? middleware[i]!(ctx, () => run(i + 1)) : next();
    return run(0);
  };
}
