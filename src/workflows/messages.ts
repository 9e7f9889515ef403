/**
 * What the broker and the operation workflows say to each other: inputs, results, the memo that
 * carries an operation's state (read by `last_operation` with one describe call, with or without
 * a worker), and the `operation` strings handed to platforms. And what workflows and activities
 * exchange: references to the records an operation works on, and what the status template reports.
 *
 * And the messages of the rollout workflow, defined once here for the workflow and its callers.
 *
 * Pure: imported by workflows, activities and the broker.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RolloutProgress, RolloutRequest, RolloutSettings } from '../admin/contract.js';
import type { BindRequest, ProvisionRequest, UpdateRequest } from '../osb/service-broker.js';
import type { CustomAction } from '../resources/actions.js';
import type { MoveOperation } from '../resources/migration.js';
import type { ClusterPhase, SFServiceBinding, SFServiceInstance } from '../resources/types.js';
import type { MasterWrite } from '../resources/master-writes.js';

export type InstanceOperationType = 'provision' | 'update' | 'deprovision';
export type BindingOperationType = 'bind' | 'unbind';
export type OperationType = InstanceOperationType | BindingOperationType;
export type OperationState = 'in progress' | 'succeeded' | 'failed';
/**
 * What an instance's workflow runs: an OSB operation, a custom action of the plan (`x-<name>`), or
 * a move to another cluster.
 */
export type OperationName = OperationType | CustomAction | MoveOperation;

/** Who asked, from `X-Broker-API-Originating-Identity`, kept for audit. */
export interface RequestedBy {
  readonly platform: string;
  /** The identity the platform sent; absent when its header could not be read (`unreadable`). */
  readonly identity?: unknown;
  readonly unreadable?: true;
}

/** What the broker adds to the OSB request it starts an operation for. */
export interface OperationEnvelope {
  /** Digest of the request's attributes: tells an identical repeat from a conflicting one. */
  readonly requestHash: string;
  /** How long to wait for the operator (the plan's maximum_polling_duration, else the default). */
  readonly deadlineSeconds: number;
  /**
   * The first wait between two status checks, in ms (the next ones double from it, see
   * polling.ts); absent: polling.ts's FIRST_POLL_MS.
   */
  readonly firstPollMs?: number;
  readonly requestedBy?: RequestedBy;
}

/**
 * An instance request, as the provision, update and deprovision workflows receive it: the OSB
 * request's fields (an update's merged with what the instance's record holds; a deprovision's only
 * the ids) and the envelope.
 */
export type InstanceRequest = Omit<ProvisionRequest, 'acceptsIncomplete'> &
  Pick<UpdateRequest, 'previousValues'> &
  OperationEnvelope & {
    /** Known before the operator answers (from the plan's dashboard URL template). */
    readonly dashboardUrl?: string;
  };

/**
 * A binding request, as the bind and unbind workflows receive it (an unbind's only the ids). A
 * bind's carries the times of its plan's `bindingLifetime` from when the broker accepted it, which
 * its record keeps from its creation on; a rotation's, what it took over from its predecessor.
 */
export type BindingRequest = Omit<BindRequest, 'acceptsIncomplete'> &
  OperationEnvelope & {
    /** When the binding's credentials expire (RFC 3339, UTC). */
    readonly expiresAt?: string;
    /** When the platform should have rotated the binding (RFC 3339, UTC). */
    readonly renewBefore?: string;
  };

/**
 * A custom action of the instance's plan (its `x-<name>` template), run by an admin: the action
 * workflow receives the instance's ids as its record holds them, the action's own parameters, and
 * the envelope. Like an update, it runs under the instance's workflow id.
 */
export interface ActionRequest extends OperationEnvelope {
  readonly instanceId: string;
  readonly serviceId: string;
  readonly planId: string;
  readonly action: CustomAction;
  /** The action's parameters from the admin's request: templates see them as `.action.parameters`. */
  readonly parameters?: Record<string, unknown>;
}

