/**
 * The example catalog (examples/postgresql): the design document's PostgreSQL SFService and SFPlan,
 * unmodified but for marked additions to the plan (its custom actions x-backup and x-restore, and
 * its migrate section). They must equal the originals (copied into test/fixtures/catalog) once the
 * additions are taken out, and satisfy our CRDs' schemas, without a field that the apiserver would
 * silently prune.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse, parseAllDocuments } from 'yaml';

const root = process.cwd();
const catalogDir = path.join(root, 'examples', 'postgresql');
const originalsDir = path.join(root, 'test', 'fixtures', 'catalog');
const crdDir = path.join(root, 'charts', 'interoperator', 'crds');

const EXAMPLES = [
  { file: 'sfservice.yaml', original: 'postgresql-sfservice.yaml', kind: 'SFService' },
  { file: 'sfplan.yaml', original: 'postgresql-sfplan.yaml', kind: 'SFPlan' },
] as const;

type Schema = Record<string, unknown> & {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: boolean | Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
};

interface Crd {
  kind: string;
  spec: {
    group: string;
    names: { kind: string };
    versions: { name: string; schema?: { openAPIV3Schema: Schema } }[];
  };
}

function readYaml(file: string): Record<string, unknown> {
  return parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/**
 * The text without the additions to the design document: the lines from a `# --- <name>:` line
 * to the next `# --- end of <name> ---` line, both included.
 */
const ADDITION = /^ *# --- ([a-z-]+):.*\n(?:.*\n)*? *# --- end of \1 ---\n/gm;
const withoutAdditions = (text: string): string => text.replace(ADDITION, '');

function crds(): Crd[] {
  if (!existsSync(crdDir)) return [];
  return readdirSync(crdDir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .flatMap((f) => parseAllDocuments(readFileSync(path.join(crdDir, f), 'utf8')).map((d) => d.toJS() as Crd))
    .filter((d) => d?.kind === 'CustomResourceDefinition');
}

/** The v1alpha1 schema of the CRD of `kind` in osb.servicefabrik.io. */
function schemaOf(kind: string): Schema {
  const crd = crds().find((c) => c.spec.group === 'osb.servicefabrik.io' && c.spec.names.kind === kind);
  if (!crd) throw new Error(`no CRD for ${kind} in ${crdDir}`);
  const version = crd.spec.versions.find((v) => v.name === 'v1alpha1');
  if (!version?.schema) throw new Error(`the CRD of ${kind} has no v1alpha1 schema`);
  return version.schema.openAPIV3Schema;
}

/**
 * Paths of fields the apiserver would prune: structural schemas drop every property a schema with
 * `properties` does not name, unless it preserves unknown fields. The root `metadata` is the
 * apiserver's own.
 */
function prunedFields(value: unknown, schema: Schema | undefined, at: string): string[] {
  if (!schema || schema['x-kubernetes-preserve-unknown-fields'] === true) return [];
  if (Array.isArray(value)) {
    return value.flatMap((v, i) => prunedFields(v, schema.items, `${at}[${i}]`));
  }
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, v]) => {
    const where = at ? `${at}.${key}` : key;
    if (at === '' && key === 'metadata') return [];
    const property = schema.properties?.[key];
    if (property) return prunedFields(v, property, where);
    if (typeof schema.additionalProperties === 'object') {
      return prunedFields(v, schema.additionalProperties, where);
    }
    return schema.additionalProperties === true ? [] : [where];
  });
}

function validator() {
  // Structural schemas carry x-kubernetes-* keywords that JSON Schema does not know: not strict.
  const ajv = new Ajv({ strict: false, allErrors: true });
  const addFormats = addFormatsModule as unknown as (a: Ajv) => Ajv;
  addFormats(ajv);
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  return ajv;
}

