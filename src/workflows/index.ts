/** The workflows the worker registers: one per OSB operation, the cluster health and the plan rollouts. */
export { provisionWorkflow, updateWorkflow, deprovisionWorkflow } from './instance.js';
export { bindWorkflow, unbindWorkflow } from './binding.js';
export { clusterHealthWorkflow } from './cluster-health.js';
export { rolloutWorkflow } from './rollout.js';
