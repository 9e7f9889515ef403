/**
 * What the broker and the worker report to their metrics, as small interfaces the layers that
 * measure receive (the API, the service layer, the Kubernetes clients, the activities); the
 * composition roots give them the Prometheus implementation (prometheus.ts). Every label value is
 * from a bounded set: a route pattern, an operation kind, a catalog id, a cluster id, a verb,
 * never an instance or binding id.
 */

/** One OSB request, once answered. */
export interface OsbRequestRecorder {
  /**
   * `route`: the pattern that matched (`/v2/service_instances/:instance_id`) or
   * {@link UNKNOWN_ROUTE}; `seconds`: from arrival to the answer.
   */
  request(route: string, method: string, status: number, seconds: number): void;
}

/** The route label of a request that matched no route. */
export const UNKNOWN_ROUTE = 'unknown';

/** What the operations are: the OSB operations, by the names the workflows carry. */
export type OperationKind = 'provision' | 'update' | 'deprovision' | 'bind' | 'unbind';

/** An operation's workflow started by the broker. */
export interface OperationStartRecorder {
  operationStarted(kind: OperationKind, serviceId: string, planId: string): void;
}

/** How an operation's workflow ended. */
export type OperationOutcome = 'succeeded' | 'failed' | 'cancelled';

/** An operation's workflow that ended, as the worker saw it. */
export interface FinishedOperation {
  readonly kind: string;
  readonly outcome: OperationOutcome;
  readonly planId: string;
  /** The cluster it was placed on; empty when it ended before it was placed. */
  readonly clusterId: string;
  /** From the start of the workflow run to its end. */
  readonly seconds: number;
}

/** What the worker reports of its operations and their steps. */
export interface OperationRecorder {
  operationFinished(operation: FinishedOperation): void;
  /** A step (an activity, local or queued) run again after a failure. */
  stepRetried(step: string): void;
  /** A template rendered: its type (gotemplate, mustache, helm...) and action. */
  templateRendered(type: string, action: string, seconds: number): void;
}

/** How a Kubernetes API call ended: by the class of its status, or `error` without an answer. */
export type KubeCallOutcome =
  'success' | 'not_found' | 'conflict' | 'client_error' | 'server_error' | 'error';

/** One Kubernetes API call (not the watches). */
export interface KubeCallRecorder {
  /** `verb`: `get`, `create`, `update`, `patch`, `delete`. */
  kubeCall(verb: string, outcome: KubeCallOutcome): void;
}

/** What a cluster's health round found beside its phase. */
export interface ClusterFigures {
  /** Instances placed on the cluster. */
  readonly serviceInstances?: number;
  /** What it offers to pods, by resource, in the resource's unit (cores, bytes). */
  readonly allocatable?: Readonly<Record<string, number>>;
}

/** The health of the registered clusters, as the cluster health workflow writes it. */
export interface ClusterHealthRecorder {
  /**
   * The phase written to a cluster's SFCluster status, with what the round found; undefined once
   * the SFCluster is gone.
   */
  clusterPhase(clusterId: string, phase: string | undefined, figures?: ClusterFigures): void;
}

/**
 * What Service Fabrik's detailed series of an instance says of it beside its id and number, each
 * as its interoperator writes it: the record's `status.state`, its timestamps as Go prints them
 * (the deletion's empty while it is not being deleted), its catalog and platform ids, its namespace
 * and its last operation (`in_queue`, `update` or `delete`).
 */
export interface InstanceStateLabels {
  readonly state: string;
  readonly creationTimestamp: string;
  readonly deletionTimestamp: string;
  readonly serviceId: string;
  readonly planId: string;
  readonly organizationGuid: string;
  readonly spaceGuid: string;
  readonly namespace: string;
  readonly lastOperation: string;
}

/** What Service Fabrik's detailed series of a binding says of it beside its ids and number. */
export interface BindingStateLabels {
  readonly state: string;
  readonly creationTimestamp: string;
  readonly deletionTimestamp: string;
  readonly namespace: string;
}

/**
 * The state of each instance and binding record as a number (Service Fabrik's: 0 succeeded,
 * 1 failed, 2 in progress, 3 waiting, 4 gone), with what its detailed series says of it, none
 * for a gone record (whose detailed series has its own id alone); undefined to stop reporting
 * the record.
 */
export interface RecordStateRecorder {
  instanceState(instanceId: string, code: number | undefined, labels?: InstanceStateLabels): void;
  bindingState(
    bindingId: string,
    instanceId: string,
    code: number | undefined,
    labels?: BindingStateLabels,
  ): void;
}

/** The verb of a Kubernetes API call by its HTTP method. */
export function kubeVerb(method: string): string {
  switch (method.toUpperCase()) {
    case 'GET':
    case 'HEAD':
      return 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return 'other';
  }
}

/** The outcome of a Kubernetes API call by its HTTP status. */
export function kubeCallOutcome(status: number): KubeCallOutcome {
  if (status >= 200 && status < 300) return 'success';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status >= 400 && status < 500) return 'client_error';
  if (status >= 500) return 'server_error';
  return 'error';
}
