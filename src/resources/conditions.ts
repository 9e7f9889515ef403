/**
 * The conditions our records report, in the kstatus convention (sigs.k8s.io/cli-utils/pkg/kstatus)
 * that `helm --wait`, Flux, Argo CD and `kubectl wait --for=condition=Ready` read:
 * - `Ready` True when the record's status describes its current spec and the work on it is done;
 * - `Reconciling` True while work on it is in progress (an operation, a first probe, a deletion);
 * - `Stalled` True when nothing more happens without a change (an operation that failed, a
 *   cluster that stopped answering);
 * each with the generation it describes, as is `status.observedGeneration`.
 *
 * Which conditions a status gets is decided here alone, for SFServiceInstance and SFServiceBinding
 * (by the state of their last OSB operation) and for SFCluster (by its phase). Every writer of
 * those statuses puts the result in the same patch as the state or phase.
 *
 * Pure: no I/O, safe to import from workflows.
 */
import type { ClusterPhase, Condition, ConditionStatus, ResourceState } from './types.js';

export type { Condition, ConditionStatus } from './types.js';

/** The condition types kstatus reads. */
export const CONDITION_TYPES = {
  ready: 'Ready',
  reconciling: 'Reconciling',
  stalled: 'Stalled',
} as const;

/** The longest message a condition holds (`metav1.Condition`); a longer one is cut. */
export const CONDITION_MESSAGE_LIMIT = 32768;

const withinLimit = (message: string): string =>
  message.length > CONDITION_MESSAGE_LIMIT ? `${message.slice(0, CONDITION_MESSAGE_LIMIT - 1)}…` : message;

/** What a condition says now, without its times. */
export type ConditionFacts = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

/** The moment a status is written, and the generation of the spec it describes. */
export interface Observation {
  /** `metadata.generation` of the spec the status describes; absent when the record has none. */
  readonly generation?: number | undefined;
  /** ISO time of the write. */
  readonly now: string;
}

/**
 * The conditions after `facts`: each condition of `facts` replaces the one of its type, keeping its
 * `lastTransitionTime` when its status did not change; conditions of other types are kept as they
 * are, and the order of `previous` too, the new types coming last.
 */
export function nextConditions<
  C extends {
    readonly type: string;
    readonly status: string;
    readonly lastTransitionTime?: string | undefined;
  } = Condition,
>(previous: readonly C[] | undefined, facts: readonly ConditionFacts[], at: Observation): (C | Condition)[] {
  const made = (fact: ConditionFacts): Condition => {
    const before = previous?.find((c) => c.type === fact.type);
    const since = before && before.status === fact.status && before.lastTransitionTime;
    return {
      type: fact.type,
      status: fact.status,
      reason: fact.reason,
      message: withinLimit(fact.message),
      lastTransitionTime: since || at.now,
      ...(at.generation !== undefined ? { observedGeneration: at.generation } : {}),
    };
  };
  const byType = new Map(facts.map((fact) => [fact.type, fact]));
  const kept = (previous ?? []).map((c) => {
    const fact = byType.get(c.type);
    return fact ? made(fact) : c;
  });
  const added = facts.filter((fact) => !previous?.some((c) => c.type === fact.type)).map(made);
  return [...kept, ...added];
}

/** Ready, Reconciling and Stalled, each True or False, all with the same reason and message. */
function kstatusFacts(
  truth: { readonly ready: boolean; readonly reconciling: boolean; readonly stalled: boolean },
  reason: string,
  message: string,
): ConditionFacts[] {
  const as = (value: boolean): ConditionStatus => (value ? 'True' : 'False');
  return [
    { type: CONDITION_TYPES.ready, status: as(truth.ready), reason, message },
    { type: CONDITION_TYPES.reconciling, status: as(truth.reconciling), reason, message },
    { type: CONDITION_TYPES.stalled, status: as(truth.stalled), reason, message },
  ];
}

// ---------------------------------------------------------------------------------------------
// SFServiceInstance and SFServiceBinding

/** The OSB operations a record's status tells of. */
export type RecordOperation = 'provision' | 'update' | 'deprovision' | 'bind' | 'unbind';

/** What a record's status says of its last OSB operation. */
export interface RecordOperationStatus {
  readonly state: ResourceState;
  readonly operation: RecordOperation | string;
  readonly description?: string | null | undefined;
}

/** Reasons by operation: while it runs, once it succeeded, once it failed. */
const REASONS: Record<RecordOperation, { running: string; succeeded: string; failed: string }> = {
  provision: { running: 'Provisioning', succeeded: 'Provisioned', failed: 'ProvisionFailed' },
  update: { running: 'Updating', succeeded: 'Updated', failed: 'UpdateFailed' },
  deprovision: { running: 'Deleting', succeeded: 'Deleted', failed: 'DeprovisionFailed' },
  bind: { running: 'Binding', succeeded: 'Bound', failed: 'BindFailed' },
  unbind: { running: 'Deleting', succeeded: 'Deleted', failed: 'UnbindFailed' },
};

const reasonsOf = (operation: string) =>
  REASONS[operation as RecordOperation] ?? {
    running: 'Reconciling',
    succeeded: 'Succeeded',
    failed: 'Failed',
  };