/**
 * The rotation of a generated secret of an instance: a built-in action (its name
 * {@link ROTATE_SECRET_ACTION}), run by an admin or when the plan's `rotateAfter` says so, under
 * the instance's workflow id like the custom actions; `parameters.secret` names the SFSecret.
 */
export interface SecretRotationRequest extends ActionRequest {
  readonly action: typeof ROTATE_SECRET_ACTION;
  readonly parameters: { readonly secret: string };
}

/**
 * The move of an instance to another cluster, run by an admin or by a cluster's drain, under the
 * instance's workflow id like the custom actions: the instance's ids as its record holds them,
 * where it goes (absent: its plan's scheduler chooses among the other clusters), why, and the
 * envelope.
 */
export interface MoveRequest extends OperationEnvelope {
  readonly instanceId: string;
  readonly serviceId: string;
  readonly planId: string;
  /** The cluster to move to; absent: the plan's scheduler chooses among the other clusters. */
  readonly toClusterId?: string;
  /** Why it moves (an admin's move, the drain of its cluster): kept in the placement annotation. */
  readonly reason?: string;
  /**
   * Its cluster is lost (offline past the landscape's grace period): it is rebuilt on the target
   * from its last backup, nothing is read from or done on its cluster, and what is left there is
   * removed when the cluster answers again.
   */
  readonly sourceLost?: true;
}

/** Workflow type name of the move of an instance. */
export const MOVE_WORKFLOW_TYPE = 'moveWorkflow';

/** The action a rotation of a generated secret runs as: what the record's `lastAction` and Temporal show. */
export const ROTATE_SECRET_ACTION = 'x-rotate-secret';

/** Workflow type name of the rotation of a generated secret. */
export const SECRET_ROTATION_WORKFLOW_TYPE = 'secretRotationWorkflow';

/**
 * A rotation the plan's `rotateAfter` asks for: the instance's workflow id it runs under, and its
 * request (one at a time per instance, the secret whose current version is the oldest).
 */
export interface ScheduledRotation {
  readonly workflowId: string;
  readonly request: SecretRotationRequest;
  /** When the instance was claimed for the rotation against its bindings' operations. */
  readonly claimedAt?: string;
}

/** How often the rotation schedule looks for generated secrets due for rotation. */
export interface RotationScheduleSettings {
  /** Seconds between the checks. */
  readonly checkSeconds: number;
}

/** Name of the signal that gives the running rotation schedule new settings. */
export const ROTATION_SCHEDULE_SETTINGS_SIGNAL = 'rotationScheduleSettings';

/** Workflow id of the rotation schedule of the landscape whose registry is `namespace`: one per landscape. */
export const rotationScheduleWorkflowId = (namespace: string): string => `secret-rotations/${namespace}`;

/** A version of a generated secret: its SFSecret's name, the version and its Secret's name (never its value). */
export interface SecretVersion {
  readonly name: string;
  readonly version: number;
  readonly secret: string;
}

/**
 * One run of a custom action, as its templates see it (`.action`): the action, the run's id (the
 * workflow's run id, fresh for every run, so a template can name what this run asks for) and the
 * action's parameters.
 */
export interface ActionRun {
  readonly name: CustomAction;
  readonly id: string;
  readonly parameters: Record<string, unknown>;
}

/** The state of one operation: kept in the workflow's memo under MEMO_KEY, and its result. */
export interface OperationStatus {
  readonly operation: OperationName;
  readonly requestHash: string;
  readonly state: OperationState;
  readonly description?: string;
  readonly instanceUsable?: boolean;
  readonly updateRepeatable?: boolean;
  readonly dashboardUrl?: string;
  /** Name of the Secret with a binding's response, once the bind succeeded. */
  readonly responseSecret?: string;
}

export const MEMO_KEY = 'osb';

