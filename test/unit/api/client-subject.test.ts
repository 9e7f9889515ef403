/** Client certificate subjects compared as sets of RDNs, as Service Fabrik's broker compares them. */
import { sameSubject, subjectRdns } from '../../../src/api/client-subject.js';
import { osbClientSubject } from '../../../src/roots/broker.js';

describe('subjectRdns', () => {
  test.each<[string, string[] | undefined]>([
    ['CN=sm,OU=Platform,O=Example,C=DE', ['CN=sm', 'OU=Platform', 'O=Example', 'C=DE']],
    ['/C=DE/O=Example/OU=Platform/CN=sm', ['C=DE', 'O=Example', 'OU=Platform', 'CN=sm']],
    [' cn = sm , o=Example SE ', ['CN=sm', 'O=Example SE']],
    ['CN=a\\,b,O=x', ['CN=a\\,b', 'O=x']],
    ['', undefined],
    ['CN=sm,garbage', undefined],
    ['/C=DE//CN=sm', undefined],
    ['CN=', undefined],
  ])('GIVEN %p THEN %p', (subject, rdns) => {
    const parsed = subjectRdns(subject);
    expect(parsed ? [...parsed] : undefined).toEqual(rdns);
  });
});

describe('sameSubject', () => {
  const expected = subjectRdns('/C=DE/O=Example/OU=Platform/L=Walldorf/CN=sm')!;
  test.each<[string, boolean]>([
    ['CN=sm,L=Walldorf,OU=Platform,O=Example,C=DE', true],
    ['C=DE,O=Example,OU=Platform,L=Walldorf,CN=sm', true],
    ['CN=sm, L=Walldorf, OU=Platform, O=Example, C=DE', true],
    ['CN=other,L=Walldorf,OU=Platform,O=Example,C=DE', false],
    ['CN=sm,OU=Platform,O=Example,C=DE', false],
    ['CN=sm,L=Walldorf,OU=Platform,OU=Extra,O=Example,C=DE', false],
    ['CN=sm,L=Walldorf,OU=Platform,O=example,C=DE', false],
    ['not a subject', false],
  ])('GIVEN the subject %p THEN %p', (given, same) => {
    expect(sameSubject(subjectRdns(given), expected)).toBe(same);
  });
});

describe('osbClientSubject (the broker, before it serves)', () => {
  test('GIVEN Basic auth THEN no subject', () => {
    expect(osbClientSubject({ kind: 'basic' })).toBeUndefined();
  });

  test('GIVEN a subject of type=value parts THEN its RDNs', () => {
    expect([...osbClientSubject({ kind: 'client-certificate', subject: '/C=DE/CN=sm' })!]).toEqual([
      'C=DE',
      'CN=sm',
    ]);
  });

  test('GIVEN a subject that is not type=value parts THEN a ConfigError that says the form', () => {
    expect(() => osbClientSubject({ kind: 'client-certificate', subject: 'sm' })).toThrow(
      /INTEROP_OSB_CLIENT_SUBJECT must be a subject of type=value parts/,
    );
  });
});
