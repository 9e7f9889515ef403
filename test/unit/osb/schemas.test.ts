/** Parameter validation against plan schemas, per JSON Schema draft. */
import {
  SchemaError,
  compileSchema,
  describeErrors,
  draftOf,
  validateParameters,
  type SchemaAction,
} from '../../../src/osb/schemas.js';
import type { SFPlan } from '../../../src/resources/types.js';
import { osbError, thrownBy } from '../../support/osb-error.js';

const D4 = 'http://json-schema.org/draft-04/schema#';
const D6 = 'http://json-schema.org/draft-06/schema#';
const D7 = 'http://json-schema.org/draft-07/schema#';
const D2019 = 'https://json-schema.org/draft/2019-09/schema';
const D2020 = 'https://json-schema.org/draft/2020-12/schema';

let counter = 0;
/** A plan with one schema; a unique uid per call, so cache keys never collide between tests. */
const planWith = (action: SchemaAction, parameters: Record<string, unknown>): SFPlan => {
  counter += 1;
  const [where, op] = action.split('.') as ['service_instance' | 'service_binding', 'create' | 'update'];
  return {
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFPlan',
    metadata: { name: 'p', uid: `uid-${counter}`, resourceVersion: '1' },
    spec: {
      id: 'p-1',
      name: 'small',
      description: 'd',
      serviceId: 's-1',
      templates: [],
      schemas: { [where]: { [op]: { parameters } } },
    },
  };
};

describe('draftOf', () => {
  test.each([
    [undefined, 'draft-04'],
    [D4, 'draft-04'],
    ['https://json-schema.org/draft-04/schema', 'draft-04'],
    [D6, 'draft-06'],
    [D7, 'draft-07'],
    ['http://json-schema.org/draft-07/schema', 'draft-07'],
    [D2019, '2019-09'],
    ['http://json-schema.org/draft/2019-09/schema#', '2019-09'],
    [D2020, '2020-12'],
  ])('GIVEN $schema %p THEN %s', ($schema, draft) => {
    expect(draftOf($schema === undefined ? {} : { $schema })).toBe(draft);
  });

  test.each([
    [
      'http://json-schema.org/draft-03/schema#',
      '$schema "http://json-schema.org/draft-03/schema#" is not supported; use draft-04, draft-06, draft-07, 2019-09 or 2020-12',
    ],
    [42, '$schema 42 is not supported; use draft-04, draft-06, draft-07, 2019-09 or 2020-12'],
  ])('GIVEN $schema %p THEN SchemaError', ($schema, message) => {
    expect(() => draftOf({ $schema })).toThrow(new SchemaError(message));
  });
});

