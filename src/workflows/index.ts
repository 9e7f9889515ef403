/**
 * The workflows the worker registers: one per OSB operation, the custom actions, the cluster
 * health, the plan rollouts, the dry runs of plan changes, the rotations of generated secrets and
 * the moves of instances between clusters.
 */
export { provisionWorkflow, updateWorkflow, deprovisionWorkflow } from './instance.js';
export { bindWorkflow, unbindWorkflow } from './binding.js';
export { clusterHealthWorkflow } from './cluster-health.js';
export { rolloutWorkflow } from './rollout.js';
export { planDryRunWorkflow } from './dry-run.js';
export { actionWorkflow } from './action.js';
export { secretRotationWorkflow, secretRotationScheduleWorkflow } from './secret-rotation.js';
export { moveWorkflow } from './move.js';
