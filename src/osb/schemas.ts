/**
 * Validation of request parameters against the JSON schemas of a plan (`spec.schemas`), with the
 * draft each schema declares in `$schema`: draft-04 (the OSB baseline, also used when `$schema` is
 * absent), draft-06, draft-07, 2019-09 and 2020-12. Formats are checked (ajv-formats).
 *
 * Compiled validators are cached by plan (uid and resourceVersion) or by schema text. Every
 * compilation uses a fresh ajv instance, so schemas that share an `$id` never collide and a
 * long-running broker does not accumulate old schemas. External `$ref`s are never fetched.
 *
 * Pure apart from the cache: no I/O.
 */
import { createRequire } from 'node:module';
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import Ajv2019Module from 'ajv/dist/2019.js';
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvDraft04Module from 'ajv-draft-04';
import addFormatsModule from 'ajv-formats';
import type { SFPlan } from '../resources/types.js';
import { internalError, invalidParameters } from './errors.js';

// CommonJS default exports, as ESM (Node, jest) may present them.
const interop = <T>(m: T | { default: T }): T => (m as { default?: T }).default ?? (m as T);
const Ajv2019 = interop(Ajv2019Module);
const Ajv2020 = interop(Ajv2020Module);
const AjvDraft04 = interop(AjvDraft04Module);
const addFormats = interop(addFormatsModule);
// Loaded with require: JSON import attributes are not understood by every loader we run under (jest).
const draft06MetaSchema = createRequire(import.meta.url)('ajv/dist/refs/json-schema-draft-06.json') as object;

/** The JSON Schema drafts we validate with. */
export const DRAFTS = ['draft-04', 'draft-06', 'draft-07', '2019-09', '2020-12'] as const;
export type JsonSchemaDraft = (typeof DRAFTS)[number];

/** The three places of a plan's `schemas` that hold a parameter schema. */
export const SCHEMA_ACTIONS = [
  'service_instance.create',
  'service_instance.update',
  'service_binding.create',
] as const;
export type SchemaAction = (typeof SCHEMA_ACTIONS)[number];

/** A schema that cannot be used: its `$schema` is not one we know, or ajv cannot compile it. */
export class SchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaError';
  }
}

const META_SCHEMA_URI: Record<JsonSchemaDraft, string> = {
  'draft-04': 'http://json-schema.org/draft-04/schema#',
  'draft-06': 'http://json-schema.org/draft-06/schema#',
  'draft-07': 'http://json-schema.org/draft-07/schema#',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
};

const DRAFT_PATTERN =
  /^https?:\/\/json-schema\.org\/(?:(draft-0[467])\/schema|draft\/(2019-09|2020-12)\/schema)#?$/;

/**
 * The draft a schema declares in `$schema` (http or https, with or without the trailing `#`);
 * draft-04, the OSB baseline, when it declares none.
 *
 * @throws SchemaError when `$schema` is not a string naming one of {@link DRAFTS}.
 */
export function draftOf(schema: Record<string, unknown>): JsonSchemaDraft {
  const declared = schema.$schema;
  if (declared === undefined) return 'draft-04';
  const match = typeof declared === 'string' ? DRAFT_PATTERN.exec(declared.trim()) : null;
  if (!match) {
    throw new SchemaError(
      `$schema ${JSON.stringify(declared).slice(0, 100)} is not supported; use draft-04, draft-06, draft-07, 2019-09 or 2020-12`,
    );
  }
  return (match[1] ?? match[2]) as JsonSchemaDraft;
}

const OPTIONS: Options = {
  strict: false,
  allErrors: true,
  validateFormats: true,
  logger: false,
};

type Engine = { compile(schema: object): ValidateFunction };

function engine(draft: JsonSchemaDraft): Engine {
  let ajv: Engine;
  switch (draft) {
    case 'draft-04':
      ajv = new AjvDraft04(OPTIONS);
      break;
    case 'draft-06':
    case 'draft-07': {
      const draft07 = new Ajv(OPTIONS);
      draft07.addMetaSchema(draft06MetaSchema);
      ajv = draft07;
      break;
    }
    case '2019-09':
      ajv = new Ajv2019(OPTIONS);
      break;
    case '2020-12':
      ajv = new Ajv2020(OPTIONS);
      break;
  }
  addFormats(ajv as never);
  return ajv;
}

type Compiled = { readonly validate: ValidateFunction } | { readonly error: SchemaError };

/** Most recently used compilations, by key; bounded so plan churn cannot grow it forever. */
const cache = new Map<string, Compiled>();
const CACHE_SIZE = 256;

function remember(key: string, compiled: Compiled): Compiled {
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(key, compiled);
  return compiled;
}

