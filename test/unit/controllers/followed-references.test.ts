/**
 * Which instances a change of a referenced object updates: those whose references read it, once
 * per settled change, again later when they were busy, never after they stopped reading it; one
 * watch per cluster and kind, in every namespace, none of a kind the worker may not watch; a change
 * made before the watch opened is found by reading the object once it is open. Watches and updates are
 * given as functions, so these cases run without servers; the real ones are exercised by
 * test/integration/references.test.ts.
 */
import {
  followedReferences,
  wantsUpdate,
  type FollowOutcome,
  type ReferenceChange,
} from '../../../src/controllers/followed-references.js';
import type { ClusterClient } from '../../../src/kube/clients.js';
import type { ObjectKey } from '../../../src/kube/kind-watch.js';
import type { ReferencedObject, SFServiceInstance } from '../../../src/resources/types.js';

const configMap = (name: string, namespace = 'sf-a', resourceVersion?: string): ReferencedObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace,
  name,
  ...(resourceVersion ? { resourceVersion } : {}),
});
const secret = (name: string): ReferencedObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  namespace: 'sf-a',
  name,
});

function setUp(outcomes: FollowOutcome[] = [], versions: Record<string, string> = {}) {
  const updates: string[] = [];
  const errors: string[] = [];
  const watches: {
    kind: string;
    namespace: string | undefined;
    since: string | undefined;
    stopped: boolean;
    change(object: ObjectKey, version?: string): void;
    fail(err: unknown): void;
  }[] = [];
  const followed = followedReferences({
    cluster: async (id) => ({ id }) as ClusterClient,
    update: async (instanceId, change: ReferenceChange) => {
      updates.push(`${instanceId} ${change.kind} ${change.namespace}/${change.name}`);
      return outcomes.shift() ?? 'started';
    },
    onError: (_err, what) => errors.push(what),
    watch: (_cluster, _apiVersion, kind, namespace, onChange, onError, since) => {
      const watch = { kind, namespace, since, stopped: false, change: onChange, fail: onError! };
      watches.push(watch);
      return { opened: Promise.resolve(), stop: () => void (watch.stopped = true) };
    },
    currentVersion: async (_client, object) => versions[`${object.namespace}/${object.name}`],
    settleMs: 20,
    retryMs: 40,
  });
  return { updates, errors, watches, followed };
}

const settle = (ms = 60) => new Promise((resolve) => setTimeout(resolve, ms));