describe('each draft validates with its own rules', () => {
  test.each([
    [
      'draft-04 boolean exclusiveMaximum',
      { $schema: D4, type: 'number', maximum: 10, exclusiveMaximum: true },
      9,
      10,
    ],
    [
      'no $schema: draft-04 (the OSB baseline)',
      { type: 'number', maximum: 10, exclusiveMaximum: true },
      9,
      10,
    ],
    ['draft-06 numeric exclusiveMaximum', { $schema: D6, type: 'number', exclusiveMaximum: 10 }, 9, 10],
    ['draft-06 const', { $schema: D6, const: 'x' }, 'x', 'y'],
    [
      'draft-07 if/then',
      { $schema: D7, if: { properties: { tier: { const: 'pro' } } }, then: { required: ['size'] } },
      { tier: 'pro', size: 1 },
      { tier: 'pro' },
    ],
    ['draft-07 formats', { $schema: D7, type: 'string', format: 'email' }, 'a@b.example', 'not-an-email'],
    [
      '2019-09 dependentRequired',
      { $schema: D2019, dependentRequired: { a: ['b'] } },
      { a: 1, b: 2 },
      { a: 1 },
    ],
    [
      '2019-09 unevaluatedProperties',
      { $schema: D2019, allOf: [{ properties: { a: {} } }], unevaluatedProperties: false },
      { a: 1 },
      { a: 1, b: 2 },
    ],
    [
      '2020-12 prefixItems',
      { $schema: D2020, prefixItems: [{ type: 'string' }], items: false },
      ['a'],
      ['a', 1],
    ],
    [
      '2020-12 $defs and $ref',
      { $schema: D2020, $defs: { n: { type: 'integer' } }, $ref: '#/$defs/n' },
      1,
      1.5,
    ],
  ])('GIVEN %s THEN the valid value passes and the invalid one fails', (_n, schema, valid, invalid) => {
    const validate = compileSchema(schema);
    expect([validate(valid), validate(invalid)]).toEqual([true, false]);
  });

  test.each([
    [
      'draft-04 with a numeric exclusiveMaximum',
      { $schema: D4, exclusiveMaximum: 10 },
      /schema is invalid: .*data\/exclusiveMaximum must be boolean/,
    ],
    [
      'draft-07 with a boolean exclusiveMaximum',
      { $schema: D7, exclusiveMaximum: true },
      /schema is invalid: data\/exclusiveMaximum must be number/,
    ],
    [
      'an external $ref',
      { $schema: D7, $ref: 'https://schemas.example/x.json' },
      /can't resolve reference https:\/\/schemas\.example\/x\.json/,
    ],
    [
      'an unknown type',
      { $schema: D7, type: 'nope' },
      /schema is invalid: data\/type must be equal to one of the allowed values/,
    ],
  ])('GIVEN %s THEN a SchemaError, not a crash', (_n, schema, message) => {
    const err = thrownBy(() => compileSchema(schema)) as SchemaError;
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toMatch(message);
  });

  test('GIVEN two schemas with the same $id WHEN both are compiled THEN neither collides', () => {
    const a = compileSchema({ $schema: D7, $id: 'https://x/params', type: 'string' });
    const b = compileSchema({ $schema: D7, $id: 'https://x/params', type: 'integer' });
    expect([a('s'), b('s'), b(1)]).toEqual([true, false, true]);
  });
});

describe('compileSchema cache', () => {
  test('GIVEN a cache key WHEN compiled twice THEN the first compilation is reused, even for another schema', () => {
    const first = compileSchema({ type: 'string' }, 'test-key-1');
    expect(compileSchema({ type: 'integer' }, 'test-key-1')).toBe(first);
  });

  test('GIVEN no key WHEN equal schemas are compiled THEN the schema text is the key', () => {
    expect(compileSchema({ type: 'boolean', title: 'same' })).toBe(
      compileSchema({ type: 'boolean', title: 'same' }),
    );
  });

  test('GIVEN an unusable schema WHEN compiled twice THEN the same SchemaError both times', () => {
    const schema = { $schema: D7, type: 'still-nope' };
    expect(thrownBy(() => compileSchema(schema))).toBe(thrownBy(() => compileSchema(schema)));
  });
});

describe('describeErrors', () => {
  const describe_ = (schema: Record<string, unknown>, value: unknown): string => {
    const validate = compileSchema(schema);
    expect(validate(value)).toBe(false);
    return describeErrors(validate.errors ?? []);
  };

  test.each([
    [
      'nested required properties and array items',
      { $schema: D7, properties: { db: { properties: { users: { items: { required: ['name'] } } } } } },
      { db: { users: [{ name: 'a' }, {}] } },
      'parameters.db.users[1].name is required',
    ],
    [
      'a property name with spaces',
      { $schema: D7, properties: { 'a b': { type: 'string' } } },
      { 'a b': 1 },
      'parameters["a b"] must be string',
    ],
    [
      'a property name with a slash',
      { $schema: D7, additionalProperties: false },
      { 'a/b': 1 },
      'parameters["a/b"] is not allowed',
    ],
    ['the root', { $schema: D7, type: 'object' }, [], 'parameters must be object'],
    [
      'an enum',
      { $schema: D7, properties: { size: { enum: ['s', 'm', 1] } } },
      { size: 'xl' },
      'parameters.size must be one of "s", "m", 1',
    ],
    [
      'a hyphenated name',
      { $schema: D7, properties: { 'max-conn': { maximum: 5 } } },
      { 'max-conn': 6 },
      'parameters.max-conn must be <= 5',
    ],
  ])('GIVEN %s THEN the path is named', (_n, schema, value, expected) => {
    expect(describe_(schema, value)).toBe(expected);
  });

  test('GIVEN more than ten failures THEN ten are listed and the rest counted', () => {
    const required = Array.from({ length: 12 }, (_, i) => `p${i}`);
    expect(describe_({ $schema: D7, required }, {})).toBe(
      `${required
        .slice(0, 10)
        .map((p) => `parameters.${p} is required`)
        .join('; ')}; and 2 more`,
    );
  });

  test('GIVEN a secret value that fails THEN the description does not contain it', () => {
    expect(
      describe_({ $schema: D7, properties: { password: { maxLength: 3 } } }, { password: 'hunter2-secret' }),
    ).toBe('parameters.password must NOT have more than 3 characters');
  });
});

