/** Which steps run on a cluster's own worker, and how a step finds that worker's task queue. */
import { clusterTaskQueueOf, STEP_POLICIES } from '../../../src/workflows/local-then-queued.js';

const instance = { instanceId: 'i', name: 'sf-i', namespace: 'sf-i', clusterId: '2' };

describe('the task queue of a cluster’s own worker', () => {
  test('GIVEN an instance, a target or a binding on a cluster with its own worker THEN its queue', () => {
    const there = { ...instance, taskQueue: 'interoperator-cluster-2' };
    expect(clusterTaskQueueOf(there)).toBe('interoperator-cluster-2');
    expect(clusterTaskQueueOf({ instance: there })).toBe('interoperator-cluster-2');
    expect(clusterTaskQueueOf({ bindingId: 'b', name: 'b', namespace: 'sf-i', instance: there })).toBe(
      'interoperator-cluster-2',
    );
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
    expect(clusterTaskQueueOf(arg)).toBeUndefined();
  });

  test('the steps that work on the instance’s cluster are the ones that go to its own worker', () => {
    const onCluster = Object.entries(STEP_POLICIES)
      .filter(([, policy]) => 'onCluster' in policy && policy.onCluster)
      .map(([name]) => name)
      .sort();
    expect(onCluster).toEqual([
      'applyTemplate',
      'checkStatus',
      'copyGeneratedSecrets',
      'deleteResources',
      'leaveCluster',
      'pruneResources',
      'removeBindingRecord',
      'removeInstanceRecord',
      'removeUnusedSecretVersions',
      'replicateInstance',
      'rotateGeneratedSecret',
    ]);
  });
});
