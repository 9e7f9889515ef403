/**
 * The mark of a value to be encrypted with a cluster's payload key: what a workflow gives as an
 * argument of a step sent to the worker of a cluster with a worker of its own
 * (cluster-workers.ts), and the payload converter recognises (temporal/payload-converter.ts).
 * It imports nothing, so the converter loads it outside the workflow sandbox too.
 */

const FOR_CLUSTER = Symbol.for('interoperator.for-cluster');

/** A value to be encrypted with a cluster's key. */
export interface ForCluster {
  readonly [FOR_CLUSTER]: string;
  readonly value: unknown;
}

/** Marks a value to be encrypted with the key of cluster `clusterId`. */
export const forCluster = (clusterId: string, value: unknown): ForCluster => ({
  [FOR_CLUSTER]: clusterId,
  value,
});

/** The cluster a value is marked for, or undefined when it is not marked. */
export function clusterOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const clusterId = (value as Partial<ForCluster>)[FOR_CLUSTER];
  return typeof clusterId === 'string' ? clusterId : undefined;
}
