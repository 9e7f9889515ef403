/** Template text from a URL (size limit, caching) and the render command service owners use. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { closeRenderer, renderTemplate, TemplateError } from '../../../src/templates/index.js';

afterAll(() => closeRenderer());

describe('templates from a url', () => {
  let server: http.Server;
  let base: string;
  const hits = new Map<string, number>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
      if (req.url === '/ok.tpl') res.end('name: {{ .instance.name }}');
      else if (req.url === '/huge.tpl') res.end('x'.repeat(2 * 1024 * 1024));
      else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  test('GIVEN a url template WHEN rendered twice THEN it is fetched once and rendered', async () => {
    const t = { action: 'provision' as const, type: 'gotemplate' as const, url: `${base}/ok.tpl` };
    expect(await renderTemplate(t, 'provision', { instance: { name: 'a' } })).toBe('name: a');
    expect(await renderTemplate(t, 'provision', { instance: { name: 'b' } })).toBe('name: b');
    expect(hits.get('/ok.tpl')).toBe(1);
  });

  test('a template over 1 MiB, a 404 and a non-http url fail with clear errors', async () => {
    const render = (url: string) =>
      renderTemplate({ action: 'status', type: 'gotemplate', url }, 'status', {});
    await expect(render(`${base}/huge.tpl`)).rejects.toThrow(/is over 1048576 bytes/);
    await expect(render(`${base}/missing.tpl`)).rejects.toThrow(/HTTP 404/);
    const err = await render('file:///etc/passwd').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemplateError);
    expect((err as Error).message).toMatch(/is not http\(s\)/);
  });
});

describe('interoperator template render', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'render-cli-'));
  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ['dist/src/cli/main.js', ...args], { encoding: 'utf8', timeout: 30_000 });

  test('renders a gotemplate over a YAML data file, byte for byte', () => {
    const data = file('data.yaml', 'plan:\n  spec:\n    context: {size: 1000000}\npg:\n  n: 1000000\n');
    const res = cli('template', 'render', file('t.tpl', '{{ .plan.spec.context.size }} {{ .pg.n }}\n'), data);
    expect([res.status, res.stdout, res.stderr]).toEqual([0, '1e+06 1000000\n', '']);
  });

  test('renders mustache over a JSON data file', () => {
    const data = file('data.json', '{"instance": {"metadata": {"name": "x<y"}}}');
    const res = cli(
      'template',
      'render',
      file('m.tpl', 'name: {{instance.metadata.name}}'),
      data,
      '--type',
      'mustache',
    );
    expect([res.status, res.stdout]).toEqual([0, 'name: x<y']);
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
    expect(res.status).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toBe('template: status:1: missing value for if\n');
  });

  test('wrong usage prints the usage with exit status 2', () => {
    const res = cli('template', 'explode');
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/^usage: interoperator template render/);
  });
});
