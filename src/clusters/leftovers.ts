/**
 * What a cluster that comes back still holds of instances that left it while it was lost: a copy
 * of an instance's record there whose master record is gone, or names another cluster, with no
 * move of the instance in flight (a move's target holds a copy before the switch names it).
 *
 * Pure.
 */
import { MOVE_OPERATION } from '../resources/migration.js';

/** What the decision reads of the master's record of an instance. */
export interface RecordedPlacement {
  readonly spec: { readonly clusterId?: string };
  readonly status?: { readonly lastAction?: { readonly operation?: string; readonly state?: string } };
}

/** Whether the copy on `clusterId` of an instance whose master record is `record` is left over there. */
export function isLeftover(clusterId: string, record: RecordedPlacement | undefined): boolean {
  if (!record) return true;
  const moving =
    record.status?.lastAction?.operation === MOVE_OPERATION &&
    record.status.lastAction.state === 'in progress';
  return !moving && record.spec.clusterId !== undefined && record.spec.clusterId !== clusterId;
}
