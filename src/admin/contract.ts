/**
 * The contract of the admin side: what the people who run a landscape ask of it, apart from the
 * platforms' OSB API. Plan rollouts (the instances of a plan brought to its current revision, in a
 * canary batch and then waves), listings of the records, updates of one instance and the removal
 * of a stuck record. The admin API (src/api) calls it; the broker layer implements it over Temporal
 * and the master's records; the rollout workflow speaks its types.
 *
 * Pure: types and names only.
 */

/** How a rollout proceeds. */
export interface RolloutSettings {
  /** Instances updated first, alone, before any wave. @default 1 */
  readonly canary: number;
  /** Most updates running at once after the canary batch. @default 5 */
  readonly maxConcurrency: number;
  /**
   * Pause after the canary batch and after each wave, in seconds. With 0, no wave waits for its
   * slowest update: as soon as one update ends, the next instance's starts (a sliding window of
   * `maxConcurrency`). @default 0
   */
  readonly soakSeconds: number;
  /** Failed updates the rollout tolerates; one more halts it. @default 0 */
  readonly maxFailures: number;
}

export const DEFAULT_ROLLOUT_SETTINGS: RolloutSettings = {
  canary: 1,
  maxConcurrency: 5,
  soakSeconds: 0,
  maxFailures: 0,
};

/**
 * An object the instances' references (`getValueFrom`) read, as the rollout of its change names it:
 * the cluster it is on, its kind and where it is; never what it holds.
 */
