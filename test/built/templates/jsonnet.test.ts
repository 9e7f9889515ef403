/**
 * jsonnet templates: go-jsonnet in the same WebAssembly module, worker threads and limits as
 * gotemplate; the action's data as external variables; output as objects or one value; errors in
 * one line; hostile programs stopped; the same output as go-jsonnet built natively. And the example plan written in jsonnet (examples/jsonnet),
 * which must say what the design document's plan says in every state of the example operator.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { PlanTemplate, SFPlan, SFService, TemplateAction } from '../../../src/resources/types.js';
import {
  closeRenderer,
  configureRenderer,
  DEFAULT_LIMITS,
  findTemplate,
  renderObjects,
  renderTemplate,
  renderValues,
  type RenderData,
  type TemplateError,
} from '../../../src/templates/index.js';
import { renderNatively } from '../../../bench/render-native.js';
import { exampleStates, expectSameStatus } from '../../support/example-states.js';
import { rejectionOf } from '../../support/rejection.js';

const jsonnet = (content: string, action: TemplateAction = 'status'): PlanTemplate => ({
  action,
  type: 'jsonnet',
  content,
});
const render = (content: string, data: RenderData = {}, options = {}) =>
  renderTemplate(jsonnet(content), 'status', data, options);
const failure = (promise: Promise<unknown>) => rejectionOf<TemplateError>(promise);
const configMap = (name: string, data: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name },
  data,
});

afterAll(() => closeRenderer());

describe('jsonnet: what a program sees', () => {
  const instance = { metadata: { name: 'abc', namespace: 'sf-abc' }, spec: { n: 1000000 } };
  const plan = { spec: { id: 'p1', context: { prefix: 'pg', ratio: 0.5 } } };

  test('the records are external variables; binding and action are null when the action has none', async () => {
    const out = await renderValues(
      jsonnet(
        "{ name: std.extVar('instance').metadata.name, n: std.extVar('instance').spec.n, " +
          "prefix: std.extVar('plan').spec.context.prefix, ratio: std.extVar('plan').spec.context.ratio, " +
          "binding: std.extVar('binding'), service: std.extVar('service'), action: std.extVar('action') }",
      ),
      'status',
      { instance, plan },
    );
    expect(out).toEqual({
      name: 'abc',
      n: 1000000,
      prefix: 'pg',
      ratio: 0.5,
      binding: null,
      service: null,
      action: null,
    });
  });

  test('source objects are under `sources`, by key, only those that exist', async () => {
    const sources = jsonnet(
      "local s = std.extVar('sources'); { keys: std.objectFields(s), pg: std.get(s, 'pg', 'absent'), " +
        "svc: std.get(s, 'svc', 'absent'), port: s.svc.spec.ports[0].port }",
    );
    const svc = { kind: 'Service', spec: { ports: [{ port: 5432 }] } };
    expect(await renderValues(sources, 'status', { instance, plan, svc })).toEqual({
      keys: ['svc'],
      pg: 'absent',
      svc,
      port: 5432,
    });
    expect(await renderValues(jsonnet("std.extVar('sources')"), 'status', { instance })).toEqual({});
  });

  test('a custom action’s run is `action`, a binding is `binding`', async () => {
    const out = await renderValues(
      jsonnet("[std.extVar('action').parameters.label, std.extVar('binding').metadata.name]"),
      'x-backup' as TemplateAction,
      {
        instance,
        binding: { metadata: { name: 'b1' } },
        action: { name: 'x-backup', parameters: { label: 'l' } },
      },
    );
    expect(out).toEqual(['l', 'b1']);
  });

  test('keys such as __proto__ stay data', async () => {
    const src = JSON.parse('{"__proto__": {"polluted": 1}, "constructor": "c"}') as Record<string, unknown>;
    const out = (await renderValues(
      jsonnet("local s = std.extVar('sources').src; { p: s.__proto__, c: s.constructor, x: s }"),
      'status',
      { src },
    )) as Record<string, unknown>;
    expect(out.p).toEqual({ polluted: 1 });
    expect(out.c).toBe('c');
    expect(Object.hasOwn(out.x as object, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('jsonnet: output', () => {
  const objects = (content: string, data: RenderData = {}) =>
    renderObjects(jsonnet(content, 'provision'), 'provision', data);

  test('renderTemplate gives the JSON the program manifests, as the jsonnet command prints it', async () => {
    expect(await render("{ b: [1, 'x'], a: true }")).toBe(
      '{\n   "a": true,\n   "b": [\n      1,\n      "x"\n   ]\n}\n',
    );
  });

  test('an object is one Kubernetes object', async () => {
    expect(
      await objects("{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: {} }"),
    ).toEqual([configMap('a')]);
  });

  test('a list gives its objects in order; null items and a null program give none', async () => {
    const list = (name: string) =>
      `{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '${name}' }, data: {} }`;
    expect(await objects(`[${list('a')}, null, ${list('b')}]`)).toEqual([configMap('a'), configMap('b')]);
    expect(await objects('null')).toEqual([]);
    expect(await objects('[]')).toEqual([]);
  });

  test.each([
    [
      'a string',
      "'abc'",
      "the provision template's document 1 is a string of 3 characters, not a Kubernetes object",
    ],
    ['a list of lists', '[[]]', "the provision template's document 1 is a list, not a Kubernetes object"],
    [
      'an object without a kind',
      "[{ apiVersion: 'v1', metadata: { name: 'a' } }]",
      "the provision template's document 1 is not a Kubernetes object: it needs apiVersion, kind and metadata.name",
    ],
  ])('%s is refused, naming the item', async (_, content, message) => {
    const err = await failure(objects(content));
    expect([err.name, err.reason, err.message]).toEqual(['TemplateError', 'template', message]);
  });

  test('status and sources are one value; null is {}; clusterSelector may be a string', async () => {
    expect(await renderValues(jsonnet("{ provision: { state: 'succeeded' } }"), 'status', {})).toEqual({
      provision: { state: 'succeeded' },
    });
    expect(await renderValues(jsonnet('null'), 'sources', {})).toEqual({});
    expect(await renderValues(jsonnet("'tier=gold'", 'clusterSelector'), 'clusterSelector', {})).toBe(
      'tier=gold',
    );
  });

  test('types are matched case-insensitively, as every template type', async () => {
    expect(
      await renderTemplate(
        { action: 'status', type: 'Jsonnet' as 'jsonnet', content: '1 + 1' },
        'status',
        {},
      ),
    ).toBe('2\n');
  });
});

describe('jsonnet: errors and hostile programs', () => {
  afterEach(() => configureRenderer(DEFAULT_LIMITS));

  test.each([
    ['a syntax error', '{ a: ', 'jsonnet: status:1:6 Unexpected end of file'],
    [
      'a missing field',
      "{ a: std.extVar('instance').spec.x }",
      'jsonnet: status:1:6-33: Field does not exist: spec',
    ],
    ['an error of the program', "error 'no size given'", 'jsonnet: status:1:1-22: no size given'],
    [
      'an unknown external variable',
      "std.extVar('pg')",
      'jsonnet: status:1:1-17: Undefined external variable: pg',
    ],
    [
      'an import',
      "import 'lib.libsonnet'",
      'jsonnet: status:1:1-23: imports are not available to plan templates (lib.libsonnet)',
    ],
    [
      'importstr of a local file',
      "importstr '/etc/passwd'",
      'jsonnet: status:1:1-24: imports are not available to plan templates (/etc/passwd)',
    ],
  ])('%s fails with one clear line', async (_, content, message) => {
    const err = await failure(render(content, { instance: { metadata: { name: 'a' } } }));
    expect([err.name, err.reason, err.message]).toEqual(['TemplateError', 'template', message]);
  });

  test('endless recursion stops at jsonnet’s stack limit, and the next render works', async () => {
    const err = await failure(render('local f(x) = f(x + 1) + 1; f(0)'));
    expect([err.reason, err.message]).toEqual([
      'template',
      'jsonnet: status:1:14-22: max stack frames exceeded.',
    ]);
    expect(await render('1')).toBe('1\n');
  });

  test('recursion past the thread’s own stack fails cleanly; the thread is replaced and the next render works', async () => {
    const err = await failure(render('local f(n) = if n == 0 then 0 else f(n - 1) tailstrict; f(1e15)'));
    expect([err.reason, err.message]).toEqual([
      'template',
      'jsonnet: status: the render nested too deeply (Maximum call stack size exceeded)',
    ]);
    const deep = await failure(render(`${'['.repeat(50_000)}${']'.repeat(50_000)}`));
    expect(deep.message).toMatch(/^jsonnet: status: the render nested too deeply/);
    expect(await Promise.all([render('2'), render('3'), render('4')])).toEqual(['2\n', '3\n', '4\n']);
  });

  test('a program that never ends fails at its time limit, and the next render works', async () => {
    const err = await failure(
      // 2^100 calls, never deeper than 100 frames: time, not stack or memory, stops it.
      render('local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1); f(100)', {}, { timeoutMs: 500 }),
    );
    expect([err.reason, err.message]).toEqual([
      'timeout',
      'template: status: the render exceeded its time limit of 500 ms',
    ]);
    expect(await render('5')).toBe('5\n');
  });

  test('a huge output fails cleanly, and the next render works', async () => {
    await configureRenderer({ maxOutputBytes: 1024 });
    const err = await failure(render("std.repeat('x', 5000)"));
    expect([err.reason, err.message]).toEqual([
      'output-too-large',
      'jsonnet: status: output exceeds the limit of 1024 bytes',
    ]);
    expect(await render('6')).toBe('6\n');
  });

  test('a huge input is refused before it reaches a thread', async () => {
    await configureRenderer({ maxInputBytes: 1000 });
    const err = await failure(render('1', { big: 'y'.repeat(2000) }));
    expect(err.reason).toBe('input-too-large');
  });

  test('many renders of both languages at once all come back right', async () => {
    const outputs = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        i % 2
          ? render("std.toString(std.extVar('sources').n) + '-' + std.extVar('plan').n", {
              n: i,
              plan: { n: i * 1000 },
            })
          : renderTemplate({ action: 'status', type: 'gotemplate', content: '{{ .n }}' }, 'status', { n: i }),
      ),
    );
    expect(outputs).toEqual(Array.from({ length: 100 }, (_, i) => (i % 2 ? `"${i}-${i * 1000}"\n` : `${i}`)));
  });
});

describe('jsonnet: the WebAssembly build against native Go', () => {
  /** Programs over the standard library, number formatting, text, and errors; `d` is the data. */
  const PROGRAMS = [
    "std.extVar('instance')",
    "std.manifestYamlDoc(std.extVar('sources').pg)",
    "std.manifestJsonMinified({ b: [1, 2.5, 'x'], a: null })",
    "std.manifestIni({ sections: { s: { k: 'v' } } })",
    '[0.1, 1 / 3, 1e21, 1e-7, -0, 2e53, 123456789012, 0.1 + 0.2]',
    "[std.toString(1000000), std.toString(0.5), '%d %5.2f %s %x %o' % [42, 3.14159, 'a', 255, 8]]",
    "[std.base64('héllo'), std.base64Decode('aMOpbGxv'), std.md5('abc'), std.sha256('abc')]",
    "[std.parseJson('{\"a\": [1, 2]}'), std.parseYaml('a: [1, 2]\nb: yes'), std.parseInt('-42')]",
    "[std.sort([3, 1, 2]), std.uniq([1, 1, 2]), std.set(['b', 'a', 'b']), std.reverse([1, 2])]",
    "[std.split('a,b,c', ','), std.join('-', ['a', 'b']), std.strReplace('aXbX', 'X', 'y'), std.asciiUpper('ab')]",
    "[std.length('日本語'), std.codepoint('é'), std.char(233), std.substr('héllo', 1, 3), std.escapeStringJson('a\"b')]",
    "{ [k]: std.extVar('sources').pg.spec[k] for k in std.objectFields(std.extVar('sources').pg.spec) }",
    'std.mapWithKey(function(k, v) v + 1, { a: 1, b: 2 })',
    'std.foldl(function(acc, x) acc + x, std.range(1, 100), 0)',
    "std.objectHas(std.extVar('sources'), 'pg') && !std.objectHas(std.extVar('sources'), 'svc')",
    'std.mergePatch({ a: { b: 1, c: 2 } }, { a: { c: null, d: 3 } })',
    "std.extVar('plan').spec.context.size * 2",
    'local x = { a: 1, b: self.a + 1 }; x { a: 10 }',
    "assert std.extVar('binding') != null : 'a binding is needed'; 1",
    "std.extVar('instance').metadata.missing",
    '{ a: 1 } + 1',
    'local f(x) = f(x + 1) + 1; f(0)',
    "error 'the plan says ' + std.extVar('plan').spec.id",
    '{ a: ',
  ];
  const data = {
    instance: { metadata: { name: 'abc', namespace: 'sf-abc' } },
    plan: { spec: { id: 'p1', context: { size: 1000000 } } },
    pg: { spec: { port: 5432, ratio: 0.25, name: 'x' } },
  };

  test('every program gives the same output or error, byte for byte', async () => {
    const native = await renderNatively(
      PROGRAMS.map((template) => ({
        name: 'status',
        template,
        data: JSON.stringify(data),
        maxOutput: DEFAULT_LIMITS.maxOutputBytes,
      })),
      'jsonnet',
    );
    const ours = await Promise.all(
      PROGRAMS.map((content) =>
        render(content, data).then(
          (output) => ({ output }),
          (err: Error) => ({ error: err.message }),
        ),
      ),
    );
    const differences = PROGRAMS.flatMap((program, i) =>
      JSON.stringify(ours[i]) === JSON.stringify(native[i])
        ? []
        : [`${program}:\n  ours:   ${JSON.stringify(ours[i])}\n  native: ${JSON.stringify(native[i])}`],
    );
    expect(differences).toEqual([]);
    const errors = ours.filter((r) => 'error' in r).length;
    expect([errors, PROGRAMS.length - errors]).toEqual([6, PROGRAMS.length - 6]);
  });
});

