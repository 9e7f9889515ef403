/** Parsing of OSB request bodies, queries and headers. Pure and table-driven. */
import {
  parseAcceptsIncomplete,
  parseBindFields,
  parseJsonObject,
  parseMaintenanceInfo,
  parseOriginatingIdentity,
  parseProvisionFields,
  parseUpdateFields,
  requiredQuery,
  requiredString,
} from '../../../src/osb/requests.js';
import { osbError } from '../../support/osb-error.js';

const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64');
const failure = (fn: () => unknown): [number, string] => {
  const err = osbError(fn);
  return [err.status, err.description];
};

test.each([
  ['', {}],
  ['  \n', {}],
  ['{"a":1}', { a: 1 }],
])('parseJsonObject: GIVEN %p THEN %p', (text, expected) => {
  expect(parseJsonObject(text)).toEqual(expected);
});

test.each([
  ['{', 'The request body is not valid JSON.'],
  ['[]', 'The request body must be a JSON object.'],
  ['1', 'The request body must be a JSON object.'],
])('parseJsonObject: GIVEN %p THEN 400 %p', (text, description) => {
  expect(failure(() => parseJsonObject(text))).toEqual([400, description]);
});

test.each([
  [undefined, false],
  ['', false],
  ['false', false],
  ['true', true],
])('parseAcceptsIncomplete: GIVEN %p THEN %p', (value, expected) => {
  expect(parseAcceptsIncomplete(value)).toBe(expected);
});

test.each([
  ['yes', 'accepts_incomplete must be true or false, not "yes".'],
  [['true', 'true'], 'The accepts_incomplete query parameter must be given once.'],
])('parseAcceptsIncomplete: GIVEN %p THEN 400', (value, description) => {
  expect(failure(() => parseAcceptsIncomplete(value))).toEqual([400, description]);
});

test('requiredQuery and requiredString: empty counts as missing (spec §9.2)', () => {
  expect(failure(() => requiredQuery('', 'plan_id'))).toEqual([
    400,
    'The plan_id query parameter is required.',
  ]);
  expect(failure(() => requiredString('', 'plan_id'))).toEqual([400, 'plan_id is required.']);
  expect(failure(() => requiredString(null, 'plan_id'))).toEqual([400, 'plan_id is required.']);
  expect(failure(() => requiredString(['x'], 'plan_id'))).toEqual([400, 'plan_id must be a string.']);
  expect([requiredQuery('p', 'plan_id'), requiredString('p', 'plan_id')]).toEqual(['p', 'p']);
});

test.each([
  [undefined, undefined],
  [null, undefined],
  [{}, undefined],
  [{ version: '' }, undefined],
  [{ version: '1.0.0' }, { version: '1.0.0' }],
  [
    { version: '1.0.0', description: 'new', extra: 1 },
    { version: '1.0.0', description: 'new' },
  ],
])('parseMaintenanceInfo: GIVEN %p THEN %p', (value, expected) => {
  expect(parseMaintenanceInfo(value)).toEqual(expected);
});

describe('parseOriginatingIdentity', () => {
  test.each([
    [undefined, undefined],
    ['', undefined],
    [
      `kubernetes ${b64({ username: 'alice', groups: ['a'] })}`,
      { platform: 'kubernetes', value: { username: 'alice', groups: ['a'] } },
    ],
    [`cloudfoundry ${b64({ user_id: 'u' })}`, { platform: 'cloudfoundry', value: { user_id: 'u' } }],
    [`  cloudfoundry   ${b64({ user_id: 'ü' })}  `, { platform: 'cloudfoundry', value: { user_id: 'ü' } }],
  ])('GIVEN %p THEN %p', (header, expected) => {
    expect(parseOriginatingIdentity(header)).toEqual(expected);
  });

  test.each([
    ['kubernetes', 'kubernetes'],
    [b64({ a: 1 }), 'unknown'],
    ['kubernetes !!!', 'kubernetes'],
    [`kubernetes ${b64('not json')}`, 'kubernetes'],
    [`kubernetes ${b64(1)}`, 'kubernetes'],
    [`k8s ${b64({})} extra`, 'k8s'],
    [`"><script> ${b64({})}`, 'unknown'],
    [`${'p'.repeat(64)} ${b64({})} x`, 'unknown'],
  ])(
    'GIVEN %p (not of the form) THEN unreadable, naming platform %p, and never a failure',
    (header, platform) => {
      expect(parseOriginatingIdentity(header)).toEqual({ platform, unreadable: true });
    },
  );
});

describe('body fields', () => {
  test('parseProvisionFields: GIVEN every field THEN typed, unknown fields dropped', () => {
    expect(
      parseProvisionFields({
        organization_guid: 'o',
        space_guid: 's',
        context: { platform: 'kubernetes' },
        parameters: { a: 1 },
        maintenance_info: { version: '1.0.0' },
        extra: true,
      }),
    ).toEqual({
      organizationGuid: 'o',
      spaceGuid: 's',
      context: { platform: 'kubernetes' },
      parameters: { a: 1 },
      maintenanceInfo: { version: '1.0.0' },
    });
  });

  test('parseUpdateFields: GIVEN nothing THEN nothing; null and "" are absent', () => {
    expect(parseUpdateFields({})).toEqual({});
    expect(parseUpdateFields({ plan_id: '', parameters: null, context: null })).toEqual({});
    expect(parseUpdateFields({ plan_id: 'p', previous_values: { plan_id: 'o' } })).toEqual({
      planId: 'p',
      previousValues: { plan_id: 'o' },
    });
  });

  test('parseBindFields: GIVEN bind_resource.app_guid and app_guid THEN bind_resource wins', () => {
    expect(
      parseBindFields({
        app_guid: 'old',
        bind_resource: { app_guid: 'new', route: 'r' },
        predecessor_binding_id: 'b0',
      }),
    ).toEqual({
      appGuid: 'new',
      bindResource: { app_guid: 'new', route: 'r' },
      predecessorBindingId: 'b0',
    });
  });

  test.each([
    [() => parseProvisionFields({ space_guid: 's' }), 'organization_guid is required.'],
    [
      () => parseProvisionFields({ organization_guid: 'o', space_guid: 's', parameters: 'x' }),
      'parameters must be a JSON object.',
    ],
    [() => parseUpdateFields({ plan_id: 3 }), 'plan_id must be a string.'],
    [() => parseUpdateFields({ maintenance_info: [] }), 'maintenance_info must be a JSON object.'],
    [() => parseBindFields({ bind_resource: { app_guid: 1 } }), 'bind_resource.app_guid must be a string.'],
    [() => parseBindFields({ context: true }), 'context must be a JSON object.'],
  ])('GIVEN a mistyped field (%#) THEN 400 %p', (fn, description) => {
    expect(failure(fn)).toEqual([400, description]);
  });
});