/**
 * The kstatus conditions of an instance's or binding's status:
 * - in progress (`in progress`, `in_queue`, `update`): Reconciling True, Ready False, reason by
 *   operation (`Provisioning`, `Updating`, `Binding`). An update of a ready instance (a plan change,
 *   a parameter change, a rollout to a new plan revision) turns Ready False until it ends: the
 *   spec it brings is not in place yet, and a rollout does not even change the record's generation,
 *   so `kubectl wait --for=condition=Ready` after asking for the change returns only once the
 *   change is done (or never, when it fails), not at once on the Ready of what was there before.
 *   The instance stays usable meanwhile; `status.instanceUsable` says so once the update ends.
 * - being deleted (`delete`, or a deprovision or unbind in progress): Reconciling True, Ready False,
 *   reason `Deleting`.
 * - `succeeded`: Ready True, Reconciling and Stalled False (`Provisioned`, `Updated`, `Bound`).
 * - `failed`: Stalled True, Ready and Reconciling False, the operation's description as message
 *   (`ProvisionFailed`, `UpdateFailed`, `DeprovisionFailed`, `BindFailed`, `UnbindFailed`): the
 *   platform has to ask again (or for something else) before anything changes.
 */
export function recordConditionFacts(status: RecordOperationStatus): ConditionFacts[] {
  const reasons = reasonsOf(status.operation);
  const message = status.description || undefined;
  switch (status.state) {
    case 'succeeded':
      return kstatusFacts(
        { ready: true, reconciling: false, stalled: false },
        reasons.succeeded,
        message ?? 'The operation succeeded',
      );
    case 'failed':
      return kstatusFacts(
        { ready: false, reconciling: false, stalled: true },
        reasons.failed,
        message ?? 'The operation failed',
      );
    case 'delete':
      return kstatusFacts(
        { ready: false, reconciling: true, stalled: false },
        'Deleting',
        message ?? 'Deleting',
      );
    default:
      return kstatusFacts(
        { ready: false, reconciling: true, stalled: false },
        reasons.running,
        message ?? 'The operation is in progress',
      );
  }
}

/** A record as its status writers read it: its generation and its conditions so far. */
export interface ObservedRecord {
  readonly metadata: { readonly generation?: number | undefined };
  readonly status?: { readonly conditions?: readonly Condition[] | undefined } | undefined;
}

/**
 * The fields an instance's or binding's status writer adds to its patch: the conditions of
 * `status` and the generation they describe: the record's as read, whose spec only its own
 * operations write, one at a time.
 */
export function recordStatusConditions(
  record: ObservedRecord,
  status: RecordOperationStatus,
  now: Date,
): { conditions: Condition[]; observedGeneration?: number } {
  const generation = record.metadata.generation;
  const at = { generation, now: now.toISOString() };
  return {
    conditions: nextConditions(record.status?.conditions, recordConditionFacts(status), at),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// SFCluster

/** What the cluster's last probe found, as the health status tells it. */
export interface ClusterProbeSummary {
  /** True: the apiserver answered; false: it did not; undefined: never probed. */
  readonly answered: boolean | undefined;
  /** The apiserver's version or why it did not answer. */
  readonly message: string;
}

/**
 * What a cluster being removed says: with instances still placed on it, how many, and that they
 * go first: drained off it where their plan allows a move, else deprovisioned (its finalizer keeps
 * the SFCluster until then).
 */
export function clusterRemovalMessage(instances: number): string {
  if (instances <= 0) return 'the cluster is being removed: no instance is placed on it';
  const many = instances === 1 ? '1 instance is' : `${instances} instances are`;
  const rest =
    instances === 1
      ? 'it is drained off the cluster where its plan allows a move, else deprovision it'
      : 'they are drained off the cluster where their plan allows a move, else deprovision them';
  return `the cluster is being removed, but ${many} still placed on it: ${rest}; the SFCluster stays until none is left`;
}

/**
 * The kstatus conditions of an SFCluster:
 * - `running` and its apiserver answered the last probe (cordoned or not: a cordon stops
 *   placements, which the `Schedulable` condition tells): Ready True (`Reachable`), Reconciling and
 *   Stalled False;
 * - `running` but the last probe went unanswered (less than the offline threshold ago): Ready False
 *   (`Unreachable`), neither Reconciling nor Stalled: it is running again at the next answer;
 * - `pending`: Reconciling True until its first answer; Ready Unknown (`NotProbed`) before any
 *   probe, False (`Unreachable`) once one went unanswered;
 * - `offline`: Stalled True and Ready False (`Unreachable`, with why): it comes back only when the
 *   cluster or its kubeconfig is mended;
 * - `terminated`: Reconciling True and Ready False (`Terminating`) while its removal waits for its
 *   `instances` to go, the message saying how many are left.
 */
export function clusterConditionFacts(
  phase: ClusterPhase,
  probe: ClusterProbeSummary,
  instances = 0,
): ConditionFacts[] {
  if (phase === 'terminated')
    return kstatusFacts(
      { ready: false, reconciling: true, stalled: false },
      'Terminating',
      clusterRemovalMessage(instances),
    );
  const reason = probe.answered === undefined ? 'NotProbed' : probe.answered ? 'Reachable' : 'Unreachable';
  const ready: ConditionStatus =
    probe.answered === undefined ? 'Unknown' : phase === 'running' && probe.answered ? 'True' : 'False';
  const progress = kstatusFacts(
    { ready: false, reconciling: phase === 'pending', stalled: phase === 'offline' },
    reason,
    probe.message,
  );
  return [
    { type: CONDITION_TYPES.ready, status: ready, reason, message: probe.message },
    ...progress.filter((fact) => fact.type !== CONDITION_TYPES.ready),
  ];
}
