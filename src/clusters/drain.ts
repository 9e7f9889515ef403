/**
 * What a cluster's `Drained` condition says while a drain moves the instances off it, and after:
 * from the drain's progress and the instances still placed on the cluster.
 *
 * Pure: no I/O, safe to import from workflows.
 */
import type { ConditionFacts } from '../resources/conditions.js';
import { CLUSTER_CONDITIONS } from '../resources/types.js';

/** The reasons of the `Drained` condition. */
export const DRAINED_REASONS = {
  drained: 'Drained',
  draining: 'Draining',
  blocked: 'Blocked',
  aborted: 'Aborted',
  halted: 'Halted',
} as const;

/** What the condition reads of a drain's progress (the admin contract's `RolloutProgress`). */
export interface DrainCounts {
  /** The drain's state: `blocked`, `aborted`, `halted`, or one it moves instances in. */
  readonly state: string;
  readonly done: number;
  readonly failed: number;
  readonly inFlight: number;
  readonly unmovable?: number;
}

const instances = (n: number): string => `${n} instance${n === 1 ? '' : 's'}`;

/**
 * The `Drained` condition of the cluster a drain stands on as `progress` says, with `left`
 * instance records still placed on the cluster (any, those being deleted among them): True once
 * none is left; else False with the counts, and the reason the drain's state gives.
 */
export function drainedCondition(progress: DrainCounts, left: number): ConditionFacts {
  if (left === 0)
    return {
      type: CLUSTER_CONDITIONS.drained,
      status: 'True',
      reason: DRAINED_REASONS.drained,
      message: `No instance is left on the cluster (${instances(progress.done)} moved off it).`,
    };
  const unmovable = progress.unmovable ?? 0;
  const counts = [
    `${instances(left)} left on the cluster`,
    `${progress.done} moved`,
    ...(progress.inFlight > 0 ? [`${progress.inFlight} moving`] : []),
    ...(unmovable > 0 ? [`${unmovable} cannot move (their plan says so)`] : []),
    ...(progress.failed > 0 ? [`${progress.failed} failed to move`] : []),
  ].join(', ');
  switch (progress.state) {
    case 'blocked':
    case 'done':
      return {
        type: CLUSTER_CONDITIONS.drained,
        status: 'False',
        reason: DRAINED_REASONS.blocked,
        message: `The drain ended with instances it could not move: ${counts}.`,
      };
    case 'aborted':
      return {
        type: CLUSTER_CONDITIONS.drained,
        status: 'False',
        reason: DRAINED_REASONS.aborted,
        message: `The drain was aborted: ${counts}.`,
      };
    case 'halted':
      return {
        type: CLUSTER_CONDITIONS.drained,
        status: 'False',
        reason: DRAINED_REASONS.halted,
        message: `The drain halted (more moves failed than it tolerates; resume or abort it): ${counts}.`,
      };
    default:
      return {
        type: CLUSTER_CONDITIONS.drained,
        status: 'False',
        reason: DRAINED_REASONS.draining,
        message: `Moving the instances off the cluster: ${counts}.`,
      };
  }
}
