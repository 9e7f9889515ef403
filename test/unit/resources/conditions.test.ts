import {
  CONDITION_MESSAGE_LIMIT,
  clusterConditionFacts,
  clusterRemovalMessage,
  nextConditions,
  recordConditionFacts,
  recordStatusConditions,
  type ClusterProbeSummary,
  type ConditionFacts,
  type RecordOperationStatus,
} from '../../../src/resources/conditions.js';
import type { ClusterPhase, Condition } from '../../../src/resources/types.js';

const NOW = new Date('2025-01-01T12:00:00.000Z');
const now = NOW.toISOString();
const EARLIER = '2025-01-01T11:00:00.000Z';

/** Ready, Reconciling and Stalled as `[status, status, status]`, with their reason and message. */
type Kstatus = [ready: string, reconciling: string, stalled: string, reason: string, message: string];

const asKstatus = (facts: readonly ConditionFacts[]): Kstatus => {
  const of = (type: string) => facts.find((f) => f.type === type)!;
  const ready = of('Ready');
  return [ready.status, of('Reconciling').status, of('Stalled').status, ready.reason, ready.message];
};

describe('recordConditionFacts: the conditions of an instance or binding by its last operation', () => {
  test.each<[string, RecordOperationStatus, Kstatus]>([
    [
      'a provision in progress: reconciling, not ready',
      { state: 'in progress', operation: 'provision', description: 'Provisioning the instance' },
      ['False', 'True', 'False', 'Provisioning', 'Provisioning the instance'],
    ],
    [
      'a provision that succeeded: ready',
      { state: 'succeeded', operation: 'provision', description: 'The instance is provisioned' },
      ['True', 'False', 'False', 'Provisioned', 'The instance is provisioned'],
    ],
    [
      'a provision that failed: stalled, with the description',
      { state: 'failed', operation: 'provision', description: 'the operator refused: team fail' },
      ['False', 'False', 'True', 'ProvisionFailed', 'the operator refused: team fail'],
    ],
    [
      'a failure without a description: stalled, with a generic message',
      { state: 'failed', operation: 'provision' },
      ['False', 'False', 'True', 'ProvisionFailed', 'The operation failed'],
    ],
    [
      'an update of a ready instance: not ready until it ends',
      { state: 'in progress', operation: 'update', description: 'Updating the instance' },
      ['False', 'True', 'False', 'Updating', 'Updating the instance'],
    ],
    [
      'an update that succeeded: ready',
      { state: 'succeeded', operation: 'update', description: 'The instance is updated' },
      ['True', 'False', 'False', 'Updated', 'The instance is updated'],
    ],
    [
      'an update that failed (rolled back): stalled',
      { state: 'failed', operation: 'update', description: 'The update was cancelled and rolled back.' },
      ['False', 'False', 'True', 'UpdateFailed', 'The update was cancelled and rolled back.'],
    ],
    [
      'a deprovision being run: reconciling, deleting',
      { state: 'delete', operation: 'deprovision', description: 'Deprovisioning the instance' },
      ['False', 'True', 'False', 'Deleting', 'Deprovisioning the instance'],
    ],
    [
      'a deprovision in progress: deleting',
      { state: 'in progress', operation: 'deprovision', description: 'Deleting the operator’s resources' },
      ['False', 'True', 'False', 'Deleting', 'Deleting the operator’s resources'],
    ],
    [
      'a deprovision that failed: stalled',
      { state: 'failed', operation: 'deprovision', description: 'The deprovision was stopped' },
      ['False', 'False', 'True', 'DeprovisionFailed', 'The deprovision was stopped'],
    ],
    [
      'a bind in progress: reconciling',
      { state: 'in progress', operation: 'bind', description: 'Creating the binding' },
      ['False', 'True', 'False', 'Binding', 'Creating the binding'],
    ],
    [
      'a bind that succeeded: ready',
      { state: 'succeeded', operation: 'bind', description: 'The binding is created' },
      ['True', 'False', 'False', 'Bound', 'The binding is created'],
    ],
    [
      'an unbind being run: deleting',
      { state: 'delete', operation: 'unbind', description: 'Deleting the binding' },
      ['False', 'True', 'False', 'Deleting', 'Deleting the binding'],
    ],
    [
      'an unbind that failed: stalled',
      { state: 'failed', operation: 'unbind', description: 'no answer' },
      ['False', 'False', 'True', 'UnbindFailed', 'no answer'],
    ],
    [
      'queued (the original’s state): reconciling',
      { state: 'in_queue', operation: 'provision', description: null },
      ['False', 'True', 'False', 'Provisioning', 'The operation is in progress'],
    ],
  ])('%s', (_name, status, expected) => {
    const facts = recordConditionFacts(status);
    expect(facts.map((f) => f.type)).toEqual(['Ready', 'Reconciling', 'Stalled']);
    // One reason and message for all three.
    expect(new Set(facts.map((f) => `${f.reason}/${f.message}`)).size).toBe(1);
    expect(asKstatus(facts)).toEqual(expected);
  });
});

