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

/** What starts (or redirects) the rollout of a plan. */
export interface RolloutRequest {
  readonly planId: string;
  /** The plan revision (its `status.specHash`) every instance is to end on. */
  readonly revision: string;
  /** Overrides of the plan's (or the default) settings for this rollout. */
  readonly settings?: Partial<RolloutSettings>;
  /** Who asked: `plan change` for an automatic rollout, else the admin's name. */
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
}
