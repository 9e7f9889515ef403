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
 * What starts (or redirects) a rollout: of a plan's revision, or (with `reference`) of a change
 * of an object the plan's instances read, to those of its instances that read it.
 */
export interface RolloutRequest {
  readonly planId: string;
  /**
   * The plan revision (its `status.specHash`) every instance is to end on; for a reference
   * rollout, the referenced object's resourceVersion every instance that reads it is to read.
   */
  readonly revision: string;
  /** The object whose change is rolled out, for a reference rollout. */
  readonly reference?: RolloutReference;
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
 * - `done`: every instance is on the revision (or failed, within the limit).
 */
export type RolloutState = 'canary' | 'waves' | 'soaking' | 'paused' | 'halted' | 'aborted' | 'done';

/** One instance in a rollout. */
export interface RolloutInstanceResult {
  readonly state: 'waiting' | 'in flight' | 'updated' | 'failed';
  /** Why it failed, or what it waits for (another operation of the instance). */
  readonly description?: string;
}

/** A rollout's progress: the query's answer, and its memo. */
export interface RolloutProgress {
  readonly planId: string;
  readonly revision: string;
  /** The object whose change is rolled out, for a reference rollout (`revision` is its resourceVersion). */
  readonly reference?: RolloutReference;
  readonly state: RolloutState;
  readonly settings: RolloutSettings;
  readonly total: number;
  readonly done: number;
  readonly failed: number;
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

/** Workflow id of the rollout a request starts or redirects. */
export const rolloutWorkflowIdOf = (namespace: string, request: RolloutRequest): string =>
  request.reference
    ? referenceRolloutWorkflowId(namespace, request.planId, request.reference)
    : rolloutWorkflowId(namespace, request.planId);

/** What a rollout is of: a plan's revision, or a change of an object instances' references read. */
export type RolloutKind = 'plan' | 'reference';

/** One rollout as the admin API lists it: its id (to steer it by), what it is of, and where it stood last. */
export interface RolloutSummary {
  /** The rollout's id: its workflow id. */
  readonly id: string;
  readonly kind: RolloutKind;
  readonly planId: string;
  readonly reference?: RolloutReference;
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