describe('the example plan written in jsonnet', () => {
  const plan = parse(readFileSync('examples/jsonnet/sfplan.yaml', 'utf8')) as SFPlan;
  const service = parse(readFileSync('examples/jsonnet/sfservice.yaml', 'utf8')) as SFService;
  const goPlan = parse(readFileSync('examples/postgresql/sfplan.yaml', 'utf8')) as SFPlan;
  const goService = parse(readFileSync('examples/postgresql/sfservice.yaml', 'utf8')) as SFService;
  const mustachePlan = parse(readFileSync('examples/mustache/sfplan.yaml', 'utf8')) as SFPlan;
  const template = (p: SFPlan, action: PlanTemplate['action']) => findTemplate(p, action)!;

  const { instanceId, bindingId, instance, binding, objects, states, statusOf } = exampleStates(
    plan,
    service,
  );

  test('has its own service and plan ids, and the plan belongs to its service', () => {
    for (const other of [
      goService,
      parse(readFileSync('examples/mustache/sfservice.yaml', 'utf8')) as SFService,
    ])
      expect(service.spec.id).not.toBe(other.spec.id);
    expect([goPlan.spec.id, mustachePlan.spec.id]).not.toContain(plan.spec.id);
    expect(plan.spec.serviceId).toBe(service.spec.id);
    expect(plan.spec.templates.map((t) => [t.action, t.type])).toEqual([
      ['sources', 'jsonnet'],
      ['provision', 'jsonnet'],
      ['bind', 'jsonnet'],
      ['unbind', 'jsonnet'],
      ['status', 'jsonnet'],
    ]);
  });

  test('sources name the postgresql, and the binding’s Secret and the Service when there is a binding', async () => {
    const base = { instance, plan, service };
    const ref = (apiVersion: string, kind: string, name: string) => ({
      apiVersion,
      kind,
      name,
      namespace: `sf-${instanceId}`,
    });
    expect(await renderValues(template(plan, 'sources'), 'sources', base)).toEqual({
      postgresql: ref('acid.zalan.do/v1', 'postgresql', `jpg-${instanceId}`),
    });
    expect(await renderValues(template(plan, 'sources'), 'sources', { ...base, binding })).toEqual({
      postgresql: ref('acid.zalan.do/v1', 'postgresql', `jpg-${instanceId}`),
      svc: ref('v1', 'Service', `jpg-${instanceId}`),
      secret: ref('v1', 'Secret', `${bindingId}.jpg-${instanceId}.credentials.postgresql.acid.zalan.do`),
    });
  });

  test('provision renders what the mustache twin renders, but for the prefix', async () => {
    const data = { instance, plan, service };
    const ours = await renderObjects(template(plan, 'provision'), 'provision', data);
    const twin = await renderObjects(template(mustachePlan, 'provision'), 'provision', {
      ...data,
      plan: { ...mustachePlan, spec: { ...mustachePlan.spec, id: plan.spec.id, serviceId: service.spec.id } },
    });
    expect(JSON.parse(JSON.stringify(ours).replaceAll('jpg', 'mpg'))).toEqual(twin);
    expect(ours[0]!.metadata.name).toBe(`jpg-${instanceId}`);
  });

  test('provision adds the load balancers the plan’s context asks for', async () => {
    const context = { ...plan.spec.context, enableLoadBalancers: true, allowedSourceRanges: ['10.0.0.0/8'] };
    const [pg] = await renderObjects(template(plan, 'provision'), 'provision', {
      instance,
      plan: { ...plan, spec: { ...plan.spec, context } },
    });
    expect(pg!.spec).toMatchObject({
      enableMasterLoadBalancer: true,
      enableReplicaLoadBalancer: true,
      allowedSourceRanges: ['10.0.0.0/8'],
    });
  });

  test('bind adds only the binding’s user; unbind renders the postgresql without it', async () => {
    const data = { instance, plan, service, binding, postgresql: objects('jpg').postgresql() };
    expect(await renderObjects(template(plan, 'bind'), 'bind', data)).toEqual([
      {
        apiVersion: 'acid.zalan.do/v1',
        kind: 'postgresql',
        metadata: { name: `jpg-${instanceId}` },
        spec: { users: { [bindingId]: ['superuser'] } },
      },
    ]);
    expect(await renderObjects(template(plan, 'unbind'), 'unbind', data)).toEqual([
      { apiVersion: 'acid.zalan.do/v1', kind: 'postgresql', metadata: { name: `jpg-${instanceId}` } },
    ]);
  });

  const ourStates = states('jpg');
  const goStates = states('sapcp');

  test.each(ourStates.map(([name], i) => [name, i] as const))(
    'status says what the design document’s plan says when the operator shows: %s',
    async (_, i) => {
      expectSameStatus(await statusOf(plan, ourStates[i]![1]), await statusOf(goPlan, goStates[i]![1]));
    },
  );

  test('a bound status answers the credentials the design document’s plan answers, as a JSON string', async () => {
    const bound = (list: [string, RenderData][]) => list.find(([name]) => name.startsWith('bound'))![1];
    const ours = await statusOf(plan, bound(ourStates));
    const theirs = await statusOf(goPlan, bound(goStates));
    expect(ours.bind.state).toBe('succeeded');
    expect(JSON.parse(ours.bind.response)).toEqual(JSON.parse(theirs.bind.response));
    const username = bindingId.replace(/-/g, '_');
    expect(JSON.parse(ours.bind.response)).toEqual({
      credentials: {
        dbname: 'main',
        hostname: '10.0.0.42',
        port: '5432',
        username,
        password: 'Zm9vYmFyYmF6cXV4cXV1eA',
        uri: `postgres://${username}:Zm9vYmFyYmF6cXV4cXV1eA@10.0.0.42:5432/main?sslmode=require`,
      },
    });
  });
});
