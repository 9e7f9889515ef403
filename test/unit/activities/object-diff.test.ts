/** What applying an object would change, field by field, and what is never reported. Pure and table-driven. */
import {
  comparable,
  fieldChanges,
  objectChange,
  removedObject,
} from '../../../src/activities/object-diff.js';
import type { AppliedResource, KubeObject } from '../../../src/resources/types.js';

const pgRef: AppliedResource = {
  apiVersion: 'acid.zalan.do/v1',
  kind: 'postgresql',
  name: 'db',
  namespace: 'sf-1',
};
const secretRef: AppliedResource = { apiVersion: 'v1', kind: 'Secret', name: 'creds', namespace: 'sf-1' };

const pg = (maxConnections: string, metadata: Partial<KubeObject['metadata']> = {}): KubeObject => ({
  apiVersion: 'acid.zalan.do/v1',
  kind: 'postgresql',
  metadata: { name: 'db', namespace: 'sf-1', ...metadata },
  spec: { postgresql: { parameters: { max_connections: maxConnections } }, users: { main: ['superuser'] } },
});

describe('fieldChanges', () => {
  test.each([
    ['equal objects, keys in another order', { a: 1, b: { c: 2 } }, { b: { c: 2 }, a: 1 }, []],
    ['a scalar changed', { a: 1 }, { a: 2 }, [{ path: 'a', old: 1, new: 2 }]],
    ['a nested field added', { a: {} }, { a: { b: 'x' } }, [{ path: 'a.b', new: 'x' }]],
    ['a nested field removed', { a: { b: 'x' } }, { a: {} }, [{ path: 'a.b', old: 'x' }]],
    ['an array item changed', { l: [1, 2] }, { l: [1, 3] }, [{ path: 'l[1]', old: 2, new: 3 }]],
    ['an array grown: the whole array', { l: [1] }, { l: [1, 2] }, [{ path: 'l', old: [1], new: [1, 2] }]],
    [
      'a key with dots or slashes in brackets',
      { m: { 'example.com/owner': 'a' } },
      { m: { 'example.com/owner': 'b' } },
      [{ path: 'm["example.com/owner"]', old: 'a', new: 'b' }],
    ],
    ['an object turned scalar', { a: { b: 1 } }, { a: 'x' }, [{ path: 'a', old: { b: 1 }, new: 'x' }]],
    [
      'changes depth first in key order',
      { z: 1, a: { y: 1, b: 1 } },
      { z: 2, a: { y: 2, b: 2 } },
      [
        { path: 'a.b', old: 1, new: 2 },
        { path: 'a.y', old: 1, new: 2 },
        { path: 'z', old: 1, new: 2 },
      ],
    ],
  ])('GIVEN %s THEN the changes are exact', (_name, before, after, expected) => {
    expect(fieldChanges(before, after)).toEqual(expected);
  });
});

describe('comparable', () => {
  test('GIVEN an object as the apiserver returns it THEN server-set metadata, status and the revision label are gone', () => {
    const live = {
      ...pg('100', {
        uid: 'u',
        resourceVersion: '7',
        generation: 3,
        creationTimestamp: '2026-01-01T00:00:00Z',
        managedFields: [{ manager: 'x' }],
        labels: { app: 'db', 'interoperator.servicefabrik.io/plan-revision': 'r1' },
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
      } as Partial<KubeObject['metadata']>),
      status: { PostgresClusterStatus: 'Running' },
    } as KubeObject;
    expect(comparable(live)).toEqual({
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: 'db', namespace: 'sf-1', labels: { app: 'db' } },
      spec: pg('100').spec,
    });
  });
});

describe('objectChange', () => {
  test('GIVEN no live object THEN added, without fields', () => {
    expect(objectChange(pgRef, undefined, pg('120'))).toEqual({ ...pgRef, change: 'added' });
  });

  test('GIVEN only server-set fields differ THEN unchanged', () => {
    const live = { ...pg('100', { resourceVersion: '1', generation: 1 }), status: { a: 1 } } as KubeObject;
    const after = { ...pg('100', { resourceVersion: '2', generation: 2 }), status: { a: 2 } } as KubeObject;
    expect(objectChange(pgRef, live, after)).toEqual({ ...pgRef, change: 'unchanged' });
  });

  test('GIVEN a changed parameter THEN changed, naming the field with its old and new value', () => {
    expect(objectChange(pgRef, pg('100'), pg('120'))).toEqual({
      ...pgRef,
      change: 'changed',
      fields: [{ path: 'spec.postgresql.parameters.max_connections', old: '100', new: '120' }],
    });
  });

  test('GIVEN a Secret whose data changes THEN only the keys are reported, never a value', () => {
    const secret = (data: Record<string, string>, labels: Record<string, string> = {}): KubeObject =>
      ({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'creds', namespace: 'sf-1', labels },
        data,
      }) as KubeObject;
    const change = objectChange(
      secretRef,
      secret({ password: 'b2xkLXNlY3JldA==', user: 'YWRtaW4=', gone: 'eA==' }),
      secret({ password: 'bmV3LXNlY3JldA==', user: 'YWRtaW4=', token: 'dG9rZW4=' }, { tier: 'db' }),
    );
    expect(change).toEqual({
      ...secretRef,
      change: 'changed',
      fields: [
        { path: 'data.gone', redacted: true },
        { path: 'data.password', redacted: true },
        { path: 'data.token', redacted: true },
        { path: 'metadata.labels', new: { tier: 'db' } },
      ],
    });
    expect(JSON.stringify(change)).not.toMatch(/bmV3|b2xk|dG9r|eA==/);
  });

  test('GIVEN a Secret whose data is whole new THEN its keys, still no value', () => {
    const live = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' } } as KubeObject;
    const after = { ...live, stringData: { password: 'plain-secret' } } as KubeObject;
    const change = objectChange(secretRef, live, after);
    expect(change.fields).toEqual([{ path: 'stringData.password', redacted: true }]);
    expect(JSON.stringify(change)).not.toContain('plain-secret');
  });

  test('GIVEN a recorded object no longer rendered THEN removed', () => {
    expect(removedObject(pgRef)).toEqual({ ...pgRef, change: 'removed' });
  });
});
