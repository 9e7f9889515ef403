/**
 * The text of a plan template: `content`, base64 `contentEncoded`, or `url` fetched over HTTP(S)
 * with a size limit and a timeout, and kept in memory for a while.
 */
import type { PlanTemplate } from '../resources/types.js';
import { TemplateError } from './errors.js';

/** Limits of templates fetched from a `url`. */
export interface UrlLimits {
  /** Most bytes of a template. @default 1 MiB */
  readonly maxBytes: number;
  /** Time limit of one fetch, in milliseconds. @default 10000 */
  readonly timeoutMs: number;
  /** How long a fetched template is reused before it is fetched again, in milliseconds. @default 300000 */
  readonly ttlMs: number;
}

/** The limits of `url` templates unless given otherwise. */
export const URL_LIMITS: UrlLimits = { maxBytes: 1024 * 1024, timeoutMs: 10_000, ttlMs: 5 * 60_000 };

/** Most URLs kept; the oldest go first. */
const CACHE_ENTRIES = 256;
const cache = new Map<string, { readonly text: string; readonly expires: number }>();
const inFlight = new Map<string, Promise<string>>();

/** Forgets every fetched template (tests, or to pick up a changed template at once). */
export function clearTemplateCache(): void {
  cache.clear();
}

async function download(url: string, limits: UrlLimits): Promise<string> {
  const failed = (why: string) => new TemplateError(`fetching template ${url} failed: ${why}`, 'source');
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(limits.timeoutMs), redirect: 'follow' });
  } catch (err) {
    throw failed(fetchFailure(err, limits));
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw failed(`HTTP ${response.status}`);
  }
  return (await limitedBody(response, limits, failed)).toString('utf8');
}

/**
 * The body of a response, at most `limits.maxBytes`: its Content-Length is checked first, then the
 * bytes as they stream in. `failed` makes the error of a body over the limit or cut off.
 */
export async function limitedBody(
  response: Response,
  limits: { readonly maxBytes: number; readonly timeoutMs: number },
  failed: (why: string) => TemplateError,
): Promise<Buffer> {
  const tooLarge = () => failed(`it is over the limit of ${limits.maxBytes} bytes`);
  if (Number(response.headers.get('content-length') ?? 0) > limits.maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.byteLength;
      if (size > limits.maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof TemplateError) throw err;
    throw failed(fetchFailure(err, limits));
  }
  return Buffer.concat(chunks);
}

/** Why a fetch failed, in a few words: its time limit, or the network's own reason. */
export function fetchFailure(err: unknown, limits: { readonly timeoutMs: number }): string {
  const e = err as Error & { cause?: Error };
  if (e?.name === 'TimeoutError') return `no answer within ${limits.timeoutMs} ms`;
  return e?.cause?.message ?? e?.message ?? String(err);
}

/** Fetches a template from an http(s) URL, or reuses the copy fetched less than `ttlMs` ago. */
export async function fetchTemplate(url: string, limits: UrlLimits = URL_LIMITS): Promise<string> {
  const cached = cache.get(url);
  if (cached && cached.expires > Date.now()) return cached.text;
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    throw new TemplateError(`template url ${url} is not a valid URL`, 'source');
  }
  if (scheme !== 'http:' && scheme !== 'https:') {
    throw new TemplateError(`template url ${url} is not http(s)`, 'source');
  }
  let pending = inFlight.get(url);
  if (!pending) {
    pending = download(url, limits)
      .then((text) => {
        cache.delete(url);
        if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
        cache.set(url, { text, expires: Date.now() + limits.ttlMs });
        return text;
      })
      .finally(() => inFlight.delete(url));
    inFlight.set(url, pending);
  }
  return pending;
}

/** Go's base64.StdEncoding: padded standard alphabet; line breaks are ignored. */
function decodeBase64(encoded: string): string | undefined {
  const compact = encoded.replace(/[\r\n]/g, '');
  if (
    compact.length % 4 !== 0 ||
    !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(compact)
  ) {
    return undefined;
  }
  return Buffer.from(compact, 'base64').toString('utf8');
}

/**
 * The template's text, as the original inter-operator picks it: `content` if not empty, else
 * `contentEncoded` (base64) if not empty, else `url`. An empty `content` alone is an empty template.
 */
export async function templateText(template: PlanTemplate, limits: UrlLimits = URL_LIMITS): Promise<string> {
  if (template.content) return template.content;
  if (template.contentEncoded) {
    const text = decodeBase64(template.contentEncoded);
    if (text === undefined) {
      throw new TemplateError(
        `the ${template.action} template's contentEncoded is not valid base64`,
        'source',
      );
    }
    return text;
  }
  if (template.url) return fetchTemplate(template.url, limits);
  if (template.content === '') return '';
  throw new TemplateError(`the ${template.action} template has no content, contentEncoded or url`, 'source');
}
