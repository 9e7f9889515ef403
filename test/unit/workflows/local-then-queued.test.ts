/** Which steps run on a cluster's own worker, and how a step finds that worker (its cluster and task queue). */
import { clusterWorkerOf, STEP_POLICIES } from '../../../src/workflows/local-then-queued.js';

const instance = { instanceId: 'i', name: 'sf-i', namespace: 'sf-i', clusterId: '2' };

describe('the worker of a cluster with a worker of its own', () => {
  test('GIVEN an instance, a target or a binding on a cluster with its own worker THEN its cluster and queue', () => {
    const there = { ...instance, taskQueue: 'interoperator-cluster-2' };
    const worker = { clusterId: '2', taskQueue: 'interoperator-cluster-2' };
    expect(clusterWorkerOf(there)).toEqual(worker);
    expect(clusterWorkerOf({ instance: there })).toEqual(worker);
    expect(clusterWorkerOf({ instance: there, cluster: '2' })).toEqual(worker);
    expect(clusterWorkerOf({ bindingId: 'b', name: 'b', namespace: 'sf-i', instance: there })).toEqual(
      worker,
    );
  });

  test('GIVEN a queue with no cluster named beside it THEN it is refused: its arguments could not be encrypted for it', () => {
    const { clusterId: _, ...unplaced } = instance;
    expect(() => clusterWorkerOf({ ...unplaced, taskQueue: 'q' })).toThrow(/names no cluster/);
  });

  test.each([
    ['an instance the landscape’s workers reach', instance],
    ['a target on such a cluster', { instance }],
    ['an empty queue name', { ...instance, taskQueue: '' }],
    ['a queue that is not a name', { ...instance, taskQueue: 7 }],
    ['no argument', undefined],
    ['null', null],
    ['a request', { instanceId: 'i', planId: 'p' }],
  ])('GIVEN %s THEN none', (_, arg) => {
    expect(clusterWorkerOf(arg)).toBeUndefined();
  });

  test('the steps that work on the instance’s cluster are the ones that go to its own worker', () => {
    const onCluster = Object.entries(STEP_POLICIES)
      .filter(([, policy]) => 'onCluster' in policy && policy.onCluster)
      .map(([name]) => name)
      .sort();
    expect(onCluster).toEqual([
      'applyTemplate',
      'applyTemplateAwaited',
      'applyTemplateWatched',
      'checkStatus',
      'copyGeneratedSecrets',
      'deleteResources',
      'handOverGeneratedSecrets',
      'leaveCluster',
      'pruneResources',
      'removeBindingRecord',
      'removeInstanceRecord',
      'removeUnusedSecretVersions',
      'replicateInstance',
      'rotateGeneratedSecret',
      'takeOverGeneratedSecrets',
    ]);
  });
});
