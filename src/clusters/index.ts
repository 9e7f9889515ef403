/**
 * The registered clusters' health and resources, as pure functions: the phase state machine,
 * capacity and requests from nodes and pods, reservations, onboarding a sister, and Kubernetes quantities. No I/O and
 * no Node builtins: workflows may import it.
 */
export * from './quantity.js';
export * from './capacity.js';
export * from './health.js';
export * from './reservations.js';
export * from './onboarding.js';
export * from './leftovers.js';
export * from './offboarding.js';
