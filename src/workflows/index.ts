/** The workflows the worker registers: one per OSB operation. */
export { provisionWorkflow, updateWorkflow, deprovisionWorkflow } from './instance.js';
export { bindWorkflow, unbindWorkflow } from './binding.js';
export { clusterHealthWorkflow } from './cluster-health.js';
