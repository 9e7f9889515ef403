import supertest from 'supertest';
import { bearerMatches, createMonitoringApp, type MonitoringOptions } from '../../../src/api/monitoring.js';

const TEXT = '# HELP up x\n# TYPE up gauge\nup 1\n';
const metrics = async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: TEXT });

const http = (options: Partial<MonitoringOptions> = {}) =>
  supertest(createMonitoringApp({ metrics, ready: () => true, ...options }).callback());

describe('the operations port', () => {
  test('GIVEN no token WHEN /metrics is scraped THEN it answers the text', async () => {
    const res = await http().get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toBe(TEXT);
  });

  test.each([
    ['no header', undefined, 401],
    ['another token', 'Bearer nope', 401],
    ['Basic auth', `Basic ${Buffer.from('a:s3cret').toString('base64')}`, 401],
    ['the token', 'Bearer s3cret', 200],
    ['the token, scheme in lower case', 'bearer s3cret', 200],
  ])('GIVEN a token WHEN /metrics is scraped with %s THEN %d', async (_name, header, status) => {
    const req = http({ tokens: () => ['s3cret'] }).get('/metrics');
    const res = await (header ? req.set('Authorization', header) : req);
    expect(res.status).toBe(status);
    if (status === 401) {
      expect(res.headers['www-authenticate']).toBe('Bearer realm="metrics"');
      expect(res.text).not.toContain('up 1');
    }
  });

  test('GIVEN a token WHEN the probes are asked without it THEN they answer', async () => {
    const api = http({ tokens: () => ['s3cret'] });
    expect((await api.get('/livez')).status).toBe(200);
    expect((await api.get('/readyz')).status).toBe(200);
  });

  test('readiness follows its check', async () => {
    let ready = false;
    const api = http({ ready: () => ready });
    expect((await api.get('/readyz')).status).toBe(503);
    expect((await api.get('/livez')).status).toBe(200);
    ready = true;
    expect((await api.get('/readyz')).body).toEqual({ status: 'ready' });
    ready = false;
    expect((await api.get('/readyz')).body).toEqual({ status: 'not ready' });
  });

  test('GIVEN metrics that fail WHEN scraped THEN 500 without the error text', async () => {
    const res = await http({
      metrics: () => Promise.reject(new Error('secret detail')),
    }).get('/metrics');
    expect(res.status).toBe(500);
    expect(res.text).not.toContain('secret detail');
  });

  test('unknown paths and other methods', async () => {
    expect((await http().get('/v2/catalog')).status).toBe(404);
    const res = await http().post('/metrics');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  test.each([
    ['Bearer abc', 'abc', true],
    ['Bearer  abc ', 'abc', true],
    ['Bearer abcd', 'abc', false],
    ['Bearer', '', false],
    ['', '', false],
    ['Token abc', 'abc', false],
    ['Bearer old', ['new', 'old'], true],
    ['Bearer new', ['new', 'old'], true],
    ['Bearer older', ['new', 'old'], false],
    ['Bearer ', ['', 'x'], false],
  ])('bearerMatches(%j, %j) is %s', (header, token, expected) => {
    expect(bearerMatches(header, token)).toBe(expected);
  });
});
