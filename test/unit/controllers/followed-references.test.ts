/**
 * Which rollouts a change of a referenced object starts: one per plan of the instances that read
 * another version of it, told once per settled change, never for instances that stopped reading
 * it; one watch per cluster and kind, in every namespace, none of a kind the worker may not watch;
 * a change made before the watch opened is found by reading the object once it is open. Watches
 * and starts are given as functions, so these cases run without servers; the real ones are
 * exercised by test/integration/reference-watches.test.ts and reference-rollouts.test.ts.
 */
import type { RolloutRequest } from '../../../src/admin/contract.js';
import { followedReferences, rolloutsOfChange } from '../../../src/controllers/followed-references.js';
import type { ClusterClient } from '../../../src/kube/clients.js';
import type { ObjectKey } from '../../../src/kube/kind-watch.js';
import type { ReferencedObject } from '../../../src/resources/types.js';

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

function setUp(versions: Record<string, string> = {}, failures = 0) {
  const started: string[] = [];
  const errors: string[] = [];
  const watches: {
    kind: string;
    namespace: string | undefined;
    stopped: boolean;
    change(object: ObjectKey, version?: string): void;
    fail(err: unknown): void;
  }[] = [];
  let failing = failures;
  const followed = followedReferences({
    cluster: async (id) => ({ id }) as ClusterClient,
    startRollout: async (request: RolloutRequest) => {
      if (failing-- > 0) throw new Error('Temporal is away');
      const r = request.reference!;
      started.push(`${request.planId} ${r.clusterId} ${r.kind} ${r.namespace}/${r.name}@${request.revision}`);
    },
    onError: (_err, what) => errors.push(what),
    watch: (_cluster, _apiVersion, kind, namespace, onChange, onError) => {
      const watch = { kind, namespace, stopped: false, change: onChange, fail: onError! };
      watches.push(watch);
      return { opened: Promise.resolve(), stop: () => void (watch.stopped = true) };
    },
    currentVersion: async (_client, object) => versions[`${object.namespace}/${object.name}`],
    settleMs: 20,
    retryMs: 40,
  });
  return { started, errors, watches, followed };
}

const settle = (ms = 60) => new Promise((resolve) => setTimeout(resolve, ms));