describe('clusterConditionFacts: the conditions of an SFCluster by its phase and last probe', () => {
  const answers: ClusterProbeSummary = { answered: true, message: 'apiserver v1.31.0 answers' };
  const refused: ClusterProbeSummary = { answered: false, message: 'connect ECONNREFUSED' };
  const never: ClusterProbeSummary = { answered: undefined, message: 'not probed yet' };
  test.each<[string, ClusterPhase, ClusterProbeSummary, Kstatus]>([
    [
      'running and answering: ready',
      'running',
      answers,
      ['True', 'False', 'False', 'Reachable', 'apiserver v1.31.0 answers'],
    ],
    [
      'running, the last probe unanswered: not ready, neither reconciling nor stalled',
      'running',
      refused,
      ['False', 'False', 'False', 'Unreachable', 'connect ECONNREFUSED'],
    ],
    [
      'pending, never probed: reconciling, readiness unknown',
      'pending',
      never,
      ['Unknown', 'True', 'False', 'NotProbed', 'not probed yet'],
    ],
    [
      'pending, unanswered: reconciling, not ready',
      'pending',
      refused,
      ['False', 'True', 'False', 'Unreachable', 'connect ECONNREFUSED'],
    ],
    [
      'offline: stalled, not ready, with why',
      'offline',
      refused,
      ['False', 'False', 'True', 'Unreachable', 'connect ECONNREFUSED'],
    ],
    [
      'terminated: reconciling, not ready, terminating',
      'terminated',
      answers,
      ['False', 'True', 'False', 'Terminating', 'the cluster is being removed: no instance is placed on it'],
    ],
  ])('%s', (_name, phase, probe, expected) => {
    expect(asKstatus(clusterConditionFacts(phase, probe))).toEqual(expected);
  });
});

describe('clusterRemovalMessage: what a cluster being removed says of the instances still there', () => {
  test.each<[number, string]>([
    [0, 'the cluster is being removed: no instance is placed on it'],
    [
      1,
      'the cluster is being removed, but 1 instance is still placed on it: it is drained off the cluster where its plan allows a move, else deprovision it; the SFCluster stays until none is left',
    ],
    [
      4,
      'the cluster is being removed, but 4 instances are still placed on it: they are drained off the cluster where their plan allows a move, else deprovision them; the SFCluster stays until none is left',
    ],
  ])('GIVEN %i instances THEN %s', (instances, expected) => {
    expect(clusterRemovalMessage(instances)).toBe(expected);
    // The conditions of a terminated cluster say the same.
    const facts = clusterConditionFacts('terminated', { answered: true, message: 'x' }, instances);
    expect(new Set(facts.map((f) => f.message))).toEqual(new Set([expected]));
  });
});

describe('nextConditions: transition times and the generation', () => {
  const previous: Condition[] = [
    { type: 'Ready', status: 'False', reason: 'Provisioning', message: 'a', lastTransitionTime: EARLIER },
    { type: 'Schedulable', status: 'True', reason: 'Other', message: 'kept', lastTransitionTime: EARLIER },
    { type: 'Stalled', status: 'False', reason: 'Provisioning', message: 'a', lastTransitionTime: EARLIER },
  ];
  const facts: ConditionFacts[] = [
    { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'b' },
    { type: 'Reconciling', status: 'False', reason: 'Provisioned', message: 'b' },
    { type: 'Stalled', status: 'False', reason: 'Provisioned', message: 'b' },
  ];

  test('a changed status moves its time, a kept one keeps it; other types stay, new ones come last', () => {
    expect(nextConditions(previous, facts, { generation: 3, now })).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Provisioned',
        message: 'b',
        lastTransitionTime: now,
        observedGeneration: 3,
      },
      previous[1],
      {
        type: 'Stalled',
        status: 'False',
        reason: 'Provisioned',
        message: 'b',
        lastTransitionTime: EARLIER,
        observedGeneration: 3,
      },
      {
        type: 'Reconciling',
        status: 'False',
        reason: 'Provisioned',
        message: 'b',
        lastTransitionTime: now,
        observedGeneration: 3,
      },
    ]);
  });

  test('without a generation, none is said', () => {
    const [ready] = nextConditions(undefined, facts, { now });
    expect(ready).toEqual({
      type: 'Ready',
      status: 'True',
      reason: 'Provisioned',
      message: 'b',
      lastTransitionTime: now,
    });
  });

  test('a message longer than a condition holds is cut to the limit', () => {
    const long = {
      type: 'Stalled',
      status: 'True' as const,
      reason: 'ProvisionFailed',
      message: 'x'.repeat(40_000),
    };
    const [stalled] = nextConditions(undefined, [long], { now });
    expect(stalled!.message).toHaveLength(CONDITION_MESSAGE_LIMIT);
    expect(stalled!.message.endsWith('…')).toBe(true);
  });

  test('written again with the same status, nothing changes', () => {
    const first = nextConditions(undefined, facts, { generation: 1, now: EARLIER });
    expect(nextConditions(first, facts, { generation: 1, now })).toEqual(first);
  });
});

describe('recordStatusConditions: what a record status writer adds to its patch', () => {
  test('GIVEN a record at generation 2 ready since earlier WHEN an update starts THEN Ready turns False now, at generation 2', () => {
    const record = {
      metadata: { generation: 2 },
      status: {
        conditions: recordStatusConditions(
          { metadata: { generation: 1 } },
          { state: 'succeeded', operation: 'provision', description: 'done' },
          new Date(EARLIER),
        ).conditions,
      },
    };
    const written = recordStatusConditions(
      record,
      { state: 'in progress', operation: 'update', description: 'Updating the instance' },
      NOW,
    );
    expect(written.observedGeneration).toBe(2);
    expect(written.conditions).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status: 'False',
        lastTransitionTime: now,
        observedGeneration: 2,
      }),
      expect.objectContaining({
        type: 'Reconciling',
        status: 'True',
        lastTransitionTime: now,
        reason: 'Updating',
      }),
      expect.objectContaining({ type: 'Stalled', status: 'False', lastTransitionTime: EARLIER }),
    ]);
  });

  test('a record without a generation gets no observedGeneration', () => {
    const written = recordStatusConditions({ metadata: {} }, { state: 'succeeded', operation: 'bind' }, NOW);
    expect(written).not.toHaveProperty('observedGeneration');
    expect(written.conditions[0]).toEqual(
      expect.objectContaining({ type: 'Ready', status: 'True', reason: 'Bound' }),
    );
  });
});
