/**
 * The chart archive of a `helm` template: its `url` (http or https, optionally pinned by a digest,
 * `url#sha256=<hex>`) fetched with a size limit and a time limit, and kept in memory, so a rollout
 * of many instances of one plan fetches the chart once. A cached chart is reused for `ttlMs`, then
 * asked for again with its ETag (a 304 keeps it); a pinned chart is reused as long as it is cached.
 */
import { createHash } from 'node:crypto';
import { TemplateError } from '../errors.js';
import { fetchFailure, limitedBody } from '../source.js';

/** Limits of chart archives fetched from a `url`. */
export interface ChartLimits {
  /** Most bytes of a chart archive. @default 4 MiB */
  readonly maxBytes: number;
  /** Time limit of one fetch, in milliseconds. @default 20000 */
  readonly timeoutMs: number;
  /** How long a fetched chart is reused before it is asked for again, in milliseconds. @default 300000 */
  readonly ttlMs: number;
}

/** The limits of charts unless given otherwise. */
export const CHART_LIMITS: ChartLimits = { maxBytes: 4 * 1024 * 1024, timeoutMs: 20_000, ttlMs: 5 * 60_000 };

/** A chart archive and the SHA-256 digest of its bytes (lower-case hex). */
export interface ChartArchive {
  readonly bytes: Buffer;
  readonly digest: string;
}

interface Cached extends ChartArchive {
  readonly etag?: string;
  expires: number;
}

/** Most charts kept; the oldest go first. */
const CACHE_ENTRIES = 64;
/** By URL (without its digest pin), and by digest for pinned URLs. */
const byUrl = new Map<string, Cached>();
const byDigest = new Map<string, ChartArchive>();
const inFlight = new Map<string, Promise<ChartArchive>>();

/** Forgets every fetched chart (tests, or to pick up a changed chart at once). */
export function clearChartCache(): void {
  byUrl.clear();
  byDigest.clear();
}

const remember = <V>(map: Map<string, V>, key: string, value: V): void => {
  map.delete(key);
  if (map.size >= CACHE_ENTRIES) map.delete(map.keys().next().value!);
  map.set(key, value);
};

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The URL to fetch and the digest it is pinned to, if any. */
export function parseChartUrl(url: string): { readonly url: string; readonly digest?: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TemplateError(`chart url ${url} is not a valid URL`, 'source');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TemplateError(`chart url ${url} is not http(s)`, 'source');
  }
  const pin = /^#sha256=([0-9a-fA-F]{64})$/.exec(parsed.hash);
  if (parsed.hash && !pin) {
    throw new TemplateError(`chart url ${url} has a fragment other than #sha256=<64 hex digits>`, 'source');
  }
  parsed.hash = '';
  return { url: parsed.href, ...(pin ? { digest: pin[1]!.toLowerCase() } : {}) };
}

/** Checks that the bytes are a gzip stream (a chart archive is a gzipped tarball). */
export function checkGzip(bytes: Uint8Array, where: string): void {
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    throw new TemplateError(`${where} is not a chart archive: it is not a gzipped tarball`, 'source');
  }
}

/** GETs the chart, or learns that the cached one (by its ETag) is still current (undefined). */
async function download(url: string, limits: ChartLimits, etag?: string): Promise<Cached | undefined> {
  const failed = (why: string) => new TemplateError(`fetching chart ${url} failed: ${why}`, 'source');
  let response: Response;
  try {
    response = await fetch(url, {
      signal: AbortSignal.timeout(limits.timeoutMs),
      redirect: 'follow',
      headers: etag ? { 'if-none-match': etag } : {},
    });
  } catch (err) {
    throw failed(fetchFailure(err, limits));
  }
  if (response.status === 304 && etag) {
    await response.body?.cancel();
    return undefined;
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw failed(`HTTP ${response.status}`);
  }
  const bytes = await limitedBody(response, limits, failed);
  checkGzip(bytes, `chart ${url}`);
  const tag = response.headers.get('etag');
  return { bytes, digest: sha256(bytes), ...(tag ? { etag: tag } : {}), expires: Date.now() + limits.ttlMs };
}

/**
 * The chart archive at `url` (http or https; `#sha256=<hex>` pins its digest), from the cache when
 * it is fresh. Fails with a {@link TemplateError} (reason `source`) when it cannot be fetched, is
 * over `maxBytes`, is not a gzipped tarball or does not match its pin.
 */
export async function fetchChart(url: string, limits: ChartLimits = CHART_LIMITS): Promise<ChartArchive> {
  const { url: target, digest } = parseChartUrl(url);
  if (digest) {
    const pinned = byDigest.get(digest);
    if (pinned) return pinned;
  }
  const cached = byUrl.get(target);
  if (cached && cached.expires > Date.now() && (!digest || cached.digest === digest)) return cached;
  const key = `${target}#${digest ?? ''}`;
  let pending = inFlight.get(key);
  if (!pending) {
    pending = (async () => {
      const fresh = await download(target, limits, cached?.etag);
      const chart = fresh ?? cached!;
      if (!fresh) chart.expires = Date.now() + limits.ttlMs;
      if (digest && chart.digest !== digest) {
        throw new TemplateError(
          `chart ${target} does not match its pin: its sha256 is ${chart.digest}, not ${digest}`,
          'source',
        );
      }
      remember(byUrl, target, chart as Cached);
      remember(byDigest, chart.digest, { bytes: chart.bytes, digest: chart.digest });
      return chart;
    })().finally(() => inFlight.delete(key));
    inFlight.set(key, pending);
  }
  return pending;
}
