/**
 * Fetching the chart of a helm template: limits, the cache by URL and ETag, and the digest pin,
 * against a small HTTP server standing for a service owner's chart repository.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { clearChartCache, fetchChart, parseChartUrl } from '../../../src/templates/helm/chart.js';
import type { TemplateError } from '../../../src/templates/errors.js';
import { rejectionOf } from '../../support/rejection.js';

const CHART = gzipSync('a chart, as far as fetching goes');
const DIGEST = createHash('sha256').update(CHART).digest('hex');
const LIMITS = { maxBytes: 1024, timeoutMs: 500, ttlMs: 60_000 };

let server: http.Server;
let base: string;
const hits = new Map<string, number>();
const conditional: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = req.url!;
    hits.set(url, (hits.get(url) ?? 0) + 1);
    if (req.headers['if-none-match']) conditional.push(url);
    if (url === '/chart.tgz') {
      if (req.headers['if-none-match'] === '"v1"') res.writeHead(304).end();
      else res.writeHead(200, { etag: '"v1"' }).end(CHART);
    } else if (url === '/plain.txt') res.end('not gzipped');
    else if (url === '/huge.tgz') res.end(Buffer.alloc(4096));
    else if (url === '/streamed-huge.tgz') {
      res.write(Buffer.alloc(700));
      res.end(Buffer.alloc(700));
    } else if (url === '/slow.tgz') {
      // Never answers within the limit.
    } else res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

beforeEach(() => {
  clearChartCache();
  hits.clear();
  conditional.length = 0;
});

const failure = (url: string, limits = LIMITS) => rejectionOf<TemplateError>(fetchChart(url, limits));

test('GIVEN a chart WHEN fetched twice within its ttl THEN it is downloaded once', async () => {
  const [a, b] = await Promise.all([
    fetchChart(`${base}/chart.tgz`, LIMITS),
    fetchChart(`${base}/chart.tgz`, LIMITS),
  ]);
  const c = await fetchChart(`${base}/chart.tgz`, LIMITS);
  expect([a.digest, b.digest, c.digest]).toEqual([DIGEST, DIGEST, DIGEST]);
  expect(c.bytes.equals(CHART)).toBe(true);
  expect(hits.get('/chart.tgz')).toBe(1);
});

test('GIVEN a cached chart past its ttl WHEN fetched THEN it is asked for with its ETag and a 304 keeps it', async () => {
  await fetchChart(`${base}/chart.tgz`, { ...LIMITS, ttlMs: 0 });
  const again = await fetchChart(`${base}/chart.tgz`, { ...LIMITS, ttlMs: 0 });
  expect(again.bytes.equals(CHART)).toBe(true);
  expect(conditional).toEqual(['/chart.tgz']);
});

test('GIVEN a pinned URL WHEN its chart is cached THEN it is not asked for again, whatever the ttl', async () => {
  await fetchChart(`${base}/chart.tgz#sha256=${DIGEST}`, { ...LIMITS, ttlMs: 0 });
  await fetchChart(`${base}/chart.tgz#sha256=${DIGEST.toUpperCase()}`, { ...LIMITS, ttlMs: 0 });
  expect(hits.get('/chart.tgz')).toBe(1);
});

test.each([
  [
    'a pin that does not match',
    `/chart.tgz#sha256=${'0'.repeat(64)}`,
    `does not match its pin: its sha256 is ${DIGEST}`,
  ],
  ['a fragment that is no pin', '/chart.tgz#latest', 'has a fragment other than #sha256=<64 hex digits>'],
  ['a body that is not gzipped', '/plain.txt', 'is not a chart archive: it is not a gzipped tarball'],
  ['a content-length over the limit', '/huge.tgz', 'failed: it is over the limit of 1024 bytes'],
  ['a streamed body over the limit', '/streamed-huge.tgz', 'failed: it is over the limit of 1024 bytes'],
  ['no answer within the limit', '/slow.tgz', 'failed: no answer within 500 ms'],
  ['a 404', '/missing.tgz', 'failed: HTTP 404'],
])('GIVEN %s WHEN fetched THEN it fails with a source error that says so', async (_, path, message) => {
  const err = await failure(`${base}${path}`);
  expect([err.name, err.reason]).toEqual(['TemplateError', 'source']);
  expect(err.message).toContain(message);
});

test('GIVEN an unreachable host WHEN fetched THEN it fails naming the chart', async () => {
  // A port that was just free: nothing listens there.
  const closed = http.createServer().listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const { port } = closed.address() as AddressInfo;
  closed.close();
  const err = await failure(`http://127.0.0.1:${port}/chart.tgz`);
  expect(err.message).toMatch(
    new RegExp(`^fetching chart http://127\\.0\\.0\\.1:${port}/chart\\.tgz failed: .*ECONNREFUSED`),
  );
});

test('GIVEN URLs WHEN parsed THEN http(s) only, the pin apart', () => {
  expect(parseChartUrl(`https://x.example/c.tgz#sha256=${DIGEST}`)).toEqual({
    url: 'https://x.example/c.tgz',
    digest: DIGEST,
  });
  expect(parseChartUrl('http://x.example/c.tgz')).toEqual({ url: 'http://x.example/c.tgz' });
  expect(() => parseChartUrl('oci://x.example/c')).toThrow('chart url oci://x.example/c is not http(s)');
  expect(() => parseChartUrl('c.tgz')).toThrow('chart url c.tgz is not a valid URL');
});