function compileUncached(schema: Record<string, unknown>): Compiled {
  try {
    const draft = draftOf(schema);
    // ajv knows each meta-schema by one exact URI; accept the usual spellings of it.
    const normalised = schema.$schema === undefined ? schema : { ...schema, $schema: META_SCHEMA_URI[draft] };
    return { validate: engine(draft).compile(normalised) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { error: err instanceof SchemaError ? err : new SchemaError(message.slice(0, 300)) };
  }
}

/**
 * A validator for `schema`, from the cache when `cacheKey` (or, without one, the schema's JSON
 * text) was compiled before.
 *
 * @throws SchemaError when the schema cannot be used (also remembered, so it is not recompiled).
 */
export function compileSchema(schema: Record<string, unknown>, cacheKey?: string): ValidateFunction {
  const key = cacheKey ?? `json:${JSON.stringify(schema)}`;
  let compiled = cache.get(key);
  if (compiled) {
    cache.delete(key);
    cache.set(key, compiled);
  } else {
    compiled = remember(key, compileUncached(schema));
  }
  if ('error' in compiled) throw compiled.error;
  return compiled.validate;
}

/** `/a/b~1c/0` as `parameters.a["b/c"][0]`. */
function pathOf(instancePath: string, child?: string): string {
  const segments = instancePath === '' ? [] : instancePath.slice(1).split('/');
  if (child !== undefined) segments.push(child);
  return segments
    .map((raw) => raw.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce(
      (path, segment) =>
        /^\d+$/.test(segment)
          ? `${path}[${segment}]`
          : /^[A-Za-z_$][\w$-]*$/.test(segment)
            ? `${path}.${segment}`
            : `${path}[${JSON.stringify(segment)}]`,
      'parameters',
    );
}

function describeError(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
    case 'dependencies':
    case 'dependentRequired':
      return `${pathOf(e.instancePath, String(params.missingProperty))} is required`;
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const extra = params.additionalProperty ?? params.unevaluatedProperty;
      return `${pathOf(e.instancePath, String(extra))} is not allowed`;
    }
    case 'enum':
      return `${pathOf(e.instancePath)} must be one of ${(params.allowedValues as unknown[])
        .map((v) => JSON.stringify(v))
        .join(', ')}`;
    default:
      return `${pathOf(e.instancePath)} ${e.message ?? 'is invalid'}`;
  }
}

const MAX_LISTED = 10;

/**
 * A human description of ajv errors, one clause per failing path, in ajv's order, without the
 * values that failed (they may be secrets).
 */
export function describeErrors(errors: readonly ErrorObject[]): string {
  const clauses = [...new Set(errors.filter((e) => e.keyword !== 'if').map(describeError))];
  const listed = clauses.slice(0, MAX_LISTED).join('; ');
  return clauses.length > MAX_LISTED ? `${listed}; and ${clauses.length - MAX_LISTED} more` : listed;
}

/** `schema` with the `$schema` it is validated by: draft-04, the OSB baseline, when it declares none. */
export function withDeclaredDraft(schema: Record<string, unknown>): Record<string, unknown> {
  return schema.$schema === undefined ? { $schema: META_SCHEMA_URI['draft-04'], ...schema } : schema;
}

/** The parameter schema of `action` in the plan, if it declares one. */
export function parameterSchema(plan: SFPlan, action: SchemaAction): Record<string, unknown> | undefined {
  const schemas = plan.spec.schemas;
  switch (action) {
    case 'service_instance.create':
      return schemas?.service_instance?.create?.parameters;
    case 'service_instance.update':
      return schemas?.service_instance?.update?.parameters;
    case 'service_binding.create':
      return schemas?.service_binding?.create?.parameters;
  }
}

/**
 * Checks request `parameters` against the plan's schema for `action`. Absent parameters count as
 * `{}`, except on updates, where they mean "leave the parameters as they are" and are not checked.
 *
 * @throws OsbError 400 `InvalidParameters` listing the failing paths when the parameters do not
 *   match; 500 `InternalError` naming the plan and the schema when the plan's schema is unusable.
 */
export function validateParameters(
  plan: SFPlan,
  action: SchemaAction,
  parameters: Record<string, unknown> | undefined,
): void {
  const schema = parameterSchema(plan, action);
  if (!schema || (parameters === undefined && action === 'service_instance.update')) return;
  const { uid, resourceVersion } = plan.metadata;
  let validate: ValidateFunction;
  try {
    validate = compileSchema(
      schema,
      uid && resourceVersion ? `plan:${uid}@${resourceVersion}/${action}` : undefined,
    );
  } catch (err) {
    throw internalError(
      `The ${action}.parameters schema of plan ${plan.spec.name} (${plan.spec.id}) is invalid: ${
        (err as Error).message
      }. The broker's operator must correct the SFPlan.`,
    );
  }
  if (!validate(parameters ?? {})) {
    throw invalidParameters(
      `The parameters do not match the ${action}.parameters schema of plan ${plan.spec.name}: ${describeErrors(
        validate.errors ?? [],
      )}.`,
    );
  }
}
