/**
 * The OSB middleware: one error handler first (typed errors become responses, everything else a
 * 500 without details; the log gets the real error), then authentication, the API version and the
 * identity headers, and a size-limited JSON body reader.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { RequestMeta } from '../broker/types.js';
import {
  badRequest,
  internalError,
  isOsbError,
  methodNotAllowed,
  notFound,
  OsbError,
  payloadTooLarge,
  unauthorized,
} from '../osb/errors.js';
import { parseApiVersion, type ApiVersion } from '../osb/version.js';

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface OsbState {
  meta: RequestMeta;
  version: ApiVersion;
}

/** Turns errors into OSB error bodies; unknown errors are logged and answered with a generic 500. */
export function errorHandler(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
      // Routers answer unknown routes and wrong methods without a body: give them the OSB one.
      if (
        ctx.status >= 400 &&
        (ctx.body === undefined || ctx.body === null || typeof ctx.body === 'string')
      ) {
        if (ctx.status === 404) throw notFound(`No route for ${ctx.method} ${ctx.path}.`);
        if (ctx.status === 405) throw methodNotAllowed(`${ctx.method} is not allowed on ${ctx.path}.`);
        if (ctx.status === 501)
          throw new OsbError(501, `${ctx.method} is not implemented.`, 'NotImplemented');
      }
    } catch (err) {
      const osb = isOsbError(err) ? err : undefined;
      const failure = osb ?? internalError();
      if (!osb) {
        log.error('request failed', {
          method: ctx.method,
          path: ctx.path,
          error: err instanceof Error ? err.message : String(err),
        });
      }
      ctx.status = failure.status;
      ctx.body = failure.toBody();
      if (failure.status === 401) ctx.set('WWW-Authenticate', 'Basic realm="interoperator"');
    }
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Basic authentication, compared in constant time against every configured credential (rotation). */
export function basicAuth(credentials: () => readonly { username: string; password: string }[]) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const header = ctx.get('Authorization');
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    const given = digest(match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '\u0000');
    let ok = false;
    for (const c of credentials()) {
      if (timingSafeEqual(given, digest(`${c.username}:${c.password}`))) ok = true;
    }
    if (!ok) throw unauthorized();
    await next();
  };
}

/** X-Broker-API-Version (412 when missing or too old) and the identity headers. */
export async function osbHeaders(ctx: Context, next: Next): Promise<void> {
  const version = parseApiVersion(ctx.get('X-Broker-API-Version') || undefined);
  const requestIdentity = ctx.get('X-Broker-API-Request-Identity');
  if (requestIdentity) ctx.set('X-Broker-API-Request-Identity', requestIdentity);
  const identity = ctx.get('X-Broker-API-Originating-Identity');
  let originatingIdentity: RequestMeta['originatingIdentity'];
  if (identity) {
    const match = /^\s*(\S+)\s+([A-Za-z0-9+/=]+)\s*$/.exec(identity);
    let value: unknown;
    try {
      value = match ? JSON.parse(Buffer.from(match[2]!, 'base64').toString('utf8')) : undefined;
    } catch {
      value = undefined;
    }
    if (!match || value === null || typeof value !== 'object') {
      throw badRequest(
        'X-Broker-API-Originating-Identity must be "<platform> <base64-encoded JSON object>".',
      );
    }
    originatingIdentity = { platform: match[1]!, value };
  }
  const state = ctx.state as OsbState;
  state.version = version;
  state.meta = {
    apiVersion: `${version.major}.${version.minor}`,
    ...(originatingIdentity ? { originatingIdentity } : {}),
    ...(requestIdentity ? { requestIdentity } : {}),
  };
  await next();
}

/** Reads a JSON object body of at most `maxBytes`; an empty body is `{}`. */
export async function readJsonObject(ctx: Context, maxBytes: number): Promise<Record<string, unknown>> {
  const declared = Number(ctx.get('Content-Length') || 0);
  if (declared > maxBytes) throw payloadTooLarge(`The request body is over ${maxBytes} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw payloadTooLarge(`The request body is over ${maxBytes} bytes.`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text.trim()) return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest('The request body is not valid JSON.');
  }
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw badRequest('The request body must be a JSON object.');
  return body as Record<string, unknown>;
}
