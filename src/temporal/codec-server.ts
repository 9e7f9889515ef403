/**
 * The codec endpoint: Temporal's codec-server HTTP contract over the payload codec, so the Temporal
 * Web UI and `temporal workflow show --codec-endpoint` show operations decoded.
 *
 * - `POST /decode` and `POST /encode`, also as `/{namespace}/decode|encode`: a JSON body
 *   `{"payloads": [{"metadata": {k: base64}, "data": base64}]}` (Payloads in proto3 JSON), answered
 *   in the same form. As in proto3 JSON, a field left out or null is its default: `{}` is an
 *   empty list (the Go SDK's remote codec, which the CLI uses, posts that for an empty field, such
 *   as the input of a signal sent with no arguments), `{}` in the list an empty payload. `/decode`
 *   only decrypts what it is given, which is what history already holds: it reads nothing else.
 *   `/encode` encrypts with the current key.
 * - Authenticated by a token, constant-time compared: `Authorization: Bearer <token>` (the CLI's
 *   `--codec-auth`, a proxy, the UI's "pass access token"), or in the endpoint's path,
 *   `/token/<token>/decode` (for a UI that sends no credentials of its own, like the Temporal dev
 *   server's: whoever can read the UI's settings then holds the token).
 * - CORS for the configured origins only (the UI's); a preflight from any other origin, or a
 *   request that names one, is refused.
 * - Errors are JSON `{"error": "..."}`, never a stack; bodies are bounded.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';

/** Largest request body: a few of Temporal's 2 MiB payloads, base64-encoded. */
export const MAX_CODEC_BODY_BYTES = 8 * 1024 * 1024;

/** Most payloads in one request. */
const MAX_PAYLOADS = 1000;

export interface CodecEndpointOptions {
  /** The payload codec of the data converter. */
  readonly codec: PayloadCodec;
  /** The Temporal namespace whose payloads it decodes; requests naming another are refused. */
  readonly namespace: string;
  /** The tokens accepted from clients now (more than one while a rotated token's overlap lasts). */
  readonly tokens: () => readonly string[];
  /** Origins (`scheme://host[:port]`) allowed to call it from a browser. */
  readonly origins: readonly string[];
  /** @default MAX_CODEC_BODY_BYTES */
  readonly maxBodyBytes?: number;
  /** Told of failures that are not the client's (the answer is a generic 500). */
  readonly onError?: (err: unknown) => void;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Namespace';

/** A request handler of the codec endpoint (for `http.createServer` or a test client). */
export function codecEndpoint(
  options: CodecEndpointOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const origins = new Set(options.origins);
  const maxBodyBytes = options.maxBodyBytes ?? MAX_CODEC_BODY_BYTES;
  /** Compared with every accepted token, each in constant time, with no early exit. */
  const tokenMatches = (candidate: string | undefined) => {
    if (candidate === undefined) return false;
    const presented = digest(candidate);
    let matched = false;
    for (const token of options.tokens()) matched = timingSafeEqual(presented, digest(token)) || matched;
    return matched;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin)) throw new HttpError(403, 'origin not allowed');
    if (origin !== undefined) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
    }
    res.setHeader('Vary', 'Origin');
    const route = parseRoute(req.url ?? '/');
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
      res.writeHead(204).end();
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST, OPTIONS');
      throw new HttpError(405, 'only POST is allowed');
    }
    if (!tokenMatches(route.token ?? bearer(req.headers.authorization)))
      throw new HttpError(401, 'a valid token is required');
    const headerNamespace = req.headers['x-namespace'];
    const namespace = route.namespace ?? (typeof headerNamespace === 'string' ? headerNamespace : undefined);
    if (namespace !== undefined && namespace !== '' && namespace !== options.namespace)
      throw new HttpError(404, `this endpoint serves namespace "${options.namespace}" only`);
    const payloads = parsePayloads(await readBody(req, maxBodyBytes));
    let converted: Payload[];
    try {
      converted =
        route.action === 'decode'
          ? await options.codec.decode(payloads)
          : await options.codec.encode(payloads);
    } catch {
      throw new HttpError(400, `the payloads could not be ${route.action}d`);
    }
    send(res, 200, { payloads: converted.map(toJson) });
  }

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) {
        if (err.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
        send(res, err.status, { error: err.message });
      } else {
        options.onError?.(err);
        send(res, 500, { error: 'internal error' });
      }
      // A body left unread would hold the connection: close it after the answer.
      if (!req.complete) req.resume();
    });
  };
}

/** Serves the codec endpoint until `stop`. */
export async function startCodecServer(
  options: CodecEndpointOptions & { readonly host: string; readonly port: number },
): Promise<{ url: string; stop(): Promise<void> }> {
  const server: Server = createServer(codecEndpoint(options));
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    url: `http://${options.host}:${options.port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

interface Route {
  readonly action: 'decode' | 'encode';
  readonly namespace?: string;
  readonly token?: string;
}

/** `[/token/<token>][/<namespace>]/decode|encode`. */
function parseRoute(url: string): Route {
  let segments: string[];
  try {
    segments = new URL(url, 'http://codec').pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new HttpError(404, 'not found');
  }
  let token: string | undefined;
  if (segments[0] === 'token' && segments.length >= 3) {
    token = segments[1];
    segments = segments.slice(2);
  }
  const action = segments.at(-1);
  if ((action !== 'decode' && action !== 'encode') || segments.length > 2)
    throw new HttpError(404, 'not found: POST /decode or /encode');
  return {
    action,
    ...(segments.length === 2 ? { namespace: segments[0] } : {}),
    ...(token ? { token } : {}),
  };
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) throw new HttpError(413, `the body is larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new HttpError(413, `the body is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function bytes(value: unknown, where: string): Uint8Array {
  if (typeof value !== 'string' || !BASE64.test(value)) throw new HttpError(400, `${where} must be base64`);
  return Buffer.from(value, 'base64');
}

function parsePayloads(text: string): Payload[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'the body must be JSON: {"payloads": [...]}');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError(400, 'the body must be JSON: {"payloads": [...]}');
  // Proto3 JSON leaves out an empty list, and so do the Go SDK's clients (the CLI's
  // `--codec-endpoint`): they post `{}` for a history field that holds no payloads.
  const list = (body as { payloads?: unknown }).payloads ?? [];
  if (!Array.isArray(list)) throw new HttpError(400, 'the body must be JSON: {"payloads": [...]}');
  if (list.length > MAX_PAYLOADS) throw new HttpError(413, `at most ${MAX_PAYLOADS} payloads per request`);
  return list.map((item: unknown, i) => {
    if (typeof item !== 'object' || item === null)
      throw new HttpError(400, `payloads[${i}] must be an object`);
    // Left out or null: the field's default, as proto3 JSON reads it.
    const { metadata, data } = item as { metadata?: unknown; data?: unknown };
    const fields = metadata ?? {};
    const bytesText = data ?? '';
    if (typeof fields !== 'object' || Array.isArray(fields))
      throw new HttpError(400, `payloads[${i}].metadata must be an object`);
    return {
      metadata: Object.fromEntries(
        Object.entries(fields).map(([k, v]) => [k, bytes(v, `payloads[${i}].metadata.${k}`)]),
      ),
      data: bytes(bytesText, `payloads[${i}].data`),
    };
  });
}

const toJson = (payload: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
  ),
  data: Buffer.from(payload.data ?? []).toString('base64'),
});

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
  });
  res.end(text);
}