/**
 * The state an operation starts in: the broker starts the workflow with it as its memo, and the
 * workflow takes it up from there (it writes the memo again only when the state changes).
 */
export const startingStatus = (
  operation: OperationName,
  request: { readonly requestHash: string; readonly dashboardUrl?: string },
): OperationStatus => ({
  operation,
  requestHash: request.requestHash,
  state: 'in progress',
  ...(operation === 'provision' && request.dashboardUrl ? { dashboardUrl: request.dashboardUrl } : {}),
});

/**
 * What a synchronous request waits for: the operation it asked for, told apart from another
 * request by the request's digest.
 */
export interface AwaitedOperation {
  readonly operation: OperationName;
  readonly requestHash: string;
}

/** Name of the update that answers a synchronous request with its operation's final status. */
export const OPERATION_OUTCOME_UPDATE = 'operationOutcome';

/**
 * The update a synchronous request sends with the start of its operation (Update-With-Start), or
 * to the run it found: it completes with the operation's final status when the operation ends
 * (never with a credential: a bind's status names the Secret that holds them). Its validator
 * refuses a request for another operation or another request's digest ({@link refusalOf}) with a
 * failure of type {@link OPERATION_REFUSED} whose details are the running operation's name;
 * nothing is written to the history then.
 */
export const operationOutcomeUpdate = defineUpdate<OperationStatus, [AwaitedOperation]>(
  OPERATION_OUTCOME_UPDATE,
);

/** The failure type of an {@link operationOutcomeUpdate} its validator refused. */
export const OPERATION_REFUSED = 'OperationRequestRefused';

/**
 * Why a request may not wait on the operation in `status`: undefined when it is the same
 * operation asked with the same digest, else the reason to refuse it.
 */
export function refusalOf(status: OperationStatus, awaited: AwaitedOperation): string | undefined {
  if (status.operation !== awaited.operation)
    return `Another operation (${status.operation}) is in progress.`;
  if (status.requestHash !== awaited.requestHash)
    return `The ${status.operation} in progress was asked with other attributes.`;
  return undefined;
}

/** Names of the rollout workflow's messages. */
export const ROLLOUT_MESSAGES = {
  /** Signal: a new revision to roll out (a RolloutRequest); supersedes the one rolling out. */
  revision: 'rolloutRevision',
  /** Update: no update starts until resumed (those in flight finish). */
  pause: 'rolloutPause',
  /** Update: a paused rollout goes on; a halted one tolerates `maxFailures` more failed updates. */
  resume: 'rolloutResume',
  /** Update: no update starts; the rollout ends `aborted` once those in flight have ended. */
  abort: 'rolloutAbort',
  /** Query: the RolloutProgress. */
  progress: 'rolloutProgress',
} as const;

/**
 * A revision to roll out: the rollout goes on towards the plan's revision as the apiserver holds
 * it then. A signal: whoever sends it needs no answer, and sends it again when the plan changes.
 */
export const rolloutRevisionSignal = defineSignal<[RolloutRequest]>(ROLLOUT_MESSAGES.revision);
/** Where the rollout stands, as the outside sees it. */
export const rolloutProgressQuery = defineQuery<RolloutProgress>(ROLLOUT_MESSAGES.progress);
/**
 * Pause, resume and abort: Updates, each answering with the rollout's progress once it took the
 * command. Their validators refuse what the rollout's state does not allow (pause when already
 * paused, halted or ended; resume when not paused or halted; abort when ended) with a failure of
 * type {@link ROLLOUT_REFUSED} whose message says why; nothing is written to the history then.
 */
export const rolloutPauseUpdate = defineUpdate<RolloutProgress>(ROLLOUT_MESSAGES.pause);
export const rolloutResumeUpdate = defineUpdate<RolloutProgress>(ROLLOUT_MESSAGES.resume);
export const rolloutAbortUpdate = defineUpdate<RolloutProgress>(ROLLOUT_MESSAGES.abort);