describe('followed references', () => {
  test('GIVEN two instances reading one ConfigMap WHEN it changes three times at once THEN each is updated once', async () => {
    const { updates, watches, followed } = setUp();
    followed.follow('a', '1', [configMap('shared', 'sf-a', '1')]);
    followed.follow('b', '1', [configMap('shared', 'sf-a', '1')]);
    await settle(5);
    // One watch of the kind in every namespace.
    expect(watches.map((w) => [w.kind, w.namespace, w.since])).toEqual([['ConfigMap', undefined, undefined]]);
    for (const version of ['2', '3', '4']) watches[0]!.change({ namespace: 'sf-a', name: 'shared' }, version);
    await settle();
    expect(updates.sort()).toEqual(['a ConfigMap sf-a/shared', 'b ConfigMap sf-a/shared']);
    expect(followed.size()).toEqual({ objects: 1, instances: 2, watches: 1, pending: 0 });
    followed.stop();
    expect(watches[0]!.stopped).toBe(true);
  });

  test('GIVEN an instance WHEN another object of the kind changes, or it no longer reads the object THEN it is not updated', async () => {
    const { updates, watches, followed } = setUp();
    followed.follow('a', '1', [configMap('mine')]);
    await settle(5);
    watches[0]!.change({ namespace: 'sf-a', name: 'other' });
    followed.follow('a', '1', []);
    watches[0]!.change({ namespace: 'sf-a', name: 'mine' });
    await settle();
    expect(updates).toEqual([]);
    expect(followed.size()).toMatchObject({ objects: 0, instances: 0 });
    followed.stop();
  });

  test('GIVEN a busy instance WHEN its object changes THEN its update is tried again until it starts', async () => {
    const { updates, watches, followed } = setUp(['busy', 'busy', 'started']);
    followed.follow('a', '1', [configMap('c')]);
    await settle(5);
    watches[0]!.change({ namespace: 'sf-a', name: 'c' });
    await settle(250);
    expect(updates).toEqual(['a ConfigMap sf-a/c', 'a ConfigMap sf-a/c', 'a ConfigMap sf-a/c']);
    expect(followed.size().pending).toBe(0);
    followed.stop();
  });

  test('GIVEN an instance that is gone WHEN its object changes THEN it is no longer followed', async () => {
    const { updates, watches, followed } = setUp(['gone']);
    followed.follow('a', '1', [configMap('c')]);
    await settle(5);
    watches[0]!.change({ namespace: 'sf-a', name: 'c' });
    await settle();
    expect(updates).toHaveLength(1);
    expect(followed.size()).toMatchObject({ objects: 0, instances: 0 });
    followed.stop();
  });

  test('GIVEN instances in many namespaces THEN one watch per cluster and kind, and a kind the worker may not watch is left everywhere', async () => {
    const { errors, watches, followed } = setUp();
    followed.follow('a', '1', [configMap('c', 'sf-a'), secret('s')]);
    followed.follow('b', '1', [configMap('c', 'sf-b')]);
    followed.follow('c', '1', [configMap('c', 'sf-c')]);
    followed.follow('d', '2', [configMap('c', 'sf-d')]);
    await settle(5);
    expect(watches.map((w) => `${w.kind} ${w.namespace ?? '*'}`)).toEqual([
      'ConfigMap *',
      'Secret *',
      'ConfigMap *',
    ]);
    expect(followed.size()).toMatchObject({ instances: 4, watches: 3 });
    watches[1]!.fail(Object.assign(new Error('forbidden'), { code: 403 }));
    await settle(5);
    expect(watches[1]!.stopped).toBe(true);
    expect(errors).toEqual([expect.stringContaining('not allowed')]);
    followed.follow('e', '1', [{ ...secret('s'), namespace: 'sf-e' }]);
    await settle(5);
    expect(watches).toHaveLength(3);
    followed.stop();
  });

  test('GIVEN one watch of ConfigMaps WHEN an object in another namespace changes THEN only its readers are updated', async () => {
    const { updates, watches, followed } = setUp();
    followed.follow('a', '1', [configMap('c', 'sf-a', '1')]);
    followed.follow('b', '1', [configMap('c', 'sf-b', '1')]);
    await settle(5);
    watches[0]!.change({ namespace: 'sf-b', name: 'c' }, '2');
    watches[0]!.change({ namespace: 'sf-z', name: 'c' }, '3');
    await settle();
    expect(updates).toEqual(['b ConfigMap sf-b/c']);
    followed.stop();
  });

  test('GIVEN an object changed before its watch opened WHEN an instance follows it THEN the object is read and the instance updated; one read at the version it has is not', async () => {
    const { updates, followed } = setUp([], { 'sf-a/c': '5', 'sf-b/c': '1' });
    followed.follow('a', '1', [configMap('c', 'sf-a', '4')]);
    followed.follow('b', '1', [configMap('c', 'sf-b', '1')]);
    await settle();
    expect(updates).toEqual(['a ConfigMap sf-a/c']);
    followed.stop();
  });

  test('GIVEN a watch that relists after a 410 WHEN it tells of every object THEN only the readers of another version are updated', async () => {
    const { updates, watches, followed } = setUp([], { 'sf-a/c': '1', 'sf-a/d': '1' });
    followed.follow('a', '1', [configMap('c', 'sf-a', '1')]);
    followed.follow('b', '1', [configMap('d', 'sf-a', '1')]);
    await settle();
    expect(updates).toEqual([]);
    watches[0]!.change({ namespace: 'sf-a', name: 'c' }, '1');
    watches[0]!.change({ namespace: 'sf-a', name: 'd' }, '9');
    await settle();
    expect(updates).toEqual(['b ConfigMap sf-a/d']);
    followed.stop();
  });
});

describe('wantsUpdate', () => {
  const record = (state: string, references: ReferencedObject[]) =>
    ({ status: { state, references } }) as unknown as SFServiceInstance;
  const change = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'sf-a', name: 'c', resourceVersion: '7' };

  test.each([
    ['succeeded', [configMap('c', 'sf-a', '6')], true],
    ['succeeded', [configMap('c', 'sf-a', '7')], false],
    ['succeeded', [configMap('c')], true],
    ['succeeded', [configMap('other')], false],
    ['failed', [configMap('c', 'sf-a', '6')], false],
  ])('GIVEN a record %s reading %j THEN the change of version 7 is to apply: %s', (state, refs, wanted) => {
    expect(wantsUpdate(record(state, refs), change)).toBe(wanted);
  });
});
