/**
 * mustache templates: rendered in the same worker threads and limits as gotemplate, without HTML
 * escaping, over data that reaches no JavaScript prototype; and the example plan written in
 * mustache (examples/mustache), which must say what the design document's plan says in every state
 * of the example operator.
 */
import { readFileSync } from 'node:fs';
import Mustache from 'mustache';
import { parse } from 'yaml';
import type { PlanTemplate, SFPlan, SFService } from '../../../src/resources/types.js';
import {
  closeRenderer,
  findTemplate,
  renderObjects,
  renderTemplate,
  renderValues,
  type RenderData,
  type TemplateError,
} from '../../../src/templates/index.js';
import { exampleStates, expectSameStatus } from '../../support/example-states.js';
import { rejectionOf } from '../../support/rejection.js';

const mustache = (content: string): PlanTemplate => ({ action: 'status', type: 'mustache', content });
const render = (content: string, data: RenderData = {}, options = {}) =>
  renderTemplate(mustache(content), 'status', data, options);
const failure = (promise: Promise<unknown>) => rejectionOf<TemplateError>(promise);

afterAll(() => closeRenderer());

describe('mustache', () => {
  test('renders without HTML escaping, and leaves the mustache package’s own escaping alone', async () => {
    expect(await render('a: {{x}} {{{x}}} {{&x}}', { x: '<"&\'>' })).toBe('a: <"&\'> <"&\'> <"&\'>');
    expect(Mustache.escape('<')).toBe('&lt;');
  });

  test.each([
    ['a path into objects and lists', '{{a.b.0.c}}', { a: { b: [{ c: 'x' }] } }, 'x'],
    ['a section over a list', '{{#l}}[{{.}}]{{/l}}', { l: [1, 'a'] }, '[1][a]'],
    ['a section over an object', '{{#o}}{{k}}{{/o}}', { o: { k: 'v' } }, 'v'],
    ['an inverted section on a missing key', '{{^nope}}none{{/nope}}', {}, 'none'],
    ['an empty list is false', '{{#l}}x{{/l}}{{^l}}empty{{/l}}', { l: [] }, 'empty'],
    [
      'numbers print as JavaScript prints them',
      '{{a}} {{b}} {{c}}',
      { a: 1000000, b: 9.6, c: 1e21 },
      '1000000 9.6 1e+21',
    ],
    [
      'an object prints as [object Object]',
      '{{o}}|{{{o}}}|{{l}}',
      { o: { a: 1 }, l: [1, { a: 1 }] },
      '[object Object]|[object Object]|1,[object Object]',
    ],
    ['a missing key prints nothing', '[{{nope.deeper}}]', {}, '[]'],
    [
      'null items of a list',
      '{{#l}}[{{.}}{{x}}]{{/l}}',
      { l: [null, 1, { x: 'y' }] },
      '[][1][[object Object]y]',
    ],
    [
      'names of Object.prototype are not data',
      '{{hasOwnProperty}}{{__proto__}}{{valueOf}}|{{#hasOwnProperty}}x{{/hasOwnProperty}}',
      {},
      '|',
    ],
    ['partials are empty', '[{{> other}}]', {}, '[]'],
    ['the delimiters can change', '{{=<% %>=}}<% x %>', { x: 'y' }, 'y'],
  ])('%s', async (_, template, data, output) => {
    expect(await render(template, data as RenderData)).toBe(output);
  });

  test('data reaches no prototype: constructor, toString, __proto__ are only what the data says', async () => {
    const data = JSON.parse(
      '{"x": {"__proto__": {"p": "data"}}, "l": [1], "s": "str", "constructor": "mine"}',
    ) as RenderData;
    expect(
      await render(
        '{{x.__proto__.p}}|{{toString}}|{{hasOwnProperty}}|{{x.constructor}}|{{l.constructor}}|{{s.length}}|{{l.length}}|{{#x.valueOf}}v{{/x.valueOf}}|{{constructor}}',
        data,
      ),
    ).toBe('data|||||3|1||mine');
    expect(Object.prototype).not.toHaveProperty('p');
  });

  test('Secrets among the data also show their data decoded under stringData', async () => {
    const secret = {
      kind: 'Secret',
      data: { username: Buffer.from('u1').toString('base64'), password: 'cEBzcw==' },
    };
    expect(await render('{{secret.stringData.username}}:{{secret.stringData.password}}', { secret })).toBe(
      'u1:p@ss',
    );
  });

  test('a syntax error says where, in mustache’s words', async () => {
    const err = await failure(render('{{#x}}'));
    expect([err.reason, err.message]).toEqual(['template', 'mustache: status: Unclosed section "x" at 6']);
  });

  test('runaway nested sections stop at the time limit without blocking the event loop', async () => {
    const started = Date.now();
    const err = await failure(
      render(
        '{{#a}}{{#a}}{{#a}}{{#a}}{{#a}}x{{/a}}{{/a}}{{/a}}{{/a}}{{/a}}',
        { a: Array.from({ length: 100 }, (_, i) => i) },
        { timeoutMs: 300 },
      ),
    );
    expect(err.reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await render('{{x}}', { x: 'next' })).toBe('next');
  });

  test('a huge output fails cleanly', async () => {
    const err = await failure(
      render(
        '{{#a}}{{#a}}xxxxxxxxxx{{/a}}{{/a}}',
        { a: Array.from({ length: 100 }, () => 1) },
        { maxOutputBytes: 1000 },
      ),
    );
    expect([err.reason, err.message]).toEqual([
      'output-too-large',
      'mustache: status: output exceeds the limit of 1000 bytes',
    ]);
  });
});