/**
 * The memo key of a rollout's progress (without the per-instance results), for the Temporal UI
 * and for the workers, which read the revision of a plan's latest rollout from it: written as its
 * state, wave or revision changes (each write is an event and a visibility update), so its counts
 * may be a wave old; the query answers with the live ones.
 */
export const ROLLOUT_MEMO_KEY = 'rollout';

/** The failure type of a rollout command its validator refused. */
export const ROLLOUT_REFUSED = 'RolloutCommandRefused';

/** Where the plan as it is now says a rollout goes: the revision it holds, with its settings. */
export interface RolloutTarget {
  readonly revision: string;
  readonly settings: RolloutSettings;
}

/**
 * Bounds of one rollout workflow, apart from its settings: the worker's defaults unless given
 * (tests give short ones). A run hands them to the next.
 */
export interface RolloutLimits {
  /** Events in one run before it continues as new, at the latest. @default 8000 */
  readonly maxHistoryEvents?: number;
  /** How long a rollout that could start no update (every instance busy) waits before looking again, in ms. @default 5000 */
  readonly busyRetryMs?: number;
  /** How many of the instances behind it a rollout reads at once (the oldest first). @default 500 */
  readonly behindPage?: number;
}

/** The request hash of the updates a plan's rollout makes: tells them from a platform's own. */
export const rolloutRequestHash = (revision: string): string => `rollout/${revision}`;

/** Whether an update request comes from a plan's rollout rather than from a platform. */
export const isRolloutUpdate = (request: { readonly requestHash: string }): boolean =>
  request.requestHash.startsWith('rollout/');

/**
 * A rollout's update request as the instance's record holds it when the update starts: the
 * instance's plan, parameters and context are the record's (a platform's update may have ended
 * between the rollout's read of the record and this start, and a rollout never undoes it), and so
 * is the request digest a platform's repeat is compared with; the maintenance info, the rest of the
 * envelope and who asked stay the rollout's.
 */
export function asRecorded(request: InstanceRequest, recorded: InstanceRequest): InstanceRequest {
  const { organizationGuid, spaceGuid, context, parameters } = recorded;
  const { organizationGuid: _o, spaceGuid: _s, context: _c, parameters: _p, ...rollout } = request;
  return {
    ...rollout,
    // What a platform's repeat is compared with stays the platform's: the update changes none of
    // the attributes it digests.
    ...(recorded.requestHash ? { requestHash: recorded.requestHash } : {}),
    serviceId: recorded.serviceId,
    planId: recorded.planId,
    ...(organizationGuid !== undefined ? { organizationGuid } : {}),
    ...(spaceGuid !== undefined ? { spaceGuid } : {}),
    ...(context !== undefined ? { context } : {}),
    ...(parameters !== undefined ? { parameters } : {}),
    previousValues: { serviceId: recorded.serviceId, planId: recorded.planId },
  };
}

/**
 * The `operation` string of a 202 response: the operation type and the run that carries it. A
 * custom action's is handed to admins only; `last_operation` knows the OSB ones alone.
 */
export const operationString = (type: OperationName, runId: string): string => `${type}:${runId}`;

export function parseOperationString(operation: string): { type: OperationType; runId: string } | undefined {
  const match = /^(provision|update|deprovision|bind|unbind):([0-9a-f-]{1,64})$/.exec(operation);
  return match ? { type: match[1] as OperationType, runId: match[2]! } : undefined;
}

/** Workflow type names, one per operation. */
export const WORKFLOW_TYPES = {
  provision: 'provisionWorkflow',
  update: 'updateWorkflow',
  deprovision: 'deprovisionWorkflow',
  bind: 'bindWorkflow',
  unbind: 'unbindWorkflow',
} as const satisfies Record<OperationType, string>;

/** Workflow type name of every custom action. */
export const ACTION_WORKFLOW_TYPE = 'actionWorkflow';

