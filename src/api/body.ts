/**
 * The JSON request body, read with a size limit. Written here rather than taken from a body-parser
 * package because OSB needs little (one content type, objects only) and needs the errors in its
 * own format: 413 over the limit, 400 for anything that is not a UTF-8 JSON object.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import { badRequest, payloadTooLarge } from '../osb/errors.js';
import { parseJsonObject, type JsonObject } from '../osb/requests.js';

/** Default limit of a request body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (limit: number) =>
  payloadTooLarge(`The request body is larger than the broker accepts (${limit} bytes).`);

/** The raw body, or a 413 as soon as it passes `limit` (what follows is read and dropped). */
function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err: unknown, body?: Buffer) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      if (err) {
        // Keep reading (and dropping) the rest, so the answer reaches a client that is still sending.
        req.resume();
        reject(err);
      } else {
        resolve(body!);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) settle(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(undefined, Buffer.concat(chunks, size));
    const onError = (err: Error) => settle(err);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * The request body as a JSON object; an empty body is `{}`. The content type is not checked: a
 * body that is not JSON is a 400 whatever it claims to be.
 *
 * @throws OsbError 413 when the body is over `maxBytes` (by `Content-Length`, or while reading);
 *   400 when it is compressed, not UTF-8, not JSON, or not an object.
 */
export async function readJsonBody(ctx: Context, maxBytes: number): Promise<JsonObject> {
  const encoding = (ctx.get('Content-Encoding') || 'identity').trim().toLowerCase();
  if (encoding !== 'identity')
    throw badRequest(`Content-Encoding ${encoding} is not supported; send plain JSON.`);
  const declared = ctx.get('Content-Length');
  if (declared && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  const raw = await readRaw(ctx.req, maxBytes);
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw badRequest('The request body is not UTF-8.');
  }
  return parseJsonObject(text);
}
