/**
 * Where template text comes from (`content`, base64 `contentEncoded`, `url` with a size limit, a
 * timeout and a cache) and the render command service owners use.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { PlanTemplate } from '../../../src/resources/types.js';
import {
  clearTemplateCache,
  closeRenderer,
  renderTemplate,
  TemplateError,
  templateText,
  URL_LIMITS,
} from '../../../src/templates/index.js';

afterAll(() => closeRenderer());

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('it succeeded');
    },
    (err: unknown) => err as TemplateError,
  );

describe('content and contentEncoded', () => {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  test.each<[string, Partial<PlanTemplate>, string]>([
    ['content', { content: 'a' }, 'a'],
    ['contentEncoded', { contentEncoded: b64('{{ 2 }}') }, '{{ 2 }}'],
    [
      'contentEncoded with line breaks',
      { contentEncoded: b64('x'.repeat(100)).replace(/(.{60})/g, '$1\n') },
      'x'.repeat(100),
    ],
    ['content before contentEncoded, as in the original', { content: 'c', contentEncoded: b64('e') }, 'c'],
    ['an empty content falls back to contentEncoded', { content: '', contentEncoded: b64('e') }, 'e'],
    ['an empty content alone is an empty template', { content: '' }, ''],
  ])('%s', async (_, fields, text) => {
    expect(await templateText({ action: 'status', type: 'gotemplate', ...fields })).toBe(text);
  });

  test.each([['not base64!'], ['YWJj=']])('contentEncoded %j is refused', async (encoded) => {
    const err = await failure(templateText({ action: 'bind', type: 'gotemplate', contentEncoded: encoded }));
    expect([err.reason, err.message]).toEqual([
      'source',
      "the bind template's contentEncoded is not valid base64",
    ]);
  });

  test('a template with no text at all is refused', async () => {
    const err = await failure(templateText({ action: 'status', type: 'gotemplate' }));
    expect(err.message).toBe('the status template has no content, contentEncoded or url');
  });

  test('a contentEncoded template renders', async () => {
    const t: PlanTemplate = { action: 'status', type: 'gotemplate', contentEncoded: b64('{{ .x }}') };
    expect(await renderTemplate(t, 'status', { x: 'decoded' })).toBe('decoded');
  });
});

describe('templates from a url', () => {
  let server: http.Server;
  let base: string;
  const hits = new Map<string, number>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
      if (req.url === '/ok.tpl' || req.url === '/ttl.tpl' || req.url === '/together.tpl') {
        setTimeout(() => res.end('name: {{ .instance.name }}'), 20);
      } else if (req.url === '/huge.tpl') res.end('x'.repeat(2 * 1024 * 1024));
      else if (req.url === '/chunked-huge.tpl') {
        // No content-length: the limit must hold while the body streams in.
        res.write('x'.repeat(700 * 1024));
        res.end('x'.repeat(700 * 1024));
      } else if (req.url === '/slow.tpl') {
        // Never answers within the test's time limit.
      } else if (req.url === '/moved.tpl') {
        res.writeHead(302, { location: '/ok.tpl' }).end();
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('GIVEN a url template WHEN rendered twice THEN it is fetched once and rendered', async () => {
    const t = { action: 'provision' as const, type: 'gotemplate' as const, url: `${base}/ok.tpl` };
    expect(await renderTemplate(t, 'provision', { instance: { name: 'a' } })).toBe('name: a');
    expect(await renderTemplate(t, 'provision', { instance: { name: 'b' } })).toBe('name: b');
    expect(hits.get('/ok.tpl')).toBe(1);
  });

  test('renders at once share one fetch', async () => {
    const t = { action: 'status' as const, type: 'mustache' as const, url: `${base}/together.tpl` };
    await Promise.all(Array.from({ length: 5 }, () => templateText(t)));
    expect(hits.get('/together.tpl')).toBe(1);
  });

  test('a fetched template is fetched again once its time to live has passed', async () => {
    const t = { action: 'status' as const, type: 'gotemplate' as const, url: `${base}/ttl.tpl` };
    const limits = { ...URL_LIMITS, ttlMs: 50 };
    await templateText(t, limits);
    await templateText(t, limits);
    expect(hits.get('/ttl.tpl')).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await templateText(t, limits);
    expect(hits.get('/ttl.tpl')).toBe(2);
    clearTemplateCache();
    await templateText(t, limits);
    expect(hits.get('/ttl.tpl')).toBe(3);
  });

  test('a redirect is followed', async () => {
    clearTemplateCache();
    expect(await templateText({ action: 'status', type: 'gotemplate', url: `${base}/moved.tpl` })).toBe(
      'name: {{ .instance.name }}',
    );
  });

  test.each([
    ['over 1 MiB', '/huge.tpl', /^fetching template .*\/huge.tpl failed: it is over 1048576 bytes$/],
    ['over 1 MiB without a content-length', '/chunked-huge.tpl', /failed: it is over 1048576 bytes$/],
    ['a 404', '/missing.tpl', /^fetching template .*\/missing.tpl failed: HTTP 404$/],
  ])('a template %s fails with a clear error', async (_, url, message) => {
    const err = await failure(
      renderTemplate({ action: 'status', type: 'gotemplate', url: `${base}${url}` }, 'status', {}),
    );
    expect(err).toBeInstanceOf(TemplateError);
    expect(err.reason).toBe('source');
    expect(err.message).toMatch(message);
  });

  test('a server that does not answer fails at the time limit', async () => {
    const started = Date.now();
    const err = await failure(
      renderTemplate(
        { action: 'status', type: 'gotemplate', url: `${base}/slow.tpl` },
        'status',
        {},
        { url: { timeoutMs: 200 } },
      ),
    );
    expect(err.message).toBe(`fetching template ${base}/slow.tpl failed: no answer within 200 ms`);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test.each([
    ['file:///etc/passwd', 'template url file:///etc/passwd is not http(s)'],
    ['not a url', 'template url not a url is not a valid URL'],
  ])('url %j is refused', async (url, message) => {
    const err = await failure(renderTemplate({ action: 'status', type: 'gotemplate', url }, 'status', {}));
    expect([err.reason, err.message]).toEqual(['source', message]);
  });
});

describe('interoperator template render', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'render-cli-'));
  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const main = 'dist/src/cli/main.js';
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', timeout: 30_000 });

  test('is built (npm run build)', () => {
    expect({ main, built: existsSync(main) }).toEqual({ main, built: true });
  });

  test('renders a gotemplate over a YAML data file, byte for byte, and exits at once', () => {
    const data = file('data.yaml', 'plan:\n  spec:\n    context: {size: 1000000}\npg:\n  n: 1000000\n');
    const started = Date.now();
    const res = cli(
      'template',
      'render',
      file('t.tpl', '{{ .plan.spec.context.size }} {{ .pg.n }}\n\t '),
      data,
    );
    expect([res.status, res.stdout, res.stderr]).toEqual([0, '1e+06 1000000\n\t ', '']);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test('renders mustache over a JSON data file', () => {
    const data = file('data.json', '{"instance": {"metadata": {"name": "x<y"}}}');
    for (const type of [['--type', 'mustache'], ['--type=mustache']]) {
      const res = cli('template', 'render', file('m.tpl', 'name: {{instance.metadata.name}}'), data, ...type);
      expect([res.status, res.stdout]).toEqual([0, 'name: x<y']);
    }
  });

  test('a template error goes to stderr in Go’s words, with exit status 1', () => {
    const res = cli(
      'template',
      'render',
      file('bad.tpl', '{{ if }}'),
      file('d.json', '{}'),
      '--action',
      'status',
    );
    expect([res.status, res.stdout, res.stderr]).toEqual([
      1,
      '',
      'template: status:1: missing value for if\n',
    ]);
  });

  test('a missing file or a data file that is not an object fails with exit status 1', () => {
    const missing = cli('template', 'render', path.join(dir, 'nope.tpl'), file('d2.json', '{}'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/^cannot read the template file .*nope.tpl: ENOENT/);
    const list = cli('template', 'render', file('ok.tpl', 'x'), file('list.yaml', '- 1\n'));
    expect([list.status, list.stderr]).toEqual([
      1,
      'the data file must hold an object (keys instance, plan, service, binding, ...)\n',
    ]);
  });

  test('--help prints the usage on stdout', () => {
    const res = cli('--help');
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^usage: interoperator template render TEMPLATE_FILE DATA_FILE/);
  });

  test.each([
    [['template', 'explode'], 'unknown command template explode'],
    [[], 'no command'],
    [['template', 'render', 'only-one'], 'template render needs TEMPLATE_FILE DATA_FILE'],
    [['template', 'render', 'a', 'b', '--frob'], 'unknown option --frob'],
    [['template', 'render', 'a', 'b', '--type', 'helm'], '--type must be gotemplate or mustache'],
    [['template', 'render', 'a', 'b', '--action'], '--action needs a value'],
  ])('wrong usage %j prints the usage with exit status 2', (args, error) => {
    const res = cli(...args);
    expect([res.status, res.stdout]).toEqual([2, '']);
    expect(res.stderr).toMatch(new RegExp(`^interoperator: ${error.replace(/[-]/g, '\\-')}\nusage: `));
  });
});
