/**
 * The admin service: what the admin API asks of the broker layer. Listings of the records in the
 * master, the update of one instance to its plan's current revision, the removal of a stuck record,
 * the rollouts (contract.ts) and the dry runs of plan changes (dry-run.ts).
 *
 * Pure: types only.
 */
import type { ResourceState } from '../resources/types.js';
import type { AdoptionReport, RolloutControl } from './contract.js';
import type { DryRunControl } from './dry-run.js';

/**
 * Which records a listing returns; every field set must match. Service, plan, cluster and revision
 * are label selectors on the master; the state (and, for bindings, the service and plan, which
 * binding records carry no label of) are checked on each page read.
 */
export interface RecordFilter {
  readonly serviceId?: string;
  readonly planId?: string;
  readonly clusterId?: string;
  readonly state?: ResourceState;
  /** Instances only: the plan revision the instance was last updated to. */
  readonly revision?: string;
}

/** Which page of a listing: the Kubernetes list `limit` and `continue` token, passed through. */
export interface PageRequest {
  /** Most records read for this page. @default 100 */
  readonly limit?: number;
  /** The `continue` of the page before. @default the first page */
  readonly continue?: string;
}

/**
 * One page of a listing. Filters the apiserver cannot select by are applied to the records read,
 * so a page may hold fewer than `limit` items while more follow: go on while `continue` is set.
 */
export interface Page<T> {
  readonly items: readonly T[];
  /** The token of the next page; absent on the last. */
  readonly continue?: string;
}

/** An instance as the admin listing shows it, from its record. */
export interface InstanceSummary {
  readonly instanceId: string;
  readonly serviceId: string;
  readonly planId: string;
  /** Where it is placed; absent before placement. */
  readonly clusterId?: string;
  readonly state?: ResourceState;
  /** Its last operation: provision, update or deprovision. */
  readonly operation?: string;
  readonly description?: string;
  /** The plan revision it was last updated to, when recorded. */
  readonly revision?: string;
  /** The record: namespace and name in the master. */
  readonly namespace: string;
  readonly name: string;
  readonly createdAt?: string;
  /** When its deletion was requested: it is deleting, or stuck. */
  readonly deletionRequestedAt?: string;
  /** The last custom action run on it (`status.lastAction` of its record), when there was one. */
  readonly lastAction?: {
    readonly action: string;
    readonly state: string;
    readonly description?: string;
    readonly runId?: string;
  };
}

/** A binding as the admin listing shows it, from its record. */
export interface BindingSummary {
  readonly bindingId: string;
  readonly instanceId: string;
  readonly serviceId: string;
  readonly planId: string;
  readonly clusterId?: string;
  readonly state?: ResourceState;
  readonly operation?: string;
  readonly description?: string;
  readonly namespace: string;
  readonly name: string;
  readonly createdAt?: string;
  readonly deletionRequestedAt?: string;
}

/** What an update of one instance started. */
export interface InstanceUpdateStarted {
  readonly instanceId: string;
  /** The operation string, for the OSB `last_operation` of the instance. */
  readonly operation: string;
  /** The plan revision the update brings the instance to, when the plan has one. */
  readonly revision?: string;
}

/** A custom action an admin started on an instance. */
export interface ActionStarted {
  readonly instanceId: string;
  /** The action, `x-<name>`. */
  readonly action: string;
  /** The instance's workflow, which runs the action as it runs the OSB operations. */
  readonly workflowId: string;
  /** The run of that workflow that runs this action: what its state is asked by. */
  readonly runId: string;
  /** `<action>:<runId>`, as OSB operation strings are written (the OSB `last_operation` knows only those). */
  readonly operation: string;
}

/** Where one run of a custom action stands. */
export interface ActionState {
  readonly instanceId: string;
  readonly action: string;
  readonly runId: string;
  readonly state: 'in progress' | 'succeeded' | 'failed';
  readonly description?: string;
}

/** The records an admin may force-remove. */
export type RecordKind = 'instance' | 'binding';

/** What a forced removal did. */
export interface ForcedRemoval {
  readonly kind: RecordKind;
  /** The OSB id of the instance or binding. */
  readonly id: string;
  readonly namespace: string;
  readonly name: string;
  /** Whether the removal also requested the deletion (it had not been requested before). */
  readonly deletionRequested: boolean;
  /** Whether our finalizer was on the record and is now removed. */
  readonly finalizerRemoved: boolean;
  /** Whether an operation workflow still ran on it, and was terminated. */
  readonly operationStopped: boolean;
  /**
   * Of an instance: the clusters whose reservation for it was released (none when it held none).
   * Its hold on its plan and service is released too, so that they can be deleted.
   */
  readonly reservationsReleased?: readonly string[];
  readonly requestedBy: string;
  /** When, as an ISO time. */
  readonly at: string;
}