describe('followed references', () => {
  test('GIVEN instances of two plans reading one ConfigMap WHEN it changes three times at once THEN one rollout per plan is told the newest version, once', async () => {
    const { started, watches, followed } = setUp();
    followed.follow('a', 'p1', '1', [configMap('shared', 'sf-a', '1')]);
    followed.follow('b', 'p1', '1', [configMap('shared', 'sf-a', '1')]);
    followed.follow('c', 'p2', '1', [configMap('shared', 'sf-a', '1')]);
    await settle(5);
    expect(watches.map((w) => [w.kind, w.namespace])).toEqual([['ConfigMap', undefined]]);
    for (const version of ['2', '3', '4']) watches[0]!.change({ namespace: 'sf-a', name: 'shared' }, version);
    await settle();
    // The same version heard again (a relist, another event) is told no more.
    watches[0]!.change({ namespace: 'sf-a', name: 'shared' }, '4');
    await settle();
    expect(started).toEqual(['p1 1 ConfigMap sf-a/shared@4', 'p2 1 ConfigMap sf-a/shared@4']);
    expect(followed.size()).toEqual({ objects: 1, instances: 3, watches: 1, pending: 0 });
    followed.stop();
    expect(watches[0]!.stopped).toBe(true);
  });

  test('GIVEN an instance WHEN another object of the kind changes, or it no longer reads the object THEN nothing is rolled out', async () => {
    const { started, watches, followed } = setUp();
    followed.follow('a', 'p', '1', [configMap('mine')]);
    await settle(5);
    watches[0]!.change({ namespace: 'sf-a', name: 'other' }, '2');
    followed.follow('a', 'p', '1', []);
    watches[0]!.change({ namespace: 'sf-a', name: 'mine' }, '3');
    await settle();
    expect(started).toEqual([]);
    expect(followed.size()).toMatchObject({ objects: 0, instances: 0 });
    followed.stop();
  });

  test('GIVEN a rollout that cannot be started WHEN its object changes THEN it is started again later', async () => {
    const { started, errors, watches, followed } = setUp({}, 2);
    followed.follow('a', 'p', '1', [configMap('c')]);
    await settle(5);
    watches[0]!.change({ namespace: 'sf-a', name: 'c' }, '2');
    await settle(250);
    expect(started).toEqual(['p 1 ConfigMap sf-a/c@2']);
    expect(errors).toHaveLength(2);
    expect(followed.size().pending).toBe(0);
    followed.stop();
  });

  test('GIVEN instances in many namespaces THEN one watch per cluster and kind, and a kind the worker may not watch is left everywhere', async () => {
    const { errors, watches, followed } = setUp();
    followed.follow('a', 'p', '1', [configMap('c', 'sf-a'), secret('s')]);
    followed.follow('b', 'p', '1', [configMap('c', 'sf-b')]);
    followed.follow('c', 'p', '1', [configMap('c', 'sf-c')]);
    followed.follow('d', 'p', '2', [configMap('c', 'sf-d')]);
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
    followed.follow('e', 'p', '1', [{ ...secret('s'), namespace: 'sf-e' }]);
    await settle(5);
    expect(watches).toHaveLength(3);
    followed.stop();
  });

  test('GIVEN one watch of ConfigMaps WHEN an object in another namespace changes THEN only its readers’ plan rolls it out', async () => {
    const { started, watches, followed } = setUp();
    followed.follow('a', 'pa', '1', [configMap('c', 'sf-a', '1')]);
    followed.follow('b', 'pb', '1', [configMap('c', 'sf-b', '1')]);
    await settle(5);
    watches[0]!.change({ namespace: 'sf-b', name: 'c' }, '2');
    watches[0]!.change({ namespace: 'sf-z', name: 'c' }, '3');
    await settle();
    expect(started).toEqual(['pb 1 ConfigMap sf-b/c@2']);
    followed.stop();
  });

  test('GIVEN an object changed before its watch opened WHEN an instance follows it THEN the object is read and the change rolled out; one read at the version it has is not', async () => {
    const { started, followed } = setUp({ 'sf-a/c': '5', 'sf-b/c': '1' });
    followed.follow('a', 'p', '1', [configMap('c', 'sf-a', '4')]);
    followed.follow('b', 'p', '1', [configMap('c', 'sf-b', '1')]);
    await settle();
    expect(started).toEqual(['p 1 ConfigMap sf-a/c@5']);
    followed.stop();
  });

  test('GIVEN a watch that relists after a 410 WHEN it tells of every object THEN only a change its readers have not read is rolled out', async () => {
    const { started, watches, followed } = setUp({ 'sf-a/c': '1', 'sf-a/d': '1' });
    followed.follow('a', 'p', '1', [configMap('c', 'sf-a', '1')]);
    followed.follow('b', 'p', '1', [configMap('d', 'sf-a', '1')]);
    await settle();
    expect(started).toEqual([]);
    watches[0]!.change({ namespace: 'sf-a', name: 'c' }, '1');
    watches[0]!.change({ namespace: 'sf-a', name: 'd' }, '9');
    await settle();
    expect(started).toEqual(['p 1 ConfigMap sf-a/d@9']);
    followed.stop();
  });
});

describe('rolloutsOfChange', () => {
  const reference = { clusterId: 'c1', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'shared' };
  test.each([
    ['every reader on the version', [['a', 'p', '7']], []],
    [
      'one reader behind',
      [
        ['a', 'p', '6'],
        ['b', 'p', '7'],
      ],
      ['p'],
    ],
    [
      'readers of two plans behind',
      [
        ['a', 'q', '6'],
        ['b', 'p', undefined],
        ['c', 'p', '5'],
      ],
      ['p', 'q'],
    ],
  ] as const)('GIVEN %s THEN the plans rolled out are %j', (_name, readers, plans) => {
    const map = new Map(
      readers.map(([id, planId, version]) => [
        id,
        { planId, ...(version ? { resourceVersion: version } : {}) },
      ]),
    );
    expect(rolloutsOfChange(reference, '7', map)).toEqual(
      plans.map((planId) => ({ planId, revision: '7', reference, requestedBy: 'reference change' })),
    );
  });
});
