/**
 * A cluster's health as a state machine: from the status written last, what one probe found and
 * the time, the next status. The phase moves pending -> running on the first answer, running ->
 * offline once the apiserver has not answered for the offline threshold, offline -> running once
 * it has answered every probe for the stabilization window (a cluster that comes and goes is not
 * scheduled onto at each return), and any phase -> terminated when the SFCluster is being deleted.
 *
 * Pure: the caller probes and passes `now`, so a workflow can run it.
 */
import {
  clusterConditionFacts,
  clusterRemovalMessage,
  nextConditions,
  type ConditionFacts,
} from '../resources/conditions.js';
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
import { crdsMissing } from './onboarding.js';
import { parseQuantity } from './quantity.js';

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
      /**
       * When the question that got no answer was asked, when that was before the probe's result is
       * recorded (a cluster's own worker, waited for until its step's timeout): the cluster has not
       * answered since then. @default the time of the record
       */
      readonly askedAt?: string;
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
  /**
   * How long an offline cluster must answer every probe before it is running again, in
   * milliseconds. @default 0 (at its first answer)
   */
  readonly stabilizeAfterMs?: number;
  /** Instances placed on the cluster; the previous count is kept when absent. */
  readonly instances?: number;
  /** Where instances keep their pods, which their reservations book: left out of the requests. */
  readonly instanceNamespaces?: InstanceNamespaces;
  /**
   * The `CrdsInstalled` condition of this probe's onboarding (src/clusters/onboarding.ts); absent
   * when the cluster was not onboarded now (the master, no answer), and then the one written last
   * is kept.
   */
  readonly crds?: ConditionFacts;
}

/**
 * The fields of `SFCluster.status` the health probe owns. Reservations (`status.reserved`) are not
 * among them: writing this as a merge patch leaves them untouched.
 */
export type HealthStatus = Required<Pick<SFClusterStatus, 'phase' | 'conditions' | 'serviceInstanceCount'>> &
  Pick<
    SFClusterStatus,
    'observedGeneration' | 'version' | 'capacity' | 'allocatable' | 'requests' | 'lastProbeTime'
  > &
  Pick<SFClusterStatus, 'answeringSince'>;

const findCondition = (status: SFClusterStatus | undefined, type: string) =>
  status?.conditions?.find((c) => c.type === type);

/** Whether the cluster is cordoned: `spec.schedulingDisabled` or `spec.unschedulable`. */
export function isCordoned(cluster: Pick<SFCluster, 'spec'>): boolean {
  return Boolean(cluster.spec.schedulingDisabled || cluster.spec.unschedulable);
}

/** What the last probe found: this one's answer, else what the status written last says. */
function probeSummary(probe: ProbeResult | undefined, previous: SFClusterStatus | undefined) {
  if (probe)
    return { answered: probe.ok, message: probe.ok ? `apiserver ${probe.version} answers` : probe.error };
  const ready = findCondition(previous, CLUSTER_CONDITIONS.ready);
  // A terminated status without a deletion is stale: the cluster is probed afresh.
  const known =
    previous?.phase !== 'terminated' && (ready?.reason === 'Reachable' || ready?.reason === 'Unreachable');
  if (!ready || !known) return { answered: undefined, message: 'not probed yet' };
  return { answered: ready.status === 'True', message: ready.message ?? '' };
}

/** The next health status of a cluster. See the module comment for the phases. */
export function nextClusterStatus(input: HealthInput): HealthStatus {
  const { cluster, probe, offlineAfterMs } = input;
  const now = input.now.toISOString();
  const previous = cluster.status;
  const previousReady = findCondition(previous, CLUSTER_CONDITIONS.ready);

  // Since when the apiserver has not answered: when Ready last turned False, or this probe (asked).
  const unanswered =
    probe && !probe.ok
      ? previousReady?.status === 'False' && previousReady.lastTransitionTime
        ? previousReady.lastTransitionTime
        : (probe.askedAt ?? now)
      : undefined;
  // Since when the apiserver has answered every probe: kept while it answers, gone when it does not.
  const answeringSince = probe
    ? probe.ok
      ? (previous?.answeringSince ?? now)
      : null
    : previous?.answeringSince;
  const phase = nextPhase(cluster, previous?.phase, probe, unanswered, input.now, offlineAfterMs, {
    answeringSince: answeringSince ?? undefined,
    stabilizeAfterMs: input.stabilizeAfterMs ?? 0,
  });
  const stabilizing = phase === 'offline' && probe?.ok === true;

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

  const instances = input.instances ?? previous?.serviceInstanceCount ?? 0;
  const withoutCrds = input.crds
    ? input.crds.status === 'False'
      ? input.crds.message
      : undefined
    : crdsMissing(cluster);
  const [schedulable, reason, message] = schedulability(phase, isCordoned(cluster), {
    instances,
    ...(stabilizing && answeringSince
      ? { stabilizing: { since: answeringSince, windowMs: input.stabilizeAfterMs ?? 0 } }
      : {}),
    ...(invalidCapacity ? { invalidCapacity } : {}),
    ...(withoutCrds ? { withoutCrds } : {}),
  });
  const facts = [
    ...clusterConditionFacts(phase, probeSummary(probe, previous), instances),
    ...(input.crds ? [input.crds] : []),
    {
      type: CLUSTER_CONDITIONS.schedulable,
      status: schedulable ? ('True' as const) : ('False' as const),
      reason,
      message,
    },
  ];
  const generation = cluster.metadata.generation;
  const conditions = nextConditions(previous?.conditions, facts, { generation, now }).map(
    (c): ClusterCondition => {
      const lastProbeTime = probe ? now : findCondition(previous, c.type)?.lastProbeTime;
      const { type, status, ...rest } = c;
      return { type, status, ...(lastProbeTime ? { lastProbeTime } : {}), ...rest };
    },
  );

  const version = probe?.ok ? probe.version : previous?.version;
  const capacity = resources?.capacity ?? previous?.capacity;
  const allocatable = resources?.allocatable ?? previous?.allocatable;
  const requests = resources?.requests ?? previous?.requests;
  const lastProbeTime = probe ? now : previous?.lastProbeTime;
  return {
    phase,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
    ...(version !== undefined ? { version } : {}),
    ...(capacity !== undefined ? { capacity } : {}),
    ...(allocatable !== undefined ? { allocatable } : {}),
    ...(requests !== undefined ? { requests } : {}),
    serviceInstanceCount: instances,
    ...(lastProbeTime !== undefined ? { lastProbeTime } : {}),
    ...(answeringSince !== undefined ? { answeringSince } : {}),
  };
}

