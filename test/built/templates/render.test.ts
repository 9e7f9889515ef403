/**
 * The rendering API over Go's own text/template (WebAssembly in worker threads): the design
 * document's templates, Go's number typing, errors in Go's words, the limits, and data that tries
 * to reach JavaScript prototypes.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { PlanTemplate, SFPlan } from '../../../src/resources/types.js';
import {
  closeRenderer,
  configureRenderer,
  DEFAULT_LIMITS,
  findTemplate,
  renderObjects,
  renderTemplate,
  renderValues,
  TemplateError,
  type RenderData,
} from '../../../src/templates/index.js';
import { rejectionOf } from '../../support/rejection.js';

const plan = parse(readFileSync('examples/postgresql/sfplan.yaml', 'utf8')) as SFPlan;
const template = (action: PlanTemplate['action']) => findTemplate(plan, action)!;
const go = (content: string): PlanTemplate => ({ action: 'status', type: 'gotemplate', content });
const render = (content: string, data: RenderData = {}, options = {}) =>
  renderTemplate(go(content), 'status', data, options);
const failure = (promise: Promise<unknown>) => rejectionOf<TemplateError>(promise);

const instance = { metadata: { name: 'abc', namespace: 'sf-abc' }, spec: { planId: plan.spec.id } };
const postgresql = (status?: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'acid.zalan.do/v1',
  kind: 'postgresql',
  metadata: { name: 'sapcp-abc', namespace: 'sf-abc', ...extra },
  spec: { users: { main: ['superuser'] } },
  ...(status ? { status } : {}),
});

afterAll(() => closeRenderer());

describe('the design document’s PostgreSQL templates', () => {
  test('sources name the postgresql of the instance', async () => {
    expect(await renderValues(template('sources'), 'sources', { instance, plan })).toEqual({
      postgresql: {
        apiVersion: 'acid.zalan.do/v1',
        kind: 'postgresql',
        name: 'sapcp-abc',
        namespace: 'sf-abc',
      },
    });
  });

  test('provision renders one postgresql with the plan’s context (numbers as Go prints them)', async () => {
    const [pg, ...rest] = await renderObjects(template('provision'), 'provision', { instance, plan });
    expect(rest).toEqual([]);
    expect(pg).toMatchObject({
      kind: 'postgresql',
      metadata: { name: 'sapcp-abc' },
      spec: {
        teamId: 'sapcp',
        postgresql: { version: '9.6', parameters: { max_connections: '100' } },
        resources: { limits: { cpu: '1', memory: '2Gi' } },
        volume: { size: '20Gi' },
        users: { main: ['superuser', 'createdb'] },
      },
    });
  });

  test.each([
    ['gone', undefined, 'in progress'],
    ['no status yet', {}, 'in progress'],
    ['Creating', { PostgresClusterStatus: 'Creating' }, 'in progress'],
    ['Running', { PostgresClusterStatus: 'Running' }, 'succeeded'],
    ['CreateFailed', { PostgresClusterStatus: 'CreateFailed', reason: 'no disk' }, 'failed'],
    ['UpdateFailed', { PostgresClusterStatus: 'UpdateFailed' }, 'failed'],
  ])('status of a postgresql that is %s says provision %s', async (_, status, state) => {
    const values = (await renderValues(template('status'), 'status', {
      instance,
      plan,
      ...(status ? { postgresql: postgresql(status) } : {}),
    })) as { provision: { state: string; description: string } };
    expect(values.provision.state).toBe(state);
    expect(values.provision.description).toBe((status as { reason?: string } | undefined)?.reason ?? '');
  });

  test.each([
    ['running', postgresql({ PostgresClusterStatus: 'Running' }), 'in progress'],
    [
      'being deleted',
      postgresql({ PostgresClusterStatus: 'Running' }, { deletionTimestamp: '2026-01-01T00:00:00Z' }),
      'in progress',
    ],
    ['gone', undefined, 'succeeded'],
  ])('status of a postgresql that is %s says deprovision %s', async (_, pg, state) => {
    const values = (await renderValues(template('status'), 'status', {
      instance,
      plan,
      ...(pg ? { postgresql: pg } : {}),
    })) as { deprovision: { state: string } };
    expect(values.deprovision.state).toBe(state);
  });

  test('bind succeeds with credentials once the secret and service exist', async () => {
    const secret = {
      kind: 'Secret',
      data: {
        username: Buffer.from('u1').toString('base64'),
        password: Buffer.from('p@ss').toString('base64'),
      },
    };
    const svc = { spec: { clusterIP: '10.0.0.7', ports: [{ port: 5432 }] } };
    const values = (await renderValues(template('status'), 'status', {
      instance,
      plan,
      binding: { metadata: { name: 'b1' } },
      postgresql: postgresql({ PostgresClusterStatus: 'Running' }),
      secret,
      svc,
    })) as { bind: { state: string; response: string } };
    expect(values.bind.state).toBe('succeeded');
    expect(JSON.parse(values.bind.response)).toEqual({
      credentials: {
        dbname: 'main',
        hostname: '10.0.0.7',
        port: '5432',
        username: 'u1',
        password: 'p@ss',
        uri: 'postgres://u1:p@ss@10.0.0.7:5432/main?sslmode=require',
      },
    });
  });

  test('bind adds the binding’s user and unbind removes it', async () => {
    const data = { instance, plan, binding: { metadata: { name: 'b1' } }, postgresql: postgresql() };
    const [bound] = await renderObjects(template('bind'), 'bind', data);
    expect((bound!.spec as { users: unknown }).users).toEqual({ main: ['superuser'], b1: ['superuser'] });
    const [unbound] = await renderObjects(template('unbind'), 'unbind', {
      ...data,
      postgresql: { ...postgresql(), spec: { users: { main: ['superuser'], b1: ['superuser'] } } },
    });
    expect((unbound!.spec as { users: unknown }).users).toEqual({ main: ['superuser'] });
  });
});

describe('the example plan’s x-restore', () => {
  const run = (parameters: Record<string, unknown>) => ({ name: 'x-restore', id: 'r1', parameters });

  test.each([
    [{ backup: 'b1' }, { id: 'r1', backup: 'b1' }],
    [
      { backup: 'b1', label: 'fail', delayMs: 200 },
      { id: 'r1', backup: 'b1', label: 'fail', delayMs: 200 },
    ],
  ])(
    'GIVEN the parameters %j THEN the postgresql is annotated with the request %j',
    async (parameters, request) => {
      const [pg, ...rest] = await renderObjects(template('x-restore'), 'x-restore', {
        instance,
        plan,
        action: run(parameters),
      });
      expect(rest).toEqual([]);
      const annotations = (pg as { metadata: { annotations: Record<string, string> } }).metadata.annotations;
      expect(pg).toMatchObject({
        apiVersion: 'acid.zalan.do/v1',
        kind: 'postgresql',
        metadata: { name: 'sapcp-abc' },
      });
      // Go writes the request's keys sorted: compare it parsed.
      expect(Object.keys(annotations)).toEqual(['example-operator/restore']);
      expect(JSON.parse(annotations['example-operator/restore']!)).toEqual(request);
    },
  );

  test('GIVEN no backup THEN the render fails, saying what is missing', async () => {
    const err = await failure(
      renderObjects(template('x-restore'), 'x-restore', { instance, plan, action: run({ label: 'x' }) }),
    );
    expect(err.message).toContain('x-restore needs the parameter backup');
  });

  const request = JSON.stringify({ id: 'r1', backup: 'b1' });
  test.each([
    [
      'no restore asked for',
      undefined,
      undefined,
      'in progress',
      'waiting for the operator to restore the backup',
    ],
    [
      'the request, not answered yet',
      request,
      undefined,
      'in progress',
      'waiting for the operator to restore the backup',
    ],
    [
      'an earlier request answered',
      request,
      { request: '{"id":"r0","backup":"b0"}', state: 'Succeeded', backup: 'b0' },
      'in progress',
      'waiting for the operator to restore the backup',
    ],
    [
      'the request in progress',
      request,
      { request, state: 'InProgress' },
      'in progress',
      'waiting for the operator to restore the backup',
    ],
    [
      'the request restored',
      request,
      { request, state: 'Succeeded', backup: 'b1' },
      'succeeded',
      'backup b1 restored',
    ],
    [
      'the request failed',
      request,
      { request, state: 'Failed', reason: 'backup b1 not found' },
      'failed',
      'restore failed: backup b1 not found',
    ],
  ])('GIVEN %s THEN the status says %s', async (_given, annotation, restore, state, description) => {
    const pg = postgresql(
      { PostgresClusterStatus: 'Running', ...(restore ? { restore } : {}) },
      annotation ? { annotations: { 'example-operator/restore': annotation } } : {},
    );
    const values = (await renderValues(template('status'), 'status', {
      instance,
      plan,
      postgresql: pg,
    })) as Record<string, unknown>;
    expect(values['x-restore']).toEqual({ state, description });
  });
});

describe('Go semantics', () => {
  test('the SF resources hold float64 numbers, the sources int64, as in the original', async () => {
    const out = await render('{{ .plan.n }} {{ .pg.n }} {{ printf "%T %T" .plan.n .pg.n }}', {
      plan: { n: 1000000 },
      pg: { n: 1000000 },
    });
    expect(out).toBe('1e+06 1000000 float64 int64');
  });

  test.each([
    [
      'an execution error',
      '{{ .a.b.c }}',
      'template: status:1:5: executing "status" at <.a.b.c>: can\'t evaluate field b in type interface {}',
    ],
    [
      'b64dec of bad input',
      'x\n{{ b64dec "%%%" }}',
      'template: status:2:3: executing "status" at <b64dec "%%%">: error calling b64dec: illegal base64 data at input byte 0',
    ],
    ['a parse error', '{{ if }}', 'template: status:1: missing value for if'],
    [
      'a Go panic in a function',
      '{{ div 1 0 }}',
      'template: status:1:3: executing "status" at <div 1 0>: error calling div: runtime error: integer divide by zero',
    ],
    [
      'unmarshalJSON of bad JSON, in the original’s words',
      '{{ unmarshalJSON "{" }}',
      'template: status:1:3: executing "status" at <unmarshalJSON "{">: error calling unmarshalJSON: failed to unmarshal {. unexpected end of JSON input',
    ],
  ])('%s keeps Go’s wording', async (_, content, message) => {
    const err = await failure(render(content, { a: 1 }));
    expect(err).toBeInstanceOf(TemplateError);
    expect([err.name, err.reason, err.message]).toEqual(['TemplateError', 'template', message]);
  });

  test('the template is named after the action', async () => {
    const err = await failure(renderTemplate(go('{{ .x.y.z.w }}'), 'provision', { x: { y: 's' } }));
    expect(err.message).toMatch(/^template: provision:1:\d+: executing "provision" at <.x.y.z.w>/);
  });

  test('missing keys print <no value>, as Go’s default missingkey option does', async () => {
    expect(await render('{{ .nothing }}|{{ .m.none }}', { m: {} })).toBe('<no value>|<no value>');
  });

  // The original was built with sprig v3.2.3; v3.3.0 changed camelcase (xstrings' upper camel case
  // moved to ToPascalCase) and added sha512sum. These pin the v3.2.3 behaviour templates relied on.
  test.each([
    ['camelcase lower-cases what follows a capital inside a word', '{{ camelcase "fooBar" }}', 'Foobar'],
    ['camelcase of snake case', '{{ camelcase "foo_bar" }} {{ camelcase "FOO_BAR" }}', 'FooBar FooBar'],
  ])('sprig v3.2.3: %s', async (_, content, out) => {
    expect(await render(content)).toBe(out);
  });

  test('sprig v3.2.3 has no sha512sum (v3.3.0 added it)', async () => {
    const err = await failure(render('{{ sha512sum "abc" }}'));
    expect([err.reason, err.message]).toEqual([
      'template',
      'template: status:1: function "sha512sum" not defined',
    ]);
  });

  test('toYaml formats as in Go', async () => {
    expect(await render('{{ toYaml .m }}', { m: { b: [1, 'x'], a: true } })).toBe('a: true\nb:\n- 1\n- x');
  });

  test('template recursion is bounded (1000 levels in WebAssembly) and fails cleanly', async () => {
    const err = await failure(render('{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" 1 }}'));
    expect(err.message).toMatch(/exceeded maximum template depth \(1000\)$/);
  });

  test('template types are matched case-insensitively, as in the original', async () => {
    expect(
      await renderTemplate(
        { action: 'status', type: 'GoTemplate' as 'gotemplate', content: '{{ 1 }}' },
        'status',
        {},
      ),
    ).toBe('1');
  });

  test('helm outside provision and bind, helm without a chart, and an unknown type are refused, with clear errors', async () => {
    const helm = await failure(
      renderTemplate({ action: 'status', type: 'helm', content: 'x' }, 'status', {}),
    );
    expect([helm.reason, helm.message]).toEqual([
      'unsupported',
      'the status template is of type helm, which only provision and bind templates may be',
    ]);
    const noChart = await failure(
      renderTemplate({ action: 'provision', type: 'helm', content: 'x' }, 'provision', { instance }),
    );
    expect([noChart.reason, noChart.message]).toEqual([
      'source',
      'the provision template is of type helm and has no url (its chart)',
    ]);
    const other = await failure(
      renderTemplate(go('x') && { ...go('x'), type: 'jinja' as 'helm' }, 'status', {}),
    );
    expect([other.reason, other.message]).toEqual(['unsupported', 'unknown template type "jinja"']);
  });

  test('data that is not JSON is refused before it reaches a thread', async () => {
    const err = await failure(render('x', { n: 1n }));
    expect([err.reason, err.message]).toEqual([
      'template',
      'template: status: the data is not JSON: Do not know how to serialize a BigInt',
    ]);
  });
});

describe('data that names JavaScript prototypes stays data', () => {
  const hostile = () =>
    JSON.parse(
      '{"__proto__": {"polluted": "yes"}, "x": {"__proto__": "p", "constructor": {"prototype": {"polluted": "yes"}}}}',
    ) as RenderData;

  test('a __proto__ key renders as data and pollutes nothing', async () => {
    expect(
      await render(
        '{{ index . "__proto__" "polluted" }} {{ index .x "__proto__" }} {{ index .x "constructor" "prototype" "polluted" }}',
        hostile(),
      ),
    ).toBe('yes p yes');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  test('rendered YAML with __proto__ keys parses to plain data', async () => {
    const values = (await renderValues(
      go('__proto__: {polluted: 1}\nx:\n  __proto__: [1]'),
      'status',
      {},
    )) as Record<string, unknown>;
    expect(Object.getPrototypeOf(values)).toBe(Object.prototype);
    expect(Object.hasOwn(values, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(values, '__proto__')?.value).toEqual({ polluted: 1 });
    expect(Object.hasOwn(values.x as object, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('limits', () => {
  afterEach(() => configureRenderer(DEFAULT_LIMITS));

  test('a runaway template fails at its time limit, the event loop stays free, and the next render works', async () => {
    await configureRenderer({ timeoutMs: 1000 });
    const started = Date.now();
    let timerFiredAt: number | undefined;
    const timer = setTimeout(() => (timerFiredAt = Date.now()), 50);
    const err = await failure(render('{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}'));
    clearTimeout(timer);
    expect([err.reason, err.message]).toEqual([
      'timeout',
      'template: status: the render exceeded its time limit of 1000 ms',
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(Date.now() - started).toBeLessThan(5000);
    // The timer ran while Go was still looping: the loop ran in a worker thread.
    expect(timerFiredAt! - started).toBeLessThan(900);
    expect(await render('{{ 1 }}')).toBe('1');
  });

  test('a render can set its own time limit', async () => {
    const err = await failure(
      render('{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}', {}, { timeoutMs: 200 }),
    );
    expect(err.reason).toBe('timeout');
    expect(await render('{{ 2 }}')).toBe('2');
  });

  test('a huge output fails cleanly and the next render works', async () => {
    await configureRenderer({ maxOutputBytes: 1024 });
    const err = await failure(render('{{ range until 100000 }}xxxxxxxx{{ end }}'));
    expect([err.reason, err.message]).toEqual([
      'output-too-large',
      'template: status: output exceeds the limit of 1024 bytes',
    ]);
    expect(await render('ok')).toBe('ok');
  });

  test('a huge input is refused before it reaches a thread', async () => {
    await configureRenderer({ maxInputBytes: 1000 });
    const err = await failure(render('x', { big: 'y'.repeat(2000) }));
    expect(err.reason).toBe('input-too-large');
    expect(err.message).toMatch(
      /^template: status: template and data are \d+ bytes, over the limit of 1000$/,
    );
  });

  test('a template that allocates without bound runs out of its memory, not the process’s', async () => {
    const err = await failure(render('{{ $x := until 1000000000 }}{{ len $x }}', {}, { timeoutMs: 10_000 }));
    expect([err.reason, err.message]).toEqual([
      'out-of-memory',
      'template: status: the render ran out of memory',
    ]);
    expect(await render('{{ 3 }}')).toBe('3');
  });

  test('many renders at once all come back right', async () => {
    const outputs = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        render('{{ .n }}-{{ .plan.n }}', { n: i, plan: { n: i * 1000 } }),
      ),
    );
    expect(outputs).toEqual(Array.from({ length: 200 }, (_, i) => `${i}-${i * 1000}`));
  });

  test('renders running or queued when the renderer closes fail; the next render starts it again', async () => {
    const runaway = '{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}';
    const pending = Array.from({ length: 4 }, () => failure(render(runaway, {}, { timeoutMs: 20_000 })));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await closeRenderer();
    for (const err of await Promise.all(pending)) {
      expect([err.reason, err.message]).toEqual(['unavailable', 'the renderer is closed']);
    }
    expect(await render('{{ 4 }}')).toBe('4');
  });

  test('a missing WebAssembly build says to run npm run build', async () => {
    await configureRenderer({ wasmFile: '/nonexistent/gotemplate.wasm' });
    const err = await failure(render('x'));
    expect(err.reason).toBe('unavailable');
    expect(err.message).toMatch(/is not built .*run `npm run build`/);
  });
});