describe('validateParameters', () => {
  const schema = { $schema: D6, type: 'object', required: ['foo'], properties: { foo: { type: 'string' } } };

  test.each([
    ['service_instance.create', { foo: 'x' }],
    ['service_binding.create', { foo: 'x' }],
    ['service_instance.update', { foo: 'x' }],
    ['service_instance.update', undefined],
  ] as const)('GIVEN a %s schema WHEN parameters %p THEN they pass', (action, parameters) => {
    expect(() => validateParameters(planWith(action, schema), action, parameters)).not.toThrow();
  });

  test.each([
    ['service_instance.create', undefined, 'parameters.foo is required'],
    ['service_binding.create', { foo: 1 }, 'parameters.foo must be string'],
    ['service_instance.update', {}, 'parameters.foo is required'],
  ] as const)(
    'GIVEN a %s schema WHEN parameters %p THEN 400 InvalidParameters',
    (action, parameters, clause) => {
      const err = osbError(() => validateParameters(planWith(action, schema), action, parameters));
      expect([err.status, err.toBody()]).toEqual([
        400,
        {
          error: 'InvalidParameters',
          description: `The parameters do not match the ${action}.parameters schema of plan small: ${clause}.`,
        },
      ]);
    },
  );

  test('GIVEN a plan without schemas WHEN any parameters THEN they pass', () => {
    const plan = planWith('service_instance.create', schema);
    expect(() => validateParameters(plan, 'service_binding.create', { anything: true })).not.toThrow();
  });

  test('GIVEN a plan with an unsupported $schema WHEN validated THEN 500 InternalError that names plan and schema', () => {
    const plan = planWith('service_instance.create', { $schema: 'http://json-schema.org/draft-03/schema#' });
    const err = osbError(() => validateParameters(plan, 'service_instance.create', {}));
    expect([err.status, err.toBody()]).toEqual([
      500,
      {
        error: 'InternalError',
        description:
          'The service_instance.create.parameters schema of plan small (p-1) is invalid: $schema "http://json-schema.org/draft-03/schema#" is not supported; use draft-04, draft-06, draft-07, 2019-09 or 2020-12. The broker\'s operator must correct the SFPlan.',
      },
    ]);
  });

  test('GIVEN a plan whose schema changes WHEN its resourceVersion changes THEN the new schema is used', () => {
    const plan = planWith('service_instance.create', { type: 'object', required: ['a'] });
    expect(() => validateParameters(plan, 'service_instance.create', { a: 1 })).not.toThrow();
    const changed: SFPlan = {
      ...plan,
      metadata: { ...plan.metadata, resourceVersion: '2' },
      spec: {
        ...plan.spec,
        schemas: { service_instance: { create: { parameters: { type: 'object', required: ['b'] } } } },
      },
    };
    expect(osbError(() => validateParameters(changed, 'service_instance.create', { a: 1 })).status).toBe(400);
  });
});
