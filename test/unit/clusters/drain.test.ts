import { drainedCondition } from '../../../src/clusters/drain.js';

const counts = { state: 'waves', done: 1, failed: 0, inFlight: 1, unmovable: 0 };

describe('the Drained condition of a cluster', () => {
  test('GIVEN no instance left on the cluster THEN it is True', () => {
    expect(drainedCondition({ ...counts, state: 'done', inFlight: 0, done: 2 }, 0)).toEqual({
      type: 'Drained',
      status: 'True',
      reason: 'Drained',
      message: 'No instance is left on the cluster (2 instances moved off it).',
    });
  });

  test.each([
    [
      'waves',
      3,
      counts,
      'Draining',
      'Moving the instances off the cluster: 3 instances left on the cluster, 1 moved, 1 moving.',
    ],
    [
      'blocked',
      1,
      { ...counts, state: 'blocked', done: 2, inFlight: 0, unmovable: 1 },
      'Blocked',
      'The drain ended with instances it could not move: 1 instance left on the cluster, 2 moved, 1 cannot move (their plan says so).',
    ],
    [
      'aborted',
      2,
      { ...counts, state: 'aborted', inFlight: 0, failed: 1 },
      'Aborted',
      'The drain was aborted: 2 instances left on the cluster, 1 moved, 1 failed to move.',
    ],
    [
      'halted',
      2,
      { ...counts, state: 'halted', inFlight: 0, failed: 1 },
      'Halted',
      'The drain halted (more moves failed than it tolerates; resume or abort it): 2 instances left on the cluster, 1 moved, 1 failed to move.',
    ],
  ])(
    'GIVEN a drain %s with %i left THEN it is False, reason %s, with the counts',
    (_, left, progress, reason, message) => {
      expect(drainedCondition(progress, left)).toEqual({ type: 'Drained', status: 'False', reason, message });
    },
  );
});
