/**
 * All activities of the operation workflows, built from their dependencies. Workflows import the
 * type only: `proxyActivities<Activities>()`.
 */
import type { ActivityDeps } from './deps.js';
import { landscapeSideActivities } from './cluster-steps.js';
import { moveActivities } from './moves.js';
import { placementActivities } from './placement.js';
import { recordActivities } from './records.js';
import { resourceActivities } from './resources.js';
import { secretRotationActivities } from './secret-rotation.js';

export function createActivities(deps: ActivityDeps) {
  return {
    ...recordActivities(deps),
    ...placementActivities(deps),
    ...resourceActivities(deps),
    ...secretRotationActivities(deps),
    ...moveActivities(deps),
    ...landscapeSideActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ActivityDeps } from './deps.js';
export { clusterActivities, type ClusterActivities } from './clusters.js';
export { rolloutActivities, type RolloutActivities } from './rollouts.js';
export { drainActivities, type DrainActivities } from './drains.js';
export { dryRunActivities } from './dry-run.js';
export { clusterSideActivities } from './cluster-steps.js';
export { evacuationActivities, type EvacuationActivities } from './evacuation.js';
export { leftoverActivities, type LeftoverActivities } from './leftovers.js';
export { rotationScheduleActivities, type RotationScheduleActivities } from './secret-rotation.js';
