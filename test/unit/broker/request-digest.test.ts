/**
 * The request digest: canonical JSON and the keyed digests of each request kind. The digests are
 * stored on records, so the expected values are fixed: a change here would make every repeated
 * request look like a conflicting one.
 */
import { canonicalJson } from '../../../src/osb/canonical-json.js';
import { requestDigests } from '../../../src/broker/request-digest.js';

describe('canonicalJson', () => {
  test.each([
    ['undefined', undefined, 'null'],
    ['null', null, 'null'],
    ['a number', 1, '1'],
    ['a boolean', true, 'true'],
    ['a string', 'a "b"', '"a \\"b\\""'],
    ['an empty object', {}, '{}'],
    ['an empty list', [], '[]'],
    ['keys out of order, nested', { b: { d: 1, c: [] }, a: 2 }, '{"a":2,"b":{"c":[],"d":1}}'],
    ['undefined members', { b: undefined, a: 1 }, '{"a":1}'],
    ['undefined in a list', [1, undefined, { b: 1, a: 2 }], '[1,null,{"a":2,"b":1}]'],
    ['keys by code unit, not locale', { é: 1, b: 2, Z: 3 }, '{"Z":3,"b":2,"é":1}'],
  ])('GIVEN %s THEN %s', (_n, value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  test('GIVEN the same object with its keys in another order THEN the same text', () => {
    expect(canonicalJson({ a: 1, b: { x: 1, y: 2 } })).toBe(canonicalJson({ b: { y: 2, x: 1 }, a: 1 }));
  });
});

describe('requestDigests', () => {
  const digests = requestDigests([Buffer.from('test-key')]);
  const provision = {
    serviceId: 's-1',
    planId: 'p-1',
    organizationGuid: 'org',
    spaceGuid: 'space',
    parameters: { size: 2, name: 'db' },
    maintenanceInfo: { version: '2.0.0', description: 'PostgreSQL 16' },
  };
  const bind = {
    serviceId: 's-1',
    planId: 'p-1',
    appGuid: 'app',
    bindResource: { app_guid: 'app' },
    parameters: { role: 'reader' },
  };

  test.each([
    [
      'a provision',
      () => digests.instance(provision),
      '6a675ff33b5aa9c7e4b74db3e11ca7f80f97a57cbc6f454644f650428569bdfa',
    ],
    [
      'a provision with the ids only',
      () => digests.instance({ serviceId: 's-1', planId: 'p-1' }),
      '718d7e7ba57981659d086bcc9bbb720fdec1b7bf9c20d4793699f09685336e43',
    ],
    [
      'a provision request, with the fields that do not count',
      () =>
        digests.instance({
          ...provision,
          instanceId: 'i-1',
          context: { platform: 'kubernetes' },
          acceptsIncomplete: true,
        } as typeof provision),
      '6a675ff33b5aa9c7e4b74db3e11ca7f80f97a57cbc6f454644f650428569bdfa',
    ],
    [
      'a provision whose maintenance_info has another description',
      () => digests.instance({ ...provision, maintenanceInfo: { version: '2.0.0' } }),
      '6a675ff33b5aa9c7e4b74db3e11ca7f80f97a57cbc6f454644f650428569bdfa',
    ],
    [
      'a deprovision',
      () => digests.deprovision('i-1'),
      'a1a36a5995bed6f7b56dd7fc0706b8bddcbe78d4b0fef382eab28b06c781786a',
    ],
    ['a bind', () => digests.bind(bind), '6eff2190ad98040dd8b82bf925a9ab429715615225fd6165a418aa4a11e93cb4'],
    [
      'a bind request, with the fields that do not count',
      () =>
        digests.bind({
          ...bind,
          instanceId: 'i-1',
          bindingId: 'b-1',
          context: { a: 1 },
          acceptsIncomplete: false,
        } as typeof bind),
      '6eff2190ad98040dd8b82bf925a9ab429715615225fd6165a418aa4a11e93cb4',
    ],
    [
      'an unbind',
      () => digests.unbind('b-1'),
      'e892c08de86aacb9d16c19f9f7efb51452243e165075637279d6f268852024d8',
    ],
  ])('GIVEN %s THEN its digest', (_n, digest, expected) => {
    expect(digest().value).toBe(expected);
  });

  test('GIVEN another key THEN another digest', () => {
    expect(requestDigests([Buffer.from('other-key')]).deprovision('i-1').value).not.toBe(
      digests.deprovision('i-1').value,
    );
  });

  test('GIVEN other parameters THEN another digest', () => {
    expect(digests.instance({ ...provision, parameters: { size: 3, name: 'db' } }).value).not.toBe(
      digests.instance(provision).value,
    );
  });

  test('GIVEN a rotation THEN its predecessor counts: each predecessor its own digest, none the plain bind’s', () => {
    const rotating = digests.bind({ ...bind, predecessorBindingId: 'b-0' }).value;
    expect(rotating).not.toBe(digests.bind(bind).value);
    expect(digests.bind({ ...bind, predecessorBindingId: 'b-9' }).value).not.toBe(rotating);
    expect(digests.bind({ ...bind, predecessorBindingId: 'b-0' }).value).toBe(rotating);
    expect(digests.bind({ ...bind, predecessorBindingId: undefined }).value).toBe(digests.bind(bind).value);
  });
});

describe('request digests across a rotation of the keys', () => {
  const before = requestDigests([Buffer.from('old-key')]);
  const during = requestDigests([Buffer.from('new-key'), Buffer.from('old-key')]);
  const after = requestDigests([Buffer.from('new-key')]);
  const provision = { serviceId: 's-1', planId: 'p-1', parameters: { size: 2 } };
  const stored = before.instance(provision).value;

  test.each([
    ['the same request, digested under the old key still held', true, during.instance(provision), stored],
    [
      'the same request, digested under the first key',
      true,
      during.instance(provision),
      during.instance(provision).value,
    ],
    ['the same request, once the old key is gone', false, after.instance(provision), stored],
    [
      'another request, under the old key still held',
      false,
      during.instance({ ...provision, parameters: { size: 3 } }),
      stored,
    ],
    ['nothing stored', false, during.instance(provision), undefined],
  ])('GIVEN %s THEN it matches: %s', (_n, matches, digest, storedDigest) => {
    expect(digest.matches(storedDigest)).toBe(matches);
  });

  test('GIVEN two keys THEN the digest written is the first key’s', () => {
    expect(during.instance(provision).value).toBe(after.instance(provision).value);
    expect(during.instance(provision).value).not.toBe(stored);
  });

  test('GIVEN no key THEN it refuses to digest', () => {
    expect(() => requestDigests([])).toThrow(/need a key/);
  });
});
