/** What the plans' templates say as values: sources, the status sections, the bind response. Pure and table-driven. */
import {
  bindResponseText,
  forTemplate,
  hasStatusSection,
  readStatusSection,
  sourceReferences,
  statusFlag,
  type StatusSection,
  unobservedSource,
} from '../../../src/templates/values.js';
import type { AppliedResource, KubeObject } from '../../../src/resources/types.js';
import type { OperationType } from '../../../src/workflows/messages.js';

describe('the objects the sources template names', () => {
  const secret = { apiVersion: 'v1', kind: 'Secret', name: 'admin' };
  test.each<[string, unknown, [string, AppliedResource][]]>([
    ['nothing rendered', undefined, []],
    ['a value that is no map', 'admin', []],
    ['one source without a namespace', { admin: secret }, [['admin', { ...secret, namespace: 'sf-i-1' }]]],
    [
      'one source in a namespace of its own',
      { admin: { ...secret, namespace: 'shared' } },
      [['admin', { ...secret, namespace: 'shared' }]],
    ],
    [
      'an empty namespace',
      { admin: { ...secret, namespace: '' } },
      [['admin', { ...secret, namespace: 'sf-i-1' }]],
    ],
    [
      'the records and a custom action run are reserved keys, passed over',
      { instance: secret, binding: secret, action: secret, admin: secret },
      [['admin', { ...secret, namespace: 'sf-i-1' }]],
    ],
    [
      'a source may take the key of the plan or the service, as in Service Fabrik',
      { plan: secret, service: secret },
      [
        ['plan', { ...secret, namespace: 'sf-i-1' }],
        ['service', { ...secret, namespace: 'sf-i-1' }],
      ],
    ],
    [
      'entries without an apiVersion, a kind or a name are passed over',
      {
        a: { kind: 'Secret', name: 'x' },
        b: { apiVersion: 'v1', name: 'x' },
        c: { apiVersion: 'v1', kind: 'Secret' },
        d: { apiVersion: 'v1', kind: 'Secret', name: 7 },
        e: null,
        f: 'admin',
      },
      [],
    ],
  ])('%s', (_name, sources, expected) => {
    expect(sourceReferences(sources, 'sf-i-1')).toEqual(expected);
  });
});

describe('what the status template says of an operation', () => {
  test.each<[string, unknown, OperationType, StatusSection]>([
    ['no values at all', undefined, 'provision', { state: 'in progress' }],
    ['values that are no map', 'ready', 'provision', { state: 'in progress' }],
    ['no section for the operation', { bind: { state: 'succeeded' } }, 'provision', { state: 'in progress' }],
    ['succeeded', { provision: { state: 'succeeded' } }, 'provision', { state: 'succeeded' }],
    [
      'failed, with an error over the description',
      { provision: { state: 'failed', error: ' out of disk ', description: 'creating' } },
      'provision',
      { state: 'failed', description: 'out of disk' },
    ],
    [
      'any other declared state is in progress, with its description',
      { provision: { state: 'Creating', description: 'creating the database' } },
      'provision',
      { state: 'in progress', description: 'creating the database' },
    ],
    ['a state of blanks is no state', { provision: { state: '  ' } }, 'provision', { state: 'in progress' }],
    [
      'a dashboard URL',
      { provision: { state: 'succeeded', dashboardUrl: 'https://db.example/i-1' } },
      'provision',
      { state: 'succeeded', dashboardUrl: 'https://db.example/i-1' },
    ],
    [
      'an update without a section reads the provision’s',
      { provision: { state: 'failed' } },
      'update',
      { state: 'failed' },
    ],
    [
      'an update with its own section',
      { provision: { state: 'succeeded' }, update: { state: 'Updating' } },
      'update',
      { state: 'in progress' },
    ],
    ['a deprovision without a declared state has succeeded', {}, 'deprovision', { state: 'succeeded' }],
    ['an unbind without a declared state has succeeded', { unbind: {} }, 'unbind', { state: 'succeeded' }],
    [
      'a deprovision that declares a state waits for it',
      { deprovision: { state: 'Deleting' } },
      'deprovision',
      { state: 'in progress' },
    ],
    ['a bind without a declared state waits', { bind: {} }, 'bind', { state: 'in progress' }],
    [
      'a bind with its response',
      { bind: { state: 'succeeded', response: '{"credentials":{}}' } },
      'bind',
      { state: 'succeeded', response: '{"credentials":{}}' },
    ],
  ])('%s', (_name, values, operation, expected) => {
    expect(readStatusSection(values, operation)).toEqual(expected);
  });
});

