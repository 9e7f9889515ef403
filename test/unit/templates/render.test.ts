/**
 * The rendering API over Go's own text/template (WebAssembly) and mustache: the design
 * document's templates, Go's number typing, errors in Go's words, and the limits.
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
  splitDocuments,
  TemplateError,
} from '../../../src/templates/index.js';

const plan = parse(readFileSync('examples/postgresql/sfplan.yaml', 'utf8')) as SFPlan;
const template = (action: PlanTemplate['action']) => findTemplate(plan, action)!;
const go = (content: string): PlanTemplate => ({ action: 'status', type: 'gotemplate', content });
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
    const [pg] = await renderObjects(template('provision'), 'provision', { instance, plan });
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
    [undefined, 'in progress'],
    [{ PostgresClusterStatus: 'Creating' }, 'in progress'],
    [{ PostgresClusterStatus: 'Running' }, 'succeeded'],
    [{ PostgresClusterStatus: 'CreateFailed' }, 'failed'],
    [{ PostgresClusterStatus: 'UpdateFailed' }, 'failed'],
  ])('status with operator status %j says provision %s', async (status, state) => {
    const values = (await renderValues(template('status'), 'status', {
      instance,
      plan,
      postgresql: postgresql(status),
    })) as { provision: { state: string } };
    expect(values.provision.state).toBe(state);
  });

  test('deprovision is in progress while the postgresql exists (even being deleted) and succeeded once gone', async () => {
    const state = async (data: Record<string, unknown>) =>
      (
        (await renderValues(template('status'), 'status', { instance, plan, ...data })) as {
          deprovision: { state: string };
        }
      ).deprovision.state;
    expect(await state({ postgresql: postgresql({ PostgresClusterStatus: 'Running' }) })).toBe('in progress');
    expect(
      await state({
        postgresql: postgresql(
          { PostgresClusterStatus: 'Running' },
          { deletionTimestamp: '2026-01-01T00:00:00Z' },
        ),
      }),
    ).toBe('in progress');
    expect(await state({})).toBe('succeeded');
  });

  test('bind succeeds with credentials once the secret and service exist', async () => {
    const secret = {
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

describe('Go semantics', () => {
  test('SF resources hold float64 numbers, sources int64, as in the original', async () => {
    const out = await renderTemplate(
      go('{{ .plan.n }} {{ .pg.n }} {{ printf "%T %T" .plan.n .pg.n }}'),
      'status',
      {
        plan: { n: 1000000 },
        pg: { n: 1000000 },
      },
    );
    expect(out).toBe('1e+06 1000000 float64 int64');
  });

  test('errors keep Go’s wording', async () => {
    await expect(renderTemplate(go('{{ .a.b.c }}'), 'status', { a: 1 })).rejects.toThrow(
      'template: status:1:5: executing "status" at <.a.b.c>: can\'t evaluate field b in type interface {}',
    );
    await expect(renderTemplate(go('{{ b64dec "%%%" }}'), 'status', {})).rejects.toThrow(
      /illegal base64 data/,
    );
    await expect(renderTemplate(go('{{ if }}'), 'status', {})).rejects.toThrow(
      'template: status:1: missing value for if',
    );
  });

  test('missing keys print <no value>, toYaml formats as in Go', async () => {
    expect(
      await renderTemplate(go('{{ .nothing }}|{{ toYaml .m }}'), 'status', { m: { b: [1, 'x'], a: true } }),
    ).toBe('<no value>|a: true\nb:\n- 1\n- x');
  });

  test('a __proto__ key is data: it renders and pollutes nothing', async () => {
    const data = JSON.parse('{"__proto__": {"polluted": "yes"}, "x": {"__proto__": "p"}}') as Record<
      string,
      unknown
    >;
    expect(
      await renderTemplate(
        go('{{ index . "__proto__" "polluted" }} {{ index .x "__proto__" }}'),
        'status',
        data,
      ),
    ).toBe('yes p');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const values = (await renderValues(go('__proto__: {polluted: 1}'), 'status', {})) as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(values)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('limits', () => {
  afterAll(() => configureRenderer(DEFAULT_LIMITS));

  test('a runaway template fails at its time limit and the next render works', async () => {
    await configureRenderer({ timeoutMs: 300 });
    const started = Date.now();
    const err = await renderTemplate(go('{{ range until 1000000000 }}x{{ end }}'), 'status', {}).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TemplateError);
    expect((err as TemplateError).reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await renderTemplate(go('{{ 1 }}'), 'status', {})).toBe('1');
  });

  test('a huge output fails cleanly', async () => {
    await configureRenderer({ maxOutputBytes: 1024, timeoutMs: 5000 });
    const err = await renderTemplate(go('{{ range until 100000 }}xxxxxxxx{{ end }}'), 'status', {}).catch(
      (e: unknown) => e,
    );
    expect((err as TemplateError).reason).toBe('output-too-large');
    expect(await renderTemplate(go('ok'), 'status', {})).toBe('ok');
  });

  test('a huge input is refused before it reaches a thread', async () => {
    await configureRenderer({ maxInputBytes: 1000 });
    const err = await renderTemplate(go('x'), 'status', { big: 'y'.repeat(2000) }).catch((e: unknown) => e);
    expect((err as TemplateError).reason).toBe('input-too-large');
  });
});

describe('mustache and documents', () => {
  test('mustache renders without HTML escaping', async () => {
    const t: PlanTemplate = {
      action: 'provision',
      type: 'mustache',
      content: 'name: {{instance.metadata.name}}-<&>',
    };
    expect(await renderTemplate(t, 'provision', { instance })).toBe('name: abc-<&>');
  });

  test('contentEncoded is base64 of the template', async () => {
    const t: PlanTemplate = {
      action: 'status',
      type: 'gotemplate',
      contentEncoded: Buffer.from('{{ 2 }}').toString('base64'),
    };
    expect(await renderTemplate(t, 'status', {})).toBe('2');
  });

  test('multi-document YAML splits on --- lines and drops empty documents', () => {
    expect(splitDocuments('a: 1\n---\n\n---\n# only a comment\n---\nb: 2\n')).toEqual(['a: 1\n', '\nb: 2\n']);
  });

  test('a document that is not an object is a template error', async () => {
    await expect(renderObjects(go('- 1\n- 2'), 'provision', {})).rejects.toThrow(/not a Kubernetes object/);
  });

  test('helm is not supported yet, with a clear error', async () => {
    await expect(
      renderTemplate({ action: 'provision', type: 'helm', content: 'x' }, 'provision', {}),
    ).rejects.toThrow('templates of type helm are not supported yet');
  });
});