export interface RolloutReference {
  readonly clusterId: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/**
 * The cluster a drain empties: every instance placed there is moved to another cluster (where its
 * plan's scheduler places it), as its plan says its instances move.
 */
export interface RolloutDrain {
  readonly clusterId: string;
}

/**
 * What starts (or redirects) a rollout: of a plan's revision, or (with `reference`) of a change
 * of an object the plan's instances read, to those of its instances that read it, or (with
 * `drain`) the drain of a cluster, whose "instances behind" are those placed on the cluster and
 * whose per-instance step is their move.
 */
export interface RolloutRequest {
  /**
   * The plan whose instances are rolled out; absent for a drain, which moves the instances of
   * every plan placed on its cluster (a drain is of a cluster, not of a plan).
   */
  readonly planId?: string;
  /**
   * The plan revision (its `status.specHash`) every instance is to end on; for a reference
   * rollout, the referenced object's resourceVersion every instance that reads it is to read; for
   * a drain, the cluster's id (a drain asked for again redirects the running one only with new
   * settings).
   */
  readonly revision: string;
  /** The object whose change is rolled out, for a reference rollout. */
  readonly reference?: RolloutReference;
  /** The cluster drained, for a drain. */
  readonly drain?: RolloutDrain;
  /** Overrides of the plan's (or the default) settings for this rollout. */
  readonly settings?: Partial<RolloutSettings>;
  /**
   * Who asked: `plan change` for an automatic rollout, `reference change` for the rollout of a
   * referenced object's change, else the admin's name.
   */
  readonly requestedBy: string;
}

/**
 * Where a rollout stands:
 * - `canary`, `waves`: updating; `soaking`: waiting between waves;
 * - `paused`: no update starts until resumed (those in flight finish);
 * - `halted`: more updates failed than allowed (no update starts after that; those in flight
 *   have ended); resumed, it tolerates `maxFailures` more; `aborted`: stopped by an admin;
 * - `done`: every instance is on the revision (or failed, within the limit); for a drain, no
 *   instance it could take is left on the cluster, none failed and none was unmovable;
 * - `blocked` (a drain only): it ended, but the cluster still holds instances it could not move:
 *   `unmovable` ones (their plan says they do not move) and `failed` ones (their move failed,
 *   within the limit). Drained again once they are dealt with, it takes those that can move.
 */
export type RolloutState =
  'canary' | 'waves' | 'soaking' | 'paused' | 'halted' | 'aborted' | 'done' | 'blocked';

/**
 * One instance in a rollout: `updated` (a rollout's update succeeded), `moved` (a drain's move
 * succeeded), `unmovable` (a drain does not move it: its plan says its instances do not move, the
 * description says why).
 */
export interface RolloutInstanceResult {
  readonly state: 'waiting' | 'in flight' | 'updated' | 'moved' | 'failed' | 'unmovable';
  /** Why it failed or cannot move, or what it waits for (another operation of the instance). */
  readonly description?: string;
}

/** A rollout's progress: the query's answer, and its memo. */
export interface RolloutProgress {
  /** The plan rolled out; absent for a drain. */
  readonly planId?: string;
  readonly revision: string;
  /** The object whose change is rolled out, for a reference rollout (`revision` is its resourceVersion). */
  readonly reference?: RolloutReference;
  /** The cluster drained, for a drain. */
  readonly drain?: RolloutDrain;
  readonly state: RolloutState;
  readonly settings: RolloutSettings;
  /** Instances taken: for a drain, those placed on the cluster (the unmovable ones among them). */
  readonly total: number;
  /** Instances updated (for a drain, moved). */
  readonly done: number;
  readonly failed: number;
  /** For a drain: instances on the cluster it does not move (their plan says they do not move). */
  readonly unmovable?: number;
  readonly inFlight: number;
  /**
   * 0 for the canary batch, then 1, 2, …: with a soak, each wave is a batch of at most
   * `maxConcurrency` updates that all end before the soak; without one, updates start as others
   * end, and wave n is the n-th `maxConcurrency` updates started after the canary batch.
   */
  readonly wave: number;
  /** Per instance id. */
  readonly results: Readonly<Record<string, RolloutInstanceResult>>;
  readonly requestedBy: string;
}

/** Workflow id of the rollout of a plan: one per plan and registry, so two changes never start two rollouts. */
export const rolloutWorkflowId = (namespace: string, planId: string): string =>
  `rollout/${namespace}/${planId}`;

/**
 * Workflow id of the rollout of a change of a referenced object to the instances of one plan that
 * read it: one per object and plan, so the events of one change start one rollout and a newer
 * change (a newer resourceVersion) redirects the running one, as a newer plan revision does.
 */
export const referenceRolloutWorkflowId = (namespace: string, planId: string, r: RolloutReference): string =>
  `rollout/${namespace}/reference/${planId}/${r.clusterId}/${r.apiVersion}/${r.kind}/${r.namespace}/${r.name}`;

/**
 * Workflow id of the drain of a cluster: one per cluster and registry, among the rollouts' ids, so
 * the rollouts' listing and steering take it too.
 */
export const drainWorkflowId = (namespace: string, clusterId: string): string =>
  `rollout/${namespace}/drain/${clusterId}`;

/** Workflow id of the rollout a request starts or redirects. */
export const rolloutWorkflowIdOf = (namespace: string, request: RolloutRequest): string =>
  request.drain
    ? drainWorkflowId(namespace, request.drain.clusterId)
    : request.reference
      ? referenceRolloutWorkflowId(namespace, request.planId ?? '', request.reference)
      : rolloutWorkflowId(namespace, request.planId ?? '');

/**
 * What a rollout is of: a plan's revision, a change of an object instances' references read, or
 * the drain of a cluster.
 */
export type RolloutKind = 'plan' | 'reference' | 'drain';

/** One rollout as the admin API lists it: its id (to steer it by), what it is of, and where it stood last. */
export interface RolloutSummary {
  /** The rollout's id: its workflow id. */
  readonly id: string;
  readonly kind: RolloutKind;
  /** Absent for a drain. */
  readonly planId?: string;
  readonly reference?: RolloutReference;
  readonly drain?: RolloutDrain;
  /** Whether its workflow runs (a halted or paused one runs; a done or aborted one does not). */
  readonly running: boolean;
  readonly startedAt?: string;
  /** Its progress as its memo last showed it (counts may be a wave old), without per-instance results. */
  readonly progress?: Omit<RolloutProgress, 'results'>;
}

/** Rollouts, as the admin API steers them. */
export interface RolloutControl {
  /** Starts the rollout of the plan's current revision, or redirects the running one to it. */
  start(planId: string, settings: Partial<RolloutSettings>, requestedBy: string): Promise<RolloutProgress>;
  /**
   * Pause, resume or abort the plan's running rollout; its progress once the command is taken.
   * @throws OsbError 404 when the plan never had a rollout; 409 (with why) when its state does not
   * allow the command: pause when paused, halted or ended; resume when neither paused nor halted;
   * abort when ended.
   */
  pause(planId: string): Promise<RolloutProgress>;
  resume(planId: string): Promise<RolloutProgress>;
  abort(planId: string): Promise<RolloutProgress>;
  /**
   * Cordons the cluster (`spec.schedulingDisabled`) and starts its drain: every instance placed
   * there moved to another cluster through the rollout machinery, the moves as a rollout's updates
   * go (canary, waves, `maxConcurrency`, soak, `maxFailures`); or redirects the running drain to
   * new settings. Its progress.
   * @throws OsbError 404 for a cluster that is not registered.
   */
  drain(clusterId: string, settings: Partial<RolloutSettings>, requestedBy: string): Promise<RolloutProgress>;
  /** Undefined when the plan has never had a rollout. */
  progress(planId: string): Promise<RolloutProgress | undefined>;
  /** The rollouts of plans and of referenced objects' changes, newest first, at most `limit`. */
  list(limit: number): Promise<RolloutSummary[]>;
  /**
   * Any rollout by its id (a {@link RolloutSummary}'s): its progress; undefined when there is none.
   * @throws OsbError 404 for an id that is no rollout's.
   */
  progressOf(rolloutId: string): Promise<RolloutProgress | undefined>;
  /**
   * Pause, resume or abort any rollout by its id, as {@link pause}, {@link resume} and {@link abort} do.
   * @throws OsbError 404 for an id that is no rollout's, or a rollout that never ran; 409 with why.
   */
  steer(rolloutId: string, command: 'pause' | 'resume' | 'abort'): Promise<RolloutProgress>;
}

/** A record of Service Fabrik's as adoption found it (docs/migrating-from-service-fabrik.md). */
export interface AdoptionItem {
  readonly kind: 'instance' | 'binding';
  readonly instanceId: string;
  /** For a binding. */
  readonly bindingId?: string;
  /** The record in the master. */
  readonly namespace: string;
  readonly name: string;
  /** Its `status.state` as Service Fabrik left it. */
  readonly state?: string;
  /** Why it cannot be adopted; absent for a record adopted (or, in a dry run, adoptable). */
  readonly reason?: string;
}

/**
 * What an adoption of a Service Fabrik landscape did, or (with `dryRun`) would do: the records
 * adopted in place, those it cannot adopt with the reason (left untouched), and how many records
 * it found adopted already.
 */
export interface AdoptionReport {
  readonly dryRun: boolean;
  readonly adopted: readonly AdoptionItem[];
  readonly refused: readonly AdoptionItem[];
  readonly alreadyAdopted: number;
}
