/**
 * Validation of request parameters against a plan's JSON schema, with the draft the schema
 * declares in `$schema` (draft-04, -06, -07, 2019-09, 2020-12; draft-07 when absent). Compiled
 * schemas are cached by their text.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import Ajv2019Module from 'ajv/dist/2019.js';
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvDraft04Module from 'ajv-draft-04';
import addFormatsModule from 'ajv-formats';
import draft06 from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };
import { badRequest, invalidParameters } from './errors.js';

// CommonJS default exports, as ESM sees them.
const interop = <T>(m: { default: T }): T => (m as unknown as { default?: T }).default ?? (m as unknown as T);
const Ajv2019 = interop(Ajv2019Module);
const Ajv2020 = interop(Ajv2020Module);
const AjvDraft04 = interop(AjvDraft04Module);
const addFormats = interop(addFormatsModule);

type AnyAjv = { compile(schema: object): ValidateFunction };
const options = { strict: false, allErrors: true, validateFormats: true } as const;

function makeValidators(): Record<string, AnyAjv> {
  const draft07 = new Ajv(options);
  draft07.addMetaSchema(draft06);
  const engines = {
    draft07,
    draft04: new AjvDraft04(options),
    v2019: new Ajv2019(options),
    v2020: new Ajv2020(options),
  };
  for (const engine of Object.values(engines)) addFormats(engine as never);
  return engines as Record<string, AnyAjv>;
}

const validators = makeValidators();
const cache = new Map<string, ValidateFunction>();

function engineFor(schema: Record<string, unknown>): AnyAjv {
  const declared = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (declared.includes('draft-04')) return validators.draft04!;
  if (declared.includes('2019-09')) return validators.v2019!;
  if (declared.includes('2020-12')) return validators.v2020!;
  return validators.draft07!;
}

const describeError = (e: ErrorObject): string =>
  `${e.instancePath ? `parameters${e.instancePath.replace(/\//g, '.')}` : 'parameters'} ${e.message ?? 'is invalid'}${
    e.keyword === 'additionalProperties'
      ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})`
      : ''
  }`;

/** Throws 400 when `parameters` fail `schema`; an unusable schema in a plan is a 400 that says so. */
export function validateParameters(
  schema: Record<string, unknown> | undefined,
  parameters: unknown,
  what: string,
): void {
  if (!schema) return;
  const key = JSON.stringify(schema);
  let validate = cache.get(key);
  if (!validate) {
    try {
      validate = engineFor(schema).compile(schema);
    } catch (err) {
      throw badRequest(`The plan's ${what} parameter schema is invalid: ${(err as Error).message}`);
    }
    if (cache.size > 500) cache.clear();
    cache.set(key, validate);
  }
  if (!validate(parameters ?? {})) {
    const errors = (validate.errors ?? []).slice(0, 10).map(describeError);
    throw invalidParameters(`The parameters do not match the plan's ${what} schema: ${errors.join('; ')}.`);
  }
}
