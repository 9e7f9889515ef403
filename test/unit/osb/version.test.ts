/** X-Broker-API-Version parsing and feature checks. */
import { FEATURES, parseApiVersion, requireVersion, supports } from '../../../src/osb/version.js';
import { osbError } from '../../support/osb-error.js';

describe('parseApiVersion', () => {
  test.each([
    ['2.12', { major: 2, minor: 12, text: '2.12' }],
    ['2.17', { major: 2, minor: 17, text: '2.17' }],
    [' 2.14 ', { major: 2, minor: 14, text: '2.14' }],
    ['2.020', { major: 2, minor: 20, text: '2.20' }],
  ])('GIVEN %p WHEN parsed THEN %p', (header, expected) => {
    expect(parseApiVersion(header)).toEqual(expected);
  });

  test.each([
    [undefined, 'The X-Broker-API-Version header is required; this broker serves 2.12 to 2.17.'],
    ['  ', 'The X-Broker-API-Version header is required; this broker serves 2.12 to 2.17.'],
    [
      '2.17.1',
      'The X-Broker-API-Version header "2.17.1" is not MAJOR.MINOR; this broker serves 2.12 to 2.17.',
    ],
    ['v2.17', 'The X-Broker-API-Version header "v2.17" is not MAJOR.MINOR; this broker serves 2.12 to 2.17.'],
    [
      '2.11',
      'X-Broker-API-Version 2.11 is not supported; this broker serves 2.12 to 2.17. Send X-Broker-API-Version: 2.17.',
    ],
    [
      '1.99',
      'X-Broker-API-Version 1.99 is not supported; this broker serves 2.12 to 2.17. Send X-Broker-API-Version: 2.17.',
    ],
    [
      '3.0',
      'X-Broker-API-Version 3.0 is not supported; this broker serves 2.12 to 2.17. Send X-Broker-API-Version: 2.17.',
    ],
  ])('GIVEN %p WHEN parsed THEN 412 PreconditionFailed', (header, description) => {
    const err = osbError(() => parseApiVersion(header));
    expect([err.status, err.toBody()]).toEqual([412, { error: 'PreconditionFailed', description }]);
  });
});

describe('supports', () => {
  test.each([
    ['2.13', '2.14', false],
    ['2.14', '2.14', true],
    ['2.17', '2.14', true],
    ['2.12', '2.12', true],
  ] as const)('GIVEN version %s WHEN asked for %s THEN %s', (version, since, expected) => {
    expect(supports(parseApiVersion(version), since)).toBe(expected);
  });

  test('GIVEN the named features THEN async bindings and fetching instances and bindings came with 2.14', () => {
    expect(FEATURES).toEqual({ asyncBindings: '2.14', fetchingResources: '2.14' });
  });

  test.each([
    ['2.12', 'Fetching a service instance needs X-Broker-API-Version 2.14 or later; the request sent 2.12.'],
    ['2.13', 'Fetching a service instance needs X-Broker-API-Version 2.14 or later; the request sent 2.13.'],
    ['2.14', undefined],
    ['2.17', undefined],
  ])('GIVEN version %s WHEN a feature of 2.14 is required THEN %p', (version, refusal) => {
    const run = () => requireVersion(parseApiVersion(version), '2.14', 'Fetching a service instance');
    if (refusal === undefined) expect(run).not.toThrow();
    else expect(run).toThrow(expect.objectContaining({ status: 412, description: refusal }));
  });

  test('GIVEN a malformed feature version THEN it is a programming error', () => {
    expect(() => supports(parseApiVersion('2.17'), 'x' as never)).toThrow('Not a MAJOR.MINOR version: x');
  });
});
