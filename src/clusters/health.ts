/**
 * A cluster's health as a state machine: from the status written last, what one probe found and
 * the time, the next status. The phase moves pending -> running on the first answer, running ->
 * offline once the apiserver has not answered for the offline threshold, offline -> running on the
 * next answer, and any phase -> terminated when the SFCluster is being deleted.
 *
 * Pure: the caller probes and passes `now`, so a workflow can run it.
 */
import {
  CLUSTER_CONDITIONS,
  type ClusterCondition,
  type ClusterPhase,
  type SFCluster,
  type SFClusterStatus,
} from '../resources/types.js';
import {
  clusterResources,
  type CapacityInput,
  type ClusterResources,
  type InstanceNamespaces,
} from './capacity.js';

/** What one probe of a cluster found. */
export type ProbeResult =
  | {
      readonly ok: true;
      /** The apiserver's version (`gitVersion`). */
      readonly version: string;
      /** Nodes and pods read from the cluster, for its capacity and requests. */
      readonly nodes?: CapacityInput['nodes'];
      readonly pods?: CapacityInput['pods'];
    }
  | {
      readonly ok: false;
      /** Why the cluster did not answer, for people. */
      readonly error: string;
    };

/** What the next status is computed from. */
export interface HealthInput {
  /** The SFCluster as read: its spec, its deletion timestamp and the status written last. */
  readonly cluster: Pick<SFCluster, 'metadata' | 'spec' | 'status'>;
  /** What the probe found; absent when the cluster was not probed. */
  readonly probe?: ProbeResult;
  /** When the probe ran. */
  readonly now: Date;
  /** How long a cluster may stay unreachable before it is offline, in milliseconds. */
  readonly offlineAfterMs: number;
  /** Instances placed on the cluster; the previous count is kept when absent. */
  readonly instances?: number;
  /** Where instances keep their pods, which their reservations book: left out of the requests. */
  readonly instanceNamespaces?: InstanceNamespaces;
}

/**
 * The fields of `SFCluster.status` the health probe owns. Reservations (`status.reserved`) are not
 * among them: writing this as a merge patch leaves them untouched.
 */
export type HealthStatus = Required<Pick<SFClusterStatus, 'phase' | 'conditions' | 'serviceInstanceCount'>> &
  Pick<SFClusterStatus, 'version' | 'capacity' | 'allocatable' | 'requests' | 'lastProbeTime'>;

type ConditionStatus = ClusterCondition['status'];

/** A condition at `now`: its transition time moves only when its status changes. */
function condition(
  previous: ClusterCondition | undefined,
  type: string,
  status: ConditionStatus,
  reason: string,
  message: string,
  now: string,
  probed: boolean,
): ClusterCondition {
  const lastTransitionTime =
    previous && previous.status === status && previous.lastTransitionTime ? previous.lastTransitionTime : now;
  const lastProbeTime = probed ? now : previous?.lastProbeTime;
  return {
    type,
    status,
    ...(lastProbeTime ? { lastProbeTime } : {}),
    lastTransitionTime,
    reason,
    message,
  };
}

const findCondition = (status: SFClusterStatus | undefined, type: string) =>
  status?.conditions?.find((c) => c.type === type);

/** Whether the cluster is cordoned: `spec.schedulingDisabled` or `spec.unschedulable`. */
export function isCordoned(cluster: Pick<SFCluster, 'spec'>): boolean {
  return Boolean(cluster.spec.schedulingDisabled || cluster.spec.unschedulable);
}

/** The next health status of a cluster. See the module comment for the phases. */
export function nextClusterStatus(input: HealthInput): HealthStatus {
  const { cluster, probe, offlineAfterMs } = input;
  const now = input.now.toISOString();
  const previous = cluster.status;
  const previousReady = findCondition(previous, CLUSTER_CONDITIONS.ready);

  const ready = !probe
    ? previousReady
      ? { ...previousReady }
      : condition(undefined, CLUSTER_CONDITIONS.ready, 'Unknown', 'NotProbed', 'not probed yet', now, false)
    : probe.ok
      ? condition(
          previousReady,
          CLUSTER_CONDITIONS.ready,
          'True',
          'Reachable',
          `apiserver ${probe.version} answers`,
          now,
          true,
        )
      : condition(previousReady, CLUSTER_CONDITIONS.ready, 'False', 'Unreachable', probe.error, now, true);

  const phase = nextPhase(cluster, previous?.phase, probe, ready, input.now, offlineAfterMs);

  let resources: ClusterResources | undefined;
  let invalidCapacity: string | undefined;
  if (probe?.ok) {
    try {
      resources = clusterResources({
        totalCapacity: cluster.spec.totalCapacity,
        nodes: probe.nodes,
        pods: probe.pods,
        ...(input.instanceNamespaces ? { instanceNamespaces: input.instanceNamespaces } : {}),
      });
    } catch (err) {
      invalidCapacity = err instanceof Error ? err.message : String(err);
    }
  }

  const [schedulable, reason, message] = schedulability(phase, isCordoned(cluster), invalidCapacity);
  const schedulableCondition = condition(
    findCondition(previous, CLUSTER_CONDITIONS.schedulable),
    CLUSTER_CONDITIONS.schedulable,
    schedulable ? 'True' : 'False',
    reason,
    message,
    now,
    probe !== undefined,
  );

  const version = probe?.ok ? probe.version : previous?.version;
  const capacity = resources?.capacity ?? previous?.capacity;
  const allocatable = resources?.allocatable ?? previous?.allocatable;
  const requests = resources?.requests ?? previous?.requests;
  const lastProbeTime = probe ? now : previous?.lastProbeTime;
  return {
    phase,
    conditions: [ready, schedulableCondition],
    ...(version !== undefined ? { version } : {}),
    ...(capacity !== undefined ? { capacity } : {}),
    ...(allocatable !== undefined ? { allocatable } : {}),
    ...(requests !== undefined ? { requests } : {}),
    serviceInstanceCount: input.instances ?? previous?.serviceInstanceCount ?? 0,
    ...(lastProbeTime !== undefined ? { lastProbeTime } : {}),
  };
}

function nextPhase(
  cluster: HealthInput['cluster'],
  previous: ClusterPhase | undefined,
  probe: ProbeResult | undefined,
  ready: ClusterCondition,
  now: Date,
  offlineAfterMs: number,
): ClusterPhase {
  if (cluster.metadata.deletionTimestamp) return 'terminated';
  // Without a deletion, a terminated phase is stale (written by another writer); probe afresh.
  const from = previous === 'terminated' ? undefined : previous;
  if (!probe) return from ?? 'pending';
  if (probe.ok) return 'running';
  const since = Date.parse(ready.lastTransitionTime ?? '');
  const unreachableFor = Number.isNaN(since) ? 0 : now.getTime() - since;
  if (unreachableFor >= offlineAfterMs) return 'offline';
  return from ?? 'pending';
}

/** Whether new instances may go to the cluster, with the condition's reason and message. */
function schedulability(
  phase: ClusterPhase,
  cordoned: boolean,
  invalidCapacity: string | undefined,
): [boolean, string, string] {
  if (phase === 'terminated') return [false, 'Terminating', 'the cluster is being removed'];
  if (phase === 'offline') return [false, 'Offline', 'the cluster is unreachable'];
  if (phase === 'pending') return [false, 'NotProbed', 'the cluster has not answered a probe yet'];
  if (cordoned) return [false, 'SchedulingDisabled', 'the cluster is cordoned'];
  if (invalidCapacity) return [false, 'InvalidCapacity', invalidCapacity];
  return [true, 'Schedulable', 'new instances may be placed on the cluster'];
}