/** The admin side of the broker, as the admin API calls it. */
export interface AdminService {
  /** The instance records matching `filter`, one page. */
  listInstances(filter: RecordFilter, page: PageRequest): Promise<Page<InstanceSummary>>;
  /** The binding records matching `filter`, one page. */
  listBindings(filter: RecordFilter, page: PageRequest): Promise<Page<BindingSummary>>;
  /**
   * Starts the update of one instance to its plan's current revision, with the request its record
   * holds (plan, parameters, context), as an OSB update would run it.
   *
   * @throws OsbError 404 without such an instance (or one being deleted); 422 `ConcurrencyError`
   *   while another operation runs on it; 409 when its plan has no revision yet.
   */
  updateInstance(instanceId: string, requestedBy: string): Promise<InstanceUpdateStarted>;
  /**
   * Removes a record whose deletion cannot finish (its cluster is gone): terminates the operation
   * still running on it, requests its deletion when nobody has, and takes our finalizer off, so
   * the apiserver lets it go. An instance's reservation on its cluster and its hold on its plan and
   * service (their `catalog-in-use` finalizer, once no other record holds them) are released with
   * it. Its resources on the cluster are left as they are. Recorded in the audit log and as an
   * Event on the record.
   *
   * @throws OsbError 404 without such a record.
   */
  forceRemove(kind: RecordKind, id: string, requestedBy: string): Promise<ForcedRemoval>;
  /**
   * Adopts the records Service Fabrik's broker and inter-operator left in the master, in place
   * (src/adoption/rules.ts); with `dryRun`, only says which it would adopt and why it cannot adopt
   * the others. Records it cannot adopt are left untouched. Recorded in the audit log.
   */
  adoptServiceFabrik(dryRun: boolean, requestedBy: string): Promise<AdoptionReport>;
  /**
   * Starts a custom action of the instance's plan (its `x-<name>` template) on the instance, with
   * the action's own parameters, as a run of the instance's workflow.
   *
   * @throws OsbError 400 for a name that is no custom action; 404 without the instance, or when its
   *   plan has no such action; 422 `ConcurrencyError` while another operation runs on the instance
   *   or one of its bindings; 409 while the same action runs, or when the instance cannot run one
   *   (being deleted, its provision failed, its plan left the catalog).
   */
  runAction(
    instanceId: string,
    action: string,
    parameters: Readonly<Record<string, unknown>> | undefined,
    requestedBy: string,
  ): Promise<ActionStarted>;
  /**
   * Where the run `runId` of the custom action `action` on the instance stands.
   *
   * @throws OsbError 404 when no such run of that action is known.
   */
  actionState(instanceId: string, action: string, runId: string): Promise<ActionState>;
  /**
   * Starts the rotation of the instance's generated secret `secret` (an SFSecret of its plan's
   * provision template), as a run of the instance's workflow: the action `x-rotate-secret`, whose
   * state {@link actionState} tells.
   *
   * @throws OsbError 404 without the instance, or when it has no such generated secret; 422
   *   `ConcurrencyError` while another operation runs on the instance or one of its bindings; 409
   *   while a rotation runs, or when the instance cannot run one (being deleted, its provision
   *   failed, its plan left the catalog).
   */
  rotateSecret(instanceId: string, secret: string, requestedBy: string): Promise<ActionStarted>;
  /**
   * Starts the move of the instance to the cluster `toClusterId` (absent: where its plan's
   * scheduler places it among the others), as a run of the instance's workflow: the action
   * `move`, whose state {@link actionState} tells. `reason` goes into the placement annotation.
   *
   * @throws OsbError 404 without the instance; 422 `ConcurrencyError` while another operation runs
   *   on the instance or one of its bindings; 409 while a move runs, when the instance cannot move
   *   (being deleted, its provision failed, its plan says its instances do not move or left the
   *   catalog), or when it is on that cluster already.
   */
  moveInstance(
    instanceId: string,
    toClusterId: string | undefined,
    requestedBy: string,
    reason?: string,
  ): Promise<ActionStarted>;
  readonly rollouts: RolloutControl;
  /** Dry runs of plan changes (dry-run.ts). */
  readonly dryRuns: DryRunControl;
}
