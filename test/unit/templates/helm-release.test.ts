import { ANNOTATIONS } from '../../../src/resources/names.js';
import { adler32, releaseOf } from '../../../src/templates/helm/release.js';

const record = (name: string, annotations?: Record<string, string>) => ({
  metadata: { name, namespace: 'sf-1', ...(annotations ? { annotations } : {}) },
});

describe('the Helm release a record renders as', () => {
  test("Go's hash/adler32 of the name (Wikipedia's example)", () => {
    expect(adler32('Wikipedia')).toBe(0x11e60398);
  });

  test('GIVEN a record this broker made THEN in- and the checksum in hex, as its releases were always named', () => {
    expect(releaseOf({ instance: record('kdb') })).toEqual({
      name: `in-${adler32('kdb').toString(16)}`,
      namespace: 'sf-1',
    });
  });

  test("GIVEN a record adopted from Service Fabrik THEN in- and the checksum in decimal, its interoperator's name for the release", () => {
    const adopted = record('kdb', { [ANNOTATIONS.adoptedFromServiceFabrik]: '{}' });
    expect(releaseOf({ instance: adopted })).toEqual({ name: `in-${adler32('kdb')}`, namespace: 'sf-1' });
    // A binding's release follows the binding's record.
    expect(releaseOf({ instance: adopted, binding: record('b') })?.name).toBe(
      `in-${adler32('b').toString(16)}`,
    );
  });
});
