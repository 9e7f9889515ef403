/**
 * The decisions of a cluster's drain, which is a rollout whose instances are those placed on the
 * cluster and whose step is their move: its progress, the instances it lists as unmovable, what it
 * takes again, how it ends, and what a refused command says.
 */
import type { RolloutRequest, RolloutSettings } from '../../../src/admin/contract.js';
import { rolloutWorkflowIdOf } from '../../../src/admin/contract.js';
import {
  FINAL_STATES,
  endState,
  freshProgress,
  initialRollout,
  nextBatch,
  refusal,
  seen,
  settledInstances,
  targeted,
  withBehind,
  withResult,
  withUnmovable,
  type Rollout,
} from '../../../src/workflows/rollout-plan.js';
import { rolloutSearchAttributes } from '../../../src/workflows/search-attributes.js';

const SETTINGS: RolloutSettings = { canary: 0, maxConcurrency: 1, soakSeconds: 0, maxFailures: 1 };
const DRAIN: RolloutRequest = {
  revision: 'sister-1',
  drain: { clusterId: 'sister-1' },
  requestedBy: 'alice',
};

/** A drain of sister-1 with SETTINGS, its target read. */
const drainOf = (): Rollout =>
  targeted(initialRollout(DRAIN), DRAIN, { revision: 'sister-1', settings: SETTINGS });

describe('the drain of a cluster', () => {
  test('GIVEN a drain request WHEN its progress starts THEN it names the cluster, no plan, and counts no unmovable instance', () => {
    const progress = freshProgress(DRAIN, SETTINGS);
    expect(progress.drain).toEqual({ clusterId: 'sister-1' });
    expect('planId' in progress).toBe(false);
    expect(drainOf().progress).toMatchObject({ state: 'waves', wave: 1, total: 0, done: 0 });
  });

  test('GIVEN instances whose plan says they do not move WHEN the drain lists them THEN each is unmovable with why, once, and counted', () => {
    let drain = withUnmovable(drainOf(), { u1: 'plan fixed says its instances cannot move' });
    drain = withBehind(drain, 2);
    expect(drain.progress.results).toEqual({
      u1: { state: 'unmovable', description: 'plan fixed says its instances cannot move' },
    });
    expect(drain.progress).toMatchObject({ unmovable: 1, total: 3, done: 0, failed: 0 });
    // listed again (it never is: it is settled) it changes nothing
    expect(withUnmovable(drain, { u1: 'another reason' })).toBe(drain);
    expect(settledInstances(drain)).toEqual(['u1']);
  });

  test('GIVEN moves that ended WHEN the drain counts them THEN moved ones are done and not taken again; failed ones neither', () => {
    let drain = withBehind(drainOf(), 3);
    drain = withResult(drain, 'm1', { state: 'moved' });
    drain = withResult(drain, 'f1', { state: 'failed', description: 'The move failed' });
    expect(drain.progress).toMatchObject({ done: 1, failed: 1, unmovable: 0, total: 3 });
    expect(settledInstances(drain).sort()).toEqual(['f1', 'm1']);
    expect(nextBatch(drain, ['i3'])).toEqual({ kind: 'window', instanceIds: ['i3'], concurrency: 1 });
  });

  test.each([
    ['every instance moved', { m1: { state: 'moved' } }, 'done'],
    ['an unmovable instance left', { m1: { state: 'moved' }, u1: { state: 'unmovable' } }, 'blocked'],
    ['a failed move left', { f1: { state: 'failed' } }, 'blocked'],
  ] as const)('GIVEN %s WHEN no instance is behind THEN the drain ends %s', (_, results, state) => {
    let drain = drainOf();
    for (const [id, result] of Object.entries(results)) drain = withResult(drain, id, result);
    expect(endState(drain)).toBe(state);
    expect(FINAL_STATES.has(state)).toBe(true);
  });

  test('GIVEN a plan rollout with a failed update WHEN it ends THEN it is done, as before', () => {
    const request: RolloutRequest = { planId: 'p1', revision: 'r1', requestedBy: 'plan change' };
    let rollout = targeted(initialRollout(request), request, { revision: 'r1', settings: SETTINGS });
    rollout = withResult(rollout, 'i1', { state: 'failed' });
    expect(endState(rollout)).toBe('done');
    expect('unmovable' in rollout.progress).toBe(false);
  });

  test('GIVEN a blocked drain WHEN an admin pauses or resumes it THEN it is refused with what to do', () => {
    const blocked = seen({ ...drainOf(), progress: { ...drainOf().progress, state: 'blocked' } });
    expect(refusal('pause', blocked)).toBe(
      'The drain of cluster sister-1 ended blocked (instances it could not move are left on the cluster); there is nothing to pause: drain the cluster again once they are dealt with.',
    );
    expect(refusal('resume', { ...blocked, state: 'paused' })).toBeUndefined();
    expect(refusal('resume', { ...blocked, state: 'waves' })).toBe(
      'The drain of cluster sister-1 is not paused (it is waves).',
    );
  });

  test('GIVEN a drain request THEN its workflow id is among the rollouts, and Temporal lists it as a drain of its cluster', () => {
    expect(rolloutWorkflowIdOf('ns', DRAIN)).toBe('rollout/ns/drain/sister-1');
    expect(rolloutSearchAttributes(DRAIN).map((p) => [p.key.name, p.value])).toEqual([
      ['OsbOperation', 'drain'],
      ['OsbClusterId', 'sister-1'],
    ]);
  });
});