describe.each(EXAMPLES)('examples/postgresql/$file', ({ file, original, kind }) => {
  const example = readYaml(path.join(catalogDir, file));

  test(`is the design document's ${kind}, unmodified but for the marked addition`, () => {
    const text = withoutAdditions(readFileSync(path.join(catalogDir, file), 'utf8'));
    expect(parse(text)).toEqual(readYaml(path.join(originalsDir, original)));
  });

  test('keeps every template byte for byte (only comments before the document, and the marked addition)', () => {
    const text = withoutAdditions(readFileSync(path.join(catalogDir, file), 'utf8'));
    const originalText = readFileSync(path.join(originalsDir, original), 'utf8');
    const body = (s: string) => s.slice(s.indexOf('\napiVersion:'));
    expect(body(text)).toBe(body(originalText));
  });

  test(`is a valid ${kind} by the CRD's v1alpha1 schema`, () => {
    expect(example).toMatchObject({ apiVersion: 'osb.servicefabrik.io/v1alpha1', kind });
    const validate = validator().compile(schemaOf(kind));
    const valid = validate(example);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  test('has no field the apiserver would prune', () => {
    expect(prunedFields(example, schemaOf(kind), '')).toEqual([]);
  });
});

describe('the plan and the service belong together', () => {
  test("the plan's serviceId is the service's id, and its templates cover the OSB actions, x-backup and x-restore", () => {
    const service = readYaml(path.join(catalogDir, 'sfservice.yaml')) as { spec: { id: string } };
    const plan = readYaml(path.join(catalogDir, 'sfplan.yaml')) as {
      metadata: { labels: Record<string, string> };
      spec: { serviceId: string; templates: { action: string }[] };
    };
    expect(plan.spec.serviceId).toBe(service.spec.id);
    expect(plan.metadata.labels.serviceId).toBe(service.spec.id);
    expect(plan.spec.templates.map((t) => t.action).sort()).toEqual(
      ['bind', 'provision', 'sources', 'status', 'unbind', 'x-backup', 'x-restore'].sort(),
    );
  });
});

describe('the additions to the design document', () => {
  test('are the x-backup and x-restore templates, their sections of the status template, and migrate; nothing else', () => {
    const text = readFileSync(path.join(catalogDir, 'sfplan.yaml'), 'utf8');
    const blocks = text.match(ADDITION) ?? [];
    expect(blocks).toHaveLength(5);
    expect(blocks[0]).toMatch(
      /^ {2}# --- migrate:[\s\S]*\n {2}migrate:\n {4}backup: x-backup\n {4}restore: x-restore\n/,
    );
    expect(blocks[1]).toMatch(/^ {6}# --- x-backup:[^\n]*\n[\s\S]*\n {6}x-backup:\n/);
    expect(blocks[2]).toMatch(/^ {6}# --- x-restore:[^\n]*\n[\s\S]*\n {6}x-restore:\n/);
    expect(blocks[3]).toMatch(/^ {2}# --- x-backup:[\s\S]*\n {2}- action: x-backup\n/);
    expect(blocks[4]).toMatch(/^ {2}# --- x-restore:[\s\S]*\n {2}- action: x-restore\n/);
    const plan = parse(text) as {
      spec: { migrate: unknown; templates: { action: string; content: string }[] };
    };
    expect(plan.spec.migrate).toEqual({ backup: 'x-backup', restore: 'x-restore' });
    const status = plan.spec.templates.find((t) => t.action === 'status')!;
    expect(status.content).toContain('x-backup:');
    expect(status.content).toContain('x-restore:');
  });
});

describe('the prune check itself', () => {
  const schema: Schema = {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          a: { type: 'string' },
          open: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        },
      },
    },
  };
  test.each([
    [{ spec: { a: 'x', open: { anything: 1 } } }, []],
    [{ spec: { a: 'x', b: 'y' } }, ['spec.b']],
    [{ metadata: { name: 'n' }, spec: {}, extra: 1 }, ['extra']],
  ])('%j loses %j', (value, expected) => {
    expect(prunedFields(value, schema, '')).toEqual(expected);
  });
});
