/**
 * The render command service owners use (`interoperator template render`), run as built
 * (dist/src/cli/main.js).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { releaseName } from '../../../src/templates/index.js';
import { FIXTURE_CHARTS, packChart } from '../../support/helm.js';

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

  test('renders jsonnet with --type jsonnet: the data as external variables, the JSON it manifests', () => {
    const data = file('j.yaml', 'instance: {metadata: {name: abc}}\npg: {spec: {port: 5432}}\n');
    const res = cli(
      'template',
      'render',
      file(
        't.jsonnet',
        "{ name: std.extVar('instance').metadata.name, port: std.extVar('sources').pg.spec.port }",
      ),
      data,
      '--type',
      'jsonnet',
    );
    expect([res.status, res.stdout, res.stderr]).toEqual([
      0,
      '{\n   "name": "abc",\n   "port": 5432\n}\n',
      '',
    ]);
    const bad = cli('template', 'render', file('bad.jsonnet', "error 'no'"), data, '--type=jsonnet');
    expect([bad.status, bad.stdout, bad.stderr]).toEqual([1, '', 'jsonnet: provision:1:1-11: no\n']);
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

  test('--help prints the usage on stdout, naming every command', () => {
    const res = cli('--help');
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^Usage: interoperator /);
    for (const command of ['template', 'instances', 'bindings', 'rollout'])
      expect(res.stdout).toContain(command);
    const render = cli('template', 'render', '--help');
    expect([render.status, render.stdout]).toEqual([
      0,
      expect.stringMatching(/^Usage: interoperator template render \[options\] <TEMPLATE_FILE> <DATA_FILE>/),
    ]);
  });

  test('renders a helm chart from a file with values from the template', () => {
    // GIVEN the test chart packed, and values that set its required database host
    const chart = path.join(dir, 'webapp.tgz');
    writeFileSync(chart, packChart(path.join(FIXTURE_CHARTS, 'webapp')));
    const data = file('helm-data.yaml', 'instance:\n  metadata: {name: abc, namespace: sf-abc}\n');
    const values = file('values.tpl', 'database:\n  host: {{ .instance.metadata.name }}-db\n');
    // WHEN
    const res = cli('template', 'render', '--type', 'helm', '--chart', chart, values, data);
    // THEN the chart's manifests, for release in-<adler32 of abc>
    expect([res.status, res.stderr]).toEqual([0, '']);
    expect(res.stdout).toContain('# Source: webapp/templates/secret.yaml\n');
    expect(res.stdout).toContain('url: "postgres://abc-db:5432/app"');
    expect(res.stdout).toContain(`name: ${releaseName('abc')}-webapp\n`);
  });

  test('a helm chart that is not there: the error, exit status 1', () => {
    const data = file('helm-data2.yaml', 'instance:\n  metadata: {name: abc, namespace: sf-abc}\n');
    const res = cli(
      'template',
      'render',
      '--type',
      'helm',
      '--chart',
      path.join(dir, 'none.tgz'),
      data,
      data,
    );
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/^cannot read the chart .*none\.tgz: ENOENT/);
  });

  test.each([
    [['--type', 'helm'], '--type helm needs --chart URL_OR_PATH'],
    [['--chart', 'c.tgz'], '--chart goes with --type helm'],
  ])('a helm chart option misused %j: the error, exit status 2', (args, error) => {
    const res = cli('template', 'render', 'a', 'b', ...args);
    expect([res.status, res.stdout, res.stderr]).toEqual([2, '', `interoperator: ${error}\n`]);
  });

  test('no command prints the usage on stderr with exit status 2', () => {
    const res = cli();
    expect([res.status, res.stdout]).toEqual([2, '']);
    expect(res.stderr).toMatch(/^Usage: interoperator /);
  });

  test.each([
    [['template', 'explode'], "unknown command 'explode'"],
    [['template', 'render', 'only-one'], "missing required argument 'DATA_FILE'"],
    [['template', 'render', 'a', 'b', '--frob'], "unknown option '--frob'"],
    [
      ['template', 'render', 'a', 'b', '--type', 'jinja'],
      "option '--type <type>' argument 'jinja' is invalid",
    ],
    [['template', 'render', 'a', 'b', '--action'], "option '--action <name>' argument missing"],
  ])('wrong usage %j prints the error and the usage with exit status 2', (args, error) => {
    const res = cli(...args);
    expect([res.status, res.stdout]).toEqual([2, '']);
    const escaped = error.replace(/[-[\]()<>'.*+?]/g, (c) => `\\${c}`);
    expect(res.stderr).toMatch(new RegExp(`^interoperator: ${escaped}.*\n\nUsage: `));
  });
});