function nextPhase(
  cluster: HealthInput['cluster'],
  previous: ClusterPhase | undefined,
  probe: ProbeResult | undefined,
  unansweredSince: string | undefined,
  now: Date,
  offlineAfterMs: number,
  recovery: { readonly answeringSince?: string; readonly stabilizeAfterMs: number },
): ClusterPhase {
  if (cluster.metadata.deletionTimestamp) return 'terminated';
  // Without a deletion, a terminated phase is stale (written by another writer); probe afresh.
  const from = previous === 'terminated' ? undefined : previous;
  if (!probe) return from ?? 'pending';
  if (probe.ok) {
    if (from !== 'offline' || recovery.stabilizeAfterMs <= 0) return 'running';
    const answering = Date.parse(recovery.answeringSince ?? '');
    const answeredFor = Number.isNaN(answering) ? 0 : now.getTime() - answering;
    return answeredFor >= recovery.stabilizeAfterMs ? 'running' : 'offline';
  }
  const since = Date.parse(unansweredSince ?? '');
  const unreachableFor = Number.isNaN(since) ? 0 : now.getTime() - since;
  if (unreachableFor >= offlineAfterMs) return 'offline';
  return from ?? 'pending';
}

/** What besides its phase and cordon keeps new instances off a cluster. */
interface Hindrances {
  readonly instances: number;
  readonly invalidCapacity?: string;
  /** Why our CRDs are not installed there. */
  readonly withoutCrds?: string;
  /** An offline cluster that answers again, since when, and the window it must answer through. */
  readonly stabilizing?: { readonly since: string; readonly windowMs: number };
}

/** Whether new instances may go to the cluster, with the condition's reason and message. */
function schedulability(
  phase: ClusterPhase,
  cordoned: boolean,
  hindrances: Hindrances,
): [boolean, string, string] {
  if (phase === 'terminated') return [false, 'Terminating', clusterRemovalMessage(hindrances.instances)];
  if (phase === 'offline' && hindrances.stabilizing) {
    const { since, windowMs } = hindrances.stabilizing;
    return [
      false,
      'Stabilizing',
      `the cluster answers again since ${since}; it is scheduled onto once it has answered for ${Math.round(windowMs / 1000)} s`,
    ];
  }
  if (phase === 'offline') return [false, 'Offline', 'the cluster is unreachable'];
  if (phase === 'pending') return [false, 'NotProbed', 'the cluster has not answered a probe yet'];
  if (cordoned) return [false, 'SchedulingDisabled', 'the cluster is cordoned'];
  if (hindrances.withoutCrds) return [false, 'CrdsNotInstalled', hindrances.withoutCrds];
  const { invalidCapacity } = hindrances;
  if (invalidCapacity) return [false, 'InvalidCapacity', invalidCapacity];
  return [true, 'Schedulable', 'new instances may be placed on the cluster'];
}

/**
 * What the metrics show of a cluster beside its phase: the instances placed there, and what it
 * offers to pods in each resource's unit (cores, bytes); a quantity that does not parse is left out.
 */
export function clusterFigures(
  cluster: SFCluster,
  serviceInstances: number,
): { serviceInstances: number; allocatable: Record<string, number> } {
  const allocatable: Record<string, number> = {};
  for (const [resource, quantity] of Object.entries(cluster.status?.allocatable ?? {})) {
    try {
      allocatable[resource] = Number(parseQuantity(quantity)) / 1000;
    } catch {
      // not a quantity: nothing to show
    }
  }
  return { serviceInstances, allocatable };
}
