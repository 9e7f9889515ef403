/**
 * Which change of a source is news to an operation that saw it: a later resourceVersion (compared
 * as numbers when both are), and while the operator was behind the generation seen, only a change
 * that reports it observed (or a deletion).
 */
import { changeIsNews, laterVersion, seenSource } from '../../../src/resources/source-changes.js';
import type { KubeObject } from '../../../src/resources/types.js';

const postgresql = (resourceVersion: string, generation: number, observedGeneration?: number): KubeObject =>
  ({
    apiVersion: 'acid.zalan.do/v1',
    kind: 'postgresql',
    metadata: { name: 'pg', namespace: 'sf-a', resourceVersion, generation },
    ...(observedGeneration !== undefined ? { status: { observedGeneration } } : {}),
  }) as KubeObject;

describe('source changes', () => {
  test('GIVEN resourceVersions of etcd THEN they compare as numbers, others only as different', () => {
    expect(laterVersion('100', '99')).toBe(true);
    expect(laterVersion('99', '100')).toBe(false);
    expect(laterVersion('100', '100')).toBe(false);
    expect(laterVersion('123456789012345678901', '123456789012345678900')).toBe(true);
    expect(laterVersion('b', 'a')).toBe(true);
    expect(laterVersion('a', 'b')).toBe(true);
    expect(laterVersion('a', 'a')).toBe(false);
  });

  test('GIVEN an object THEN what is seen of it is its version, and the generation its operator has yet to observe', () => {
    expect(seenSource(undefined)).toBeUndefined();
    expect(seenSource(postgresql('10', 3, 2))).toEqual({ resourceVersion: '10', unobservedGeneration: 3 });
    expect(seenSource(postgresql('10', 3, 3))).toEqual({ resourceVersion: '10' });
    expect(seenSource(postgresql('10', 3))).toEqual({ resourceVersion: '10' });
  });

  test('GIVEN nothing seen (the object was not there) THEN every change is news', () => {
    expect(changeIsNews(undefined, { resourceVersion: '1' })).toBe(true);
  });

  test('GIVEN version 10 seen THEN a change at or before it is no news, a later one is', () => {
    expect(changeIsNews({ resourceVersion: '10' }, { resourceVersion: '10' })).toBe(false);
    expect(changeIsNews({ resourceVersion: '10' }, { resourceVersion: '9' })).toBe(false);
    expect(changeIsNews({ resourceVersion: '10' }, { resourceVersion: '11' })).toBe(true);
    expect(changeIsNews({ resourceVersion: '10' }, {})).toBe(true);
  });

  test('GIVEN generation 3 seen unobserved THEN a change is news once it reports 3 observed, or when it deletes', () => {
    const seen = { resourceVersion: '10', unobservedGeneration: 3 };
    expect(changeIsNews(seen, { resourceVersion: '11', observedGeneration: 2 })).toBe(false);
    expect(changeIsNews(seen, { resourceVersion: '12', observedGeneration: 3 })).toBe(true);
    expect(changeIsNews(seen, { resourceVersion: '12', observedGeneration: 4 })).toBe(true);
    expect(changeIsNews(seen, { resourceVersion: '12', deleted: true, observedGeneration: 2 })).toBe(true);
    // An operator that stopped reporting it: taken as news.
    expect(changeIsNews(seen, { resourceVersion: '12' })).toBe(true);
  });
});
