/**
 * What the workers still owe a plan, read from the plan alone: its revision recorded (when its spec
 * changed), and the rollout of that revision started (when the plan has `autoUpdateInstances` and
 * its `status.rolledOutRevision` is not that revision). Level-based: whatever was done or missed
 * before (a worker that stopped between recording a revision and starting its rollout, a start that
 * failed), the plan as it is says what is left. Pure: plan-rollouts.ts does the I/O.
 */
import { planRevision } from '../resources/names.js';
import type { SFPlan, SFPlanStatus } from '../resources/types.js';

export interface PlanRevisionWork {
  /** Status fields to write first: the new revision; with a plan's first, also as rolled out. */
  readonly record?: Pick<SFPlanStatus, 'specHash' | 'rolledOutRevision'>;
  /** The revision whose rollout is to be started (then written as `status.rolledOutRevision`). */
  readonly rollout?: string;
  /**
   * The plan's status tells no rollout at all (written before the workers kept
   * `rolledOutRevision`): a rollout of the revision may have run already, perhaps aborted by an
   * admin, so the plan's rollout workflow is asked first.
   */
  readonly askRolloutFirst?: true;
}

/** What is left to do for `plan`; nothing for a plan being deleted. */
export function planRevisionWork(plan: SFPlan): PlanRevisionWork {
  if (plan.metadata.deletionTimestamp) return {};
  const revision = planRevision(plan.spec);
  const recorded = plan.status?.specHash;
  // A plan's first revision: its instances are all provisioned at it, nothing to roll out.
  if (!recorded) return { record: { specHash: revision, rolledOutRevision: revision } };
  const record = recorded === revision ? {} : { record: { specHash: revision } };
  const rolledOut = plan.status?.rolledOutRevision;
  if (!plan.spec.autoUpdateInstances || rolledOut === revision) return record;
  return {
    ...record,
    rollout: revision,
    ...(rolledOut === undefined && recorded === revision ? { askRolloutFirst: true as const } : {}),
  };
}