/** Workflow type name of the rollouts (of plans, of referenced objects) and of the drains of clusters. */
export const ROLLOUT_WORKFLOW_TYPE = 'rolloutWorkflow';

/** Where an instance's record is, and which cluster it is placed on once scheduled. */
export interface InstanceRef {
  readonly instanceId: string;
  readonly name: string;
  readonly namespace: string;
  readonly clusterId?: string;
  /**
   * The task queue of the worker that serves the instance's cluster alone: the steps on that
   * cluster run there. Absent when the landscape's workers reach the cluster.
   */
  readonly taskQueue?: string;
  /**
   * Set by recording a deprovision that finds no record: an earlier run of the same operation's
   * steps removed it (a workflow task that ran its steps and was replayed, a retried step).
   */
  readonly removed?: true;
}

/** Where scheduling placed an instance and why: the scheduling step's result, kept in the history. */
export interface Placement {
  readonly clusterId: string;
  /** The decision and its reasons, as the placement annotation of the record says them. */
  readonly reasons: string;
  /** The task queue of the worker that serves the cluster alone, when it has one. */
  readonly taskQueue?: string;
}

/** Where a binding's record is, and the instance it binds. */
export interface BindingRef {
  readonly bindingId: string;
  readonly name: string;
  readonly namespace: string;
  readonly instance: InstanceRef;
  /** Set by recording an unbind that finds no record: as {@link InstanceRef.removed}. */
  readonly removed?: true;
}

/** What an operation works on: an instance, or a binding of it. */
export interface Target {
  readonly instance: InstanceRef;
  readonly binding?: BindingRef;
  /**
   * The cluster the step works on when it is not the one the instance's record names: a move
   * works on its source and its target alike (`instance.clusterId` and `instance.taskQueue` then
   * say the same cluster).
   */
  readonly cluster?: string;
}

/**
 * The master's records a step on a cluster with a worker of its own works from: read on the
 * landscape's queue and given to it, since that worker cannot read them. Specs and statuses only;
 * no Secret is among them.
 */
export interface RecordsFromMaster {
  /** The instance's record; absent once removed. */
  readonly instance?: SFServiceInstance;
  /** The records of the instance's bindings. */
  readonly bindings: readonly SFServiceBinding[];
}

export type { MasterWrite } from '../resources/master-writes.js';

/** What a step on a cluster with a worker of its own answers: its result, and what to write on the master. */
export interface ClusterStepResult<T = unknown> {
  readonly value: T;
  readonly toMaster: readonly MasterWrite[];
}

/** The first argument of a step on a cluster with a worker of its own: its usual one, with the records. */
export type WithRecords<T> = T & { readonly fromMaster?: RecordsFromMaster };

/** The instance (and binding) a step works on, from its first argument: a target, a binding's or an instance's reference. */
export function stepSubject(arg: unknown): { instance: InstanceRef; binding?: BindingRef } {
  const a = arg as Partial<Target> & Partial<BindingRef> & Partial<InstanceRef>;
  if (a.bindingId !== undefined && a.instance) return { instance: a.instance, binding: a as BindingRef };
  if (a.instance) return { instance: a.instance, ...(a.binding ? { binding: a.binding } : {}) };
  return { instance: a as InstanceRef };
}

/** What the `status` template says of an operation. */
export interface StatusReport {
  readonly state: OperationState;
  readonly description?: string;
  readonly dashboardUrl?: string;
  /** The Secret the binding's response was written to, once the bind succeeded. */
  readonly responseSecret?: string;
  /** The template's `instanceUsable`, when it says it: whether the instance is usable after a failure. */
  readonly instanceUsable?: boolean;
  /** The template's `updateRepeatable`, when it says it: whether a failed update may be repeated. */
  readonly updateRepeatable?: boolean;
}

