/** What a scheduler sees of an SFCluster. */
import { isCordoned } from '../clusters/health.js';
import { crdsMissing } from '../clusters/onboarding.js';
import type { ResourceList, ResourceListInput } from '../clusters/quantity.js';
import { reservedTotal } from '../clusters/reservations.js';
import type { SFCluster } from '../resources/types.js';
import type { ClusterSnapshot } from './types.js';

function stringList(list: ResourceListInput | undefined): ResourceList {
  const out: Record<string, string> = {};
  for (const [resource, value] of Object.entries(list ?? {})) out[resource] = String(value);
  return out;
}

/**
 * The snapshot of an SFCluster: its labels (metadata labels, then `spec.labels` over them); phase
 * `terminated` once it is being deleted, `pending` before its first probe; cordoned by
 * `spec.schedulingDisabled` or `spec.unschedulable`; without our CRDs when its `CrdsInstalled`
 * condition is False; capacity and allocatable as declared in
 * `spec.totalCapacity`, else from its status; requests and reservations from its status.
 * Never throws: a reservation that cannot be read becomes the snapshot's `problem`.
 */
export function clusterSnapshot(cluster: SFCluster): ClusterSnapshot {
  const status = cluster.status ?? {};
  const declared =
    cluster.spec.totalCapacity && Object.keys(cluster.spec.totalCapacity).length > 0
      ? stringList(cluster.spec.totalCapacity)
      : undefined;
  let reserved: ResourceList = {};
  let problem: string | undefined;
  try {
    reserved = reservedTotal(status.reserved);
  } catch (err) {
    problem = err instanceof Error ? err.message : String(err);
  }
  const withoutCrds = crdsMissing(cluster);
  return {
    id: cluster.metadata.name,
    labels: { ...cluster.metadata.labels, ...cluster.spec.labels },
    phase: cluster.metadata.deletionTimestamp ? 'terminated' : (status.phase ?? 'pending'),
    schedulingDisabled: isCordoned(cluster),
    capacity: declared ?? stringList(status.capacity),
    allocatable: declared ?? stringList(status.allocatable),
    requests: stringList(status.requests),
    reserved,
    instances: status.serviceInstanceCount ?? 0,
    ...(cluster.spec.schedulingLimitPercentage !== undefined
      ? { schedulingLimitPercentage: cluster.spec.schedulingLimitPercentage }
      : {}),
    ...(withoutCrds ? { withoutCrds } : {}),
    ...(problem ? { problem } : {}),
  };
}