describe('the example plan written in mustache', () => {
  const plan = parse(readFileSync('examples/mustache/sfplan.yaml', 'utf8')) as SFPlan;
  const service = parse(readFileSync('examples/mustache/sfservice.yaml', 'utf8')) as SFService;
  const goPlan = parse(readFileSync('examples/postgresql/sfplan.yaml', 'utf8')) as SFPlan;
  const goService = parse(readFileSync('examples/postgresql/sfservice.yaml', 'utf8')) as SFService;
  const template = (p: SFPlan, action: PlanTemplate['action']) => findTemplate(p, action)!;

  const { instanceId, bindingId, instance, binding, objects, states, statusOf } = exampleStates(
    plan,
    service,
  );

  test('has its own service and plan ids, and the plan belongs to its service', () => {
    expect(service.spec.id).not.toBe(goService.spec.id);
    expect(plan.spec.id).not.toBe(goPlan.spec.id);
    expect(plan.spec.serviceId).toBe(service.spec.id);
    expect(plan.spec.templates.map((t) => [t.action, t.type])).toEqual([
      ['sources', 'mustache'],
      ['provision', 'mustache'],
      ['bind', 'mustache'],
      ['unbind', 'mustache'],
      ['status', 'mustache'],
    ]);
  });

  test('sources name the postgresql and its Service, and the binding’s Secret when there is a binding', async () => {
    const base = { instance, plan, service };
    const ref = (apiVersion: string, kind: string, name: string) => ({
      apiVersion,
      kind,
      name,
      namespace: `sf-${instanceId}`,
    });
    expect(await renderValues(template(plan, 'sources'), 'sources', base)).toEqual({
      postgresql: ref('acid.zalan.do/v1', 'postgresql', `mpg-${instanceId}`),
      svc: ref('v1', 'Service', `mpg-${instanceId}`),
    });
    expect(await renderValues(template(plan, 'sources'), 'sources', { ...base, binding })).toEqual({
      postgresql: ref('acid.zalan.do/v1', 'postgresql', `mpg-${instanceId}`),
      svc: ref('v1', 'Service', `mpg-${instanceId}`),
      secret: ref('v1', 'Secret', `${bindingId}.mpg-${instanceId}.credentials.postgresql.acid.zalan.do`),
    });
  });

  test('provision renders one postgresql from the plan’s context', async () => {
    expect(
      await renderObjects(template(plan, 'provision'), 'provision', { instance, plan, service }),
    ).toEqual([
      {
        apiVersion: 'acid.zalan.do/v1',
        kind: 'postgresql',
        metadata: {
          name: `mpg-${instanceId}`,
          annotations: {
            'operator-broker/service-id': service.spec.id,
            'operator-broker/plan-id': plan.spec.id,
          },
        },
        spec: {
          teamId: 'mpg',
          postgresql: { version: '15', parameters: { max_connections: '50' } },
          numberOfInstances: 1,
          databases: { main: 'main' },
          users: { main: ['superuser', 'createdb'] },
          resources: { requests: { cpu: '500m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
          volume: { size: '5Gi' },
        },
      },
    ]);
  });

  test('bind adds only the binding’s user; unbind renders the postgresql without it', async () => {
    const data = { instance, plan, service, binding, postgresql: objects('mpg').postgresql() };
    expect(await renderObjects(template(plan, 'bind'), 'bind', data)).toEqual([
      {
        apiVersion: 'acid.zalan.do/v1',
        kind: 'postgresql',
        metadata: { name: `mpg-${instanceId}` },
        spec: { users: { [bindingId]: ['superuser'] } },
      },
    ]);
    expect(await renderObjects(template(plan, 'unbind'), 'unbind', data)).toEqual([
      { apiVersion: 'acid.zalan.do/v1', kind: 'postgresql', metadata: { name: `mpg-${instanceId}` } },
    ]);
  });

  const states_ = states('mpg');
  const goStates = states('sapcp');

  test.each(states_.map(([name], i) => [name, i] as const))(
    'status says what the design document’s plan says when the operator shows: %s',
    async (_, i) => {
      expectSameStatus(await statusOf(plan, states_[i]![1]), await statusOf(goPlan, goStates[i]![1]));
    },
  );

  test('a bound status answers the credentials as a JSON string under bind.response', async () => {
    const status = await statusOf(plan, states_.find(([name]) => name.startsWith('bound'))![1]);
    expect(status.bind.state).toBe('succeeded');
    const username = bindingId.replace(/-/g, '_');
    expect(JSON.parse(status.bind.response)).toEqual({
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
