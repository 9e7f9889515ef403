import { handedOverPrefix, handedOverSecretName } from '../../../src/resources/names.js';

describe('the name in a drop box of a generated Secret a move hands over', () => {
  test('GIVEN a versioned Secret name THEN it is the instance’s prefix and the name', () => {
    expect(handedOverSecretName('i-1', 'sapcp-i-1-admin-v2')).toBe('moved.i-1.sapcp-i-1-admin-v2');
  });

  test('GIVEN names too long for a Secret together THEN the Secret’s name is hashed, under the instance’s prefix', () => {
    const instance = 'a'.repeat(60);
    const secret = `${'s'.repeat(238)}-v1`;
    const name = handedOverSecretName(instance, secret);
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name.startsWith(handedOverPrefix(instance))).toBe(true);
    expect(name).toMatch(/^moved\.a{60}\.[0-9a-f]{64}$/);
    expect(handedOverSecretName(instance, `${'s'.repeat(238)}-v2`)).not.toBe(name);
  });

  test('GIVEN two instances THEN neither’s prefix is a prefix of the other’s names', () => {
    expect(handedOverSecretName('ab', 'x-v1').startsWith(handedOverPrefix('a'))).toBe(false);
  });
});