describe('the fields of a status section Service Fabrik reads as well', () => {
  test.each<[string, unknown, string, StatusSection]>([
    [
      'a failed update that leaves the instance unusable and cannot be repeated, said as text',
      { update: { state: 'failed', error: 'disk lost', instanceUsable: 'false', updateRepeatable: 'false' } },
      'update',
      { state: 'failed', description: 'disk lost', instanceUsable: false, updateRepeatable: false },
    ],
    [
      'said as booleans (a template that writes them unquoted)',
      { provision: { state: 'failed', instanceUsable: false, updateRepeatable: true } },
      'update',
      { state: 'failed', instanceUsable: false, updateRepeatable: true },
    ],
    [
      'a failed deprovision whose instance is still usable',
      { deprovision: { state: 'failed', instanceUsable: 'true' } },
      'deprovision',
      { state: 'failed', instanceUsable: true },
    ],
    [
      'blank flags are not said',
      { provision: { state: 'failed', instanceUsable: ' ', updateRepeatable: '' } },
      'update',
      { state: 'failed' },
    ],
    [
      'the response of an instance’s operation is its description',
      { provision: { state: 'succeeded', response: ' created 3 replicas ' } },
      'provision',
      { state: 'succeeded', description: 'created 3 replicas', response: ' created 3 replicas ' },
    ],
    [
      'the error comes before the response',
      { deprovision: { state: 'failed', error: 'stuck', response: 'deleting' } },
      'deprovision',
      { state: 'failed', description: 'stuck', response: 'deleting' },
    ],
    [
      'a bind response is never a description',
      { bind: { state: 'succeeded', response: '{"credentials":{"password":"p"}}' } },
      'bind',
      { state: 'succeeded', response: '{"credentials":{"password":"p"}}' },
    ],
  ])('%s', (_name, values, operation, expected) => {
    expect(readStatusSection(values, operation)).toEqual(expected);
  });

  test.each<[unknown, boolean | undefined]>([
    ['false', false],
    [false, false],
    [' FALSE ', false],
    ['true', true],
    [true, true],
    ['yes', true],
    ['', undefined],
    [undefined, undefined],
    [null, undefined],
  ])('the flag %p reads as %p', (value, expected) => {
    expect(statusFlag(value)).toBe(expected);
  });
});

describe('whether the status template has a section of a custom action', () => {
  test.each<[string, unknown, boolean]>([
    ['a section', { 'x-backup': { state: 'succeeded' } }, true],
    ['an empty section', { 'x-backup': {} }, true],
    ['no section', { provision: { state: 'succeeded' } }, false],
    ['a section that is no map', { 'x-backup': 'succeeded' }, false],
    ['nothing rendered', undefined, false],
    ['a section inherited, not its own', Object.create({ 'x-backup': { state: 'succeeded' } }), false],
  ])('%s: %s', (_, values, expected) => {
    expect(hasStatusSection(values, 'x-backup')).toBe(expected);
  });

  test('an action reads its section as a provision does', () => {
    expect(readStatusSection({ 'x-backup': { state: 'failed', error: 'disk full' } }, 'x-backup')).toEqual({
      state: 'failed',
      description: 'disk full',
    });
    expect(readStatusSection({ 'x-backup': { state: 'Running' } }, 'x-backup')).toEqual({
      state: 'in progress',
    });
  });
});

describe('the bind response the status template rendered', () => {
  test.each<[string, unknown, { json: string } | { error: string }]>([
    ['an object', { credentials: { user: 'u' } }, { json: '{"credentials":{"user":"u"}}' }],
    ['JSON text', '{"credentials":{"user":"u"}}', { json: '{"credentials":{"user":"u"}}' }],
    [
      'the whole OSB bind response, as Service Fabrik plans render it',
      '{"credentials":{"user":"u"},"syslog_drain_url":"syslog://logs.example:514","route_service_url":"https://route.example","volume_mounts":[{"driver":"nfs","container_dir":"/data","mode":"rw","device_type":"shared","device":{"volume_id":"v1"}}]}',
      {
        json: '{"credentials":{"user":"u"},"syslog_drain_url":"syslog://logs.example:514","route_service_url":"https://route.example","volume_mounts":[{"driver":"nfs","container_dir":"/data","mode":"rw","device_type":"shared","device":{"volume_id":"v1"}}]}',
      },
    ],
    ['nothing', undefined, { json: '{}' }],
    ['blank text', '  ', { json: '{}' }],
    [
      'text that is not JSON',
      'user=u',
      {
        error:
          'The status template rendered a bind response that is not JSON; check the plan’s status template',
      },
    ],
    [
      'credentials that are not an object',
      { credentials: 'u' },
      {
        error:
          'The bind response the status template rendered has credentials that are not an object; check the plan’s status template',
      },
    ],
    [
      'a list',
      '[1]',
      {
        error:
          'The bind response the status template rendered is not an object; check the plan’s status template',
      },
    ],
  ])('%s', (_name, response, expected) => {
    expect(bindResponseText(response)).toEqual(expected);
  });
});

describe('an object as templates see it', () => {
  test('GIVEN an object read from the apiserver WHEN templates see it THEN its managed fields are gone, the rest kept', () => {
    const obj = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'admin', namespace: 'n', uid: 'u', managedFields: [{ manager: 'kubectl' }] },
      data: { password: 'cA==' },
    } as KubeObject;
    expect(forTemplate(obj)).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'admin', namespace: 'n', uid: 'u' },
      data: { password: 'cA==' },
    });
  });
});

describe('a source its operator has not yet observed', () => {
  const pg = (generation?: unknown, observed?: unknown) => ({
    metadata: { name: 'pg', ...(generation !== undefined ? { generation } : {}) },
    status: {
      PostgresClusterStatus: 'Running',
      ...(observed !== undefined ? { observedGeneration: observed } : {}),
    },
  });

  test.each([
    ['observed the latest generation', pg(3, 3), undefined],
    ['observed a later one (a write raced)', pg(3, 4), undefined],
    ['one generation behind', pg(3, 2), 'postgresql'],
    ['no observedGeneration: taken as it is', pg(3), undefined],
    ['no generation', pg(undefined, 1), undefined],
    ['numbers as strings: not the convention', pg('3', '2'), undefined],
  ])('GIVEN a source that %s THEN %s', (_, obj, expected) => {
    expect(unobservedSource({ postgresql: obj }, ['postgresql'])).toBe(expected);
  });

  test('only the given keys count, and a missing source is no answer', () => {
    expect(
      unobservedSource({ instance: pg(2, 1), postgresql: pg(1, 1) }, ['postgresql', 'secret']),
    ).toBeUndefined();
  });
});