/** How often the cluster health workflow probes and when an unreachable cluster is offline. */
export interface ClusterHealthSettings {
  /** Seconds between the rounds. */
  readonly probeSeconds: number;
  /** Seconds a cluster may stay unreachable before it is offline. */
  readonly offlineSeconds: number;
  /** Seconds an offline cluster must answer every probe before it is running again. @default 0 */
  readonly stabilizationSeconds?: number;
  /**
   * Seconds a cluster may stay unreachable before the instances of the plans that allow it are
   * rebuilt elsewhere from their last backup; 0 or absent: never.
   */
  readonly evacuateAfterSeconds?: number;
  /** Most rebuilds in flight per lost cluster. @default 5 */
  readonly evacuationConcurrency?: number;
}

/**
 * Name of the signal that wakes an operation waiting for its operator: one of the objects its
 * status check read (its plan's `sources`) changed, so it checks again now rather than at its
 * next poll. It carries nothing; a signal to an operation that is not waiting changes nothing.
 */
export const OPERATOR_CHANGED_SIGNAL = 'operatorChanged';

/** Name of the signal that gives the running cluster health workflow new settings. */
export const CLUSTER_HEALTH_SETTINGS_SIGNAL = 'clusterHealthSettings';

/** Workflow id of the cluster health workflow of the registry in `namespace`: one per landscape. */
export const clusterHealthWorkflowId = (namespace: string): string => `clusters/${namespace}`;

/** A registered cluster, as the cluster health workflow goes through them. */
export interface RegisteredCluster {
  readonly clusterId: string;
  /** Whether it is the master (its catalog is the original, not a copy). */
  readonly master: boolean;
  /** The task queue of the worker that serves it alone, when it has one: its steps run there. */
  readonly taskQueue?: string;
}

/** What one health round found of a cluster. */
export interface ClusterHealthReport {
  /** The phase written; absent when the SFCluster is gone. */
  readonly phase?: ClusterPhase;
  readonly serviceInstanceCount?: number;
  /** On a sister: whether our CRDs are installed there (its `CrdsInstalled` condition); absent when not reported. */
  readonly crdsInstalled?: boolean;
  /** The finalizer was removed: the deletion of the SFCluster may finish. */
  readonly released?: boolean;
  /** It answered this round after it was offline: what moved away meanwhile is removed from it. */
  readonly returning?: boolean;
  /** How long it has not answered, in seconds; absent while it answers. */
  readonly unansweredSeconds?: number;
  /**
   * Its deletion is requested while instances are placed there: they are drained off it by the
   * drain under this workflow id, and the deletion finishes once none is left.
   */
  readonly offboarding?: { readonly drainWorkflowId: string };
}

/** What a catalog replication did on one sister. */
export interface CatalogReplication {
  readonly applied: number;
  readonly deleted: number;
}

/**
 * What a step says while a cluster does not answer: it is retried, and `last_operation` shows it
 * while the operation waits.
 */
export const waitingForCluster = (clusterId: string, error: string): string =>
  `waiting for cluster ${clusterId}: ${error}`;

/**
 * What a platform is told while a step waits for a cluster ({@link waitingForCluster}): which cluster, not the error, which
 * may name the cluster's address (operators read it in the step's failure and the worker's log).
 */
export function clusterWaitDescription(message: string): string | undefined {
  const clusterId = /^waiting for cluster (.+?): /.exec(message)?.[1];
  return clusterId === undefined ? undefined : `waiting for cluster ${clusterId}: it does not answer yet`;
}

/**
 * What a step says while an object that a rendered object refers to (`getValueFrom`) is not
 * there: it is retried until the operation's deadline, and `last_operation` shows it. `reference`
 * names the reference (kind, name, path), never a value.
 */
export const waitingForReference = (reference: string): string =>
  `waiting for referenced object ${reference}`;

/**
 * What a platform is told while a step waits ({@link waitingForCluster}, {@link waitingForReference});
 * undefined for any other failure of a step.
 */
export function waitDescription(message: string): string | undefined {
  if (message.startsWith('waiting for referenced object ')) return message;
  return clusterWaitDescription(message);
}
