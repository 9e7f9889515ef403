/** Cluster snapshots for scheduling tests: a running, uncordoned, empty cluster unless told otherwise. */
import type { ClusterSnapshot } from '../../../src/scheduling/types.js';

export function cluster(id: string, fields: Partial<Omit<ClusterSnapshot, 'id'>> = {}): ClusterSnapshot {
  return {
    id,
    labels: {},
    phase: 'running',
    schedulingDisabled: false,
    capacity: {},
    allocatable: {},
    requests: {},
    reserved: {},
    instances: 0,
    ...fields,
  };
}

/** The request of an instance of plan `small`. */
export const request = { instanceId: 'i-1', planId: 'small' };
