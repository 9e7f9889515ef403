/** The payload keys as INTEROP_PAYLOAD_KEYS gives them: what is read, and what is refused with why. */
import { parsePayloadKeys } from '../../../src/temporal/codec.js';

const key = (fill: number) => Buffer.alloc(32, fill).toString('base64');

describe('parsePayloadKeys', () => {
  test('GIVEN keys with ids THEN each, in order, the first to encrypt', () => {
    expect(parsePayloadKeys(`k2:${key(2)}, k1:${key(1)}`).map((k) => [k.id, k.key[0]])).toEqual([
      ['k2', 2],
      ['k1', 1],
    ]);
  });

  test('GIVEN bare keys THEN ids by place', () => {
    expect(parsePayloadKeys(`${key(1)},${key(2)}`).map((k) => k.id)).toEqual(['k1', 'k2']);
  });

  test.each([
    ['nothing', '', /no payload encryption key/],
    ['a short key', `k1:${Buffer.alloc(16).toString('base64')}`, /"k1" must be 32 bytes/],
    ['one id twice', `k1:${key(1)},k1:${key(2)}`, /payload key id "k1" is given twice/],
  ])('GIVEN %s THEN it is refused, saying why', (_n, text, why) => {
    expect(() => parsePayloadKeys(text)).toThrow(why);
  });
});
