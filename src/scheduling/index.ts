/**
 * Placement: pure schedulers over snapshots of the registered clusters, built from plugins as the
 * Kubernetes scheduler framework builds them. No I/O and no Node builtins: workflows may import it.
 */
export * from './types.js';
export {
  compareClusterIds,
  runScheduler,
  SUMMARY_CLUSTERS,
  type EnabledPlugin,
  type Scheduler,
} from './framework.js';
export {
  formatLabelSelector,
  LabelSelectorError,
  matchesLabels,
  parseLabelSelector,
  requirementMismatch,
  selectorMismatch,
  type LabelSelector,
  type Operator,
  type Requirement,
} from './label-selector.js';
export {
  buildScheduler,
  isSchedulerName,
  parsePlanSchedulers,
  parseSchedulerName,
  PLUGINS,
  schedule,
  SCHEDULER_NAMES,
  SchedulerConfigError,
  schedulerForPlan,
  SCHEDULERS,
  type PluginConfig,
  type PluginFactory,
  type PluginOptions,
  type ScheduleInput,
  type SchedulerConfig,
  type SchedulerName,
  type SchedulingConfig,
} from './registry.js';
export { freeCapacity, shortfall } from './plugins/resource-aware.js';
export { clusterSnapshot } from './snapshot.js';
export { decideMove, moveScheduler, type MoveInput } from './moves.js';
