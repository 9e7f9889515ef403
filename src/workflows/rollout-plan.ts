/**
 * The decisions of a plan's rollout, apart from its steps: which instances it updates next (the
 * canary batch, then waves of at most `maxConcurrency`, or a sliding window when there is no soak),
 * when it soaks, when failures halt it, what a newer revision does to it, what pause, resume and
 * abort do (and when they are refused), and which claims it takes back when it stops. The rollout
 * workflow holds one {@link Rollout} and runs the steps these functions choose.
 *
 * Pure: no I/O, no clock, no Temporal; every function returns a new value.
 */
import {
  DEFAULT_ROLLOUT_SETTINGS,
  type RolloutInstanceResult,
  type RolloutProgress,
  type RolloutRequest,
  type RolloutSettings,
  type RolloutState,
} from '../admin/contract.js';
import type { RolloutTarget } from './messages.js';

/** What one run of the rollout workflow hands the next when it continues as new. */
export interface RolloutCarried {
  readonly progress: RolloutProgress;
  readonly paused: boolean;
  /** Failed updates tolerated before the rollout halts. @default the settings' `maxFailures` */
  readonly failureLimit?: number;
  /** Updates started in the sliding window, which number its waves. @default 0 */
  readonly startedInWindow?: number;
}

/** Everything a rollout's decisions read: the workflow's one piece of state. */
export interface Rollout {
  /** The request being rolled out: its plan, who asked, and the revision it goes to. */
  readonly request: RolloutRequest;
  readonly progress: RolloutProgress;
  /** Failed updates tolerated before the rollout halts: raised by each resume after a halt. */
  readonly failureLimit: number;
  /** Updates started in the sliding window, which number its waves. */
  readonly startedInWindow: number;
  /** No update starts until resumed. */
  readonly paused: boolean;
  /** No update starts, and the rollout ends once those in flight have. */
  readonly aborted: boolean;
  /** A revision (or settings) heard that supersedes the one rolling out, not yet taken up. */
  readonly newer?: RolloutRequest;
}

/** The states a rollout ends in (or, halted, waits in for an admin). */
export const FINAL_STATES: ReadonlySet<RolloutState> = new Set(['done', 'aborted', 'halted', 'blocked']);

/** The commands an admin steers a running rollout with. */
export type RolloutCommand = 'pause' | 'resume' | 'abort';

/** The settings of a request until the plan's are read: its own over the defaults. */
export const requestedSettings = (request: RolloutRequest): RolloutSettings => ({
  ...DEFAULT_ROLLOUT_SETTINGS,
  ...request.settings,
});

/** The progress of a rollout that has not started an update yet. */
export const freshProgress = (request: RolloutRequest, settings: RolloutSettings): RolloutProgress => ({
  ...(request.planId !== undefined ? { planId: request.planId } : {}),
  revision: request.revision,
  ...(request.reference ? { reference: request.reference } : {}),
  ...(request.drain ? { drain: request.drain } : {}),
  state: settings.canary > 0 ? 'canary' : 'waves',
  settings,
  total: 0,
  done: 0,
  failed: 0,
  inFlight: 0,
  wave: settings.canary > 0 ? 0 : 1,
  results: {},
  requestedBy: request.requestedBy,
});

/**
 * The rollout a run starts with: the carried one when it continues as new towards the same
 * revision; else a fresh one with the request's settings (keeping only whether it was paused).
 */
export function initialRollout(request: RolloutRequest, carried?: RolloutCarried): Rollout {
  const settings = carried?.progress.settings ?? requestedSettings(request);
  const carriedOn = carried && carried.progress.revision === request.revision ? carried : undefined;
  return {
    request,
    progress: carriedOn?.progress ?? freshProgress(request, settings),
    failureLimit: carriedOn?.failureLimit ?? settings.maxFailures,
    startedInWindow: carriedOn?.startedInWindow ?? 0,
    paused: carried?.paused ?? false,
    aborted: false,
  };
}

/** What a run hands the next. */
export const carriedOf = (rollout: Rollout): RolloutCarried => ({
  progress: rollout.progress,
  paused: rollout.paused,
  failureLimit: rollout.failureLimit,
  startedInWindow: rollout.startedInWindow,
});

/**
 * The counts of a progress from its per-instance results; `behind` is the number of instances
 * listed behind the revision that none of the results holds yet. The total never shrinks.
 */
export function counted(progress: RolloutProgress, behind = 0): RolloutProgress {
  const results = Object.values(progress.results);
  const done = results.filter((r) => r.state === 'updated' || r.state === 'moved').length;
  const failed = results.filter((r) => r.state === 'failed').length;
  const inFlight = results.filter((r) => r.state === 'in flight').length;
  const unmovable = results.filter((r) => r.state === 'unmovable').length;
  return {
    ...progress,
    done,
    failed,
    inFlight,
    ...(progress.drain ? { unmovable } : {}),
    total: Math.max(progress.total, done + failed + inFlight + unmovable + behind),
  };
}

/** The progress changed by `change`, counted again. */
export const withProgress = (rollout: Rollout, change: Partial<RolloutProgress>): Rollout => ({
  ...rollout,
  progress: counted({ ...rollout.progress, ...change }),
});

/** The rollout with one instance's result set, or taken out (an instance gone). */
export function withResult(
  rollout: Rollout,
  instanceId: string,
  result: RolloutInstanceResult | undefined,
): Rollout {
  const { [instanceId]: _old, ...others } = rollout.progress.results;
  return withProgress(rollout, { results: result ? { ...others, [instanceId]: result } : others });
}

/** The progress as the outside sees it: a paused or aborted rollout says so at once. */
export function seen(rollout: Rollout): RolloutProgress {
  const { progress } = rollout;
  if (FINAL_STATES.has(progress.state) && progress.state !== 'halted') return progress;
  if (rollout.aborted) return { ...progress, state: 'aborted' };
  if (rollout.paused && progress.state !== 'halted') return { ...progress, state: 'paused' };
  return progress;
}

/**
 * Why `command` is refused for a rollout that stands as `progress` says (as {@link seen} shows
 * it), or undefined when it is allowed. Pause: not when already paused, halted (it starts no
 * update already: resume or abort it) or ended. Resume: only when paused or halted. Abort: not
 * when ended.
 */
export function refusal(command: RolloutCommand, progress: RolloutProgress): string | undefined {
  const { reference: r, drain } = progress;
  const of = drain
    ? `The drain of cluster ${drain.clusterId}`
    : r
      ? `The rollout of the change of ${r.kind} ${r.namespace}/${r.name} (version ${progress.revision}) to the instances of plan ${progress.planId}`
      : `The rollout of plan ${progress.planId} to revision ${progress.revision}`;
  const { state } = progress;
  if (state === 'done') return `${of} is done; there is nothing to ${command}.`;
  if (state === 'blocked')
    return `${of} ended blocked (instances it could not move are left on the cluster); there is nothing to ${command}: drain the cluster again once they are dealt with.`;
  if (state === 'aborted') return `${of} was aborted; there is nothing to ${command}.`;
  switch (command) {
    case 'pause':
      if (state === 'paused') return `${of} is already paused.`;
      if (state === 'halted') return `${of} is halted: it starts no update until it is resumed or aborted.`;
      return undefined;
    case 'resume':
      return state === 'paused' || state === 'halted' ? undefined : `${of} is not paused (it is ${state}).`;
    case 'abort':
      return undefined;
  }
}

/**
 * The rollout after an admin's command (one {@link refusal} allows). A resume after a halt
 * tolerates `maxFailures` more failed updates, and goes on where it stopped.
 */
export function commanded(rollout: Rollout, command: RolloutCommand): Rollout {
  switch (command) {
    case 'pause':
      return { ...rollout, paused: true };
    case 'abort':
      return { ...rollout, aborted: true };
    case 'resume':
      if (rollout.progress.state !== 'halted') return { ...rollout, paused: false };
      return withProgress(
        {
          ...rollout,
          paused: false,
          failureLimit: rollout.progress.failed + rollout.progress.settings.maxFailures,
        },
        { state: rollout.progress.wave === 0 ? 'canary' : 'waves' },
      );
  }
}

/**
 * The rollout after it heard of a revision: a different revision, or new settings, supersede the
 * one rolling out (taken up once no update is in flight); the same revision again changes nothing.
 */
export const heard = (rollout: Rollout, next: RolloutRequest): Rollout =>
  next.revision !== rollout.progress.revision || next.settings ? { ...rollout, newer: next } : rollout;

/**
 * The rollout from the start towards `target`, for `request`: every count and result anew, and
 * the failures tolerated those of the target's settings. Pause and abort stay as they were.
 */
export function targeted(rollout: Rollout, request: RolloutRequest, target: RolloutTarget): Rollout {
  const towards = { ...request, revision: target.revision };
  return {
    ...rollout,
    request: towards,
    progress: freshProgress(towards, target.settings),
    failureLimit: target.settings.maxFailures,
    startedInWindow: 0,
  };
}

/** The newer request heard, and the rollout without it: taken up before the plan is read for it. */
export function takeNewer(rollout: Rollout): [RolloutRequest | undefined, Rollout] {
  const { newer, ...rest } = rollout;
  return [newer, rest];
}

/**
 * The rollout once the plan as it is now (`target`, read for the newer request `next`) decided
 * where it goes: {@link targeted} anew when that is another revision, or the request brings
 * settings; else it goes on as it was (revisions heard out of order or twice change nothing).
 */
export const retargeted = (rollout: Rollout, next: RolloutRequest, target: RolloutTarget): Rollout =>
  target.revision !== rollout.progress.revision || next.settings ? targeted(rollout, next, target) : rollout;

/** The rollout knowing that `behind` instances not in its results are behind its revision. */
export const withBehind = (rollout: Rollout, behind: number): Rollout => ({
  ...rollout,
  progress: counted(rollout.progress, behind),
});

/** More updates failed than tolerated. */
export const tooManyFailures = (rollout: Rollout): boolean => rollout.progress.failed > rollout.failureLimit;

/** Something the rollout waits for came: an abort, a pause or a newer revision. */
export const interrupted = (rollout: Rollout): boolean =>
  rollout.aborted || rollout.paused || !!rollout.newer;

/**
 * No update may start now (those in flight finish): the rollout stops, goes elsewhere, or its
 * history is long enough to continue as new.
 */
export const mustStop = (rollout: Rollout, historyLong: boolean): boolean =>
  interrupted(rollout) || tooManyFailures(rollout) || historyLong;

/**
 * What the rollout does next, with no update in flight:
 * - `retarget`: read where the plan is now, for the newer revision heard;
 * - `abort`: end, aborted;
 * - `wait`: paused, or halted, until an admin (or a newer revision) moves it on;
 * - `continue-as-new`: its history is long;
 * - `look`: read the instances behind, and update the next ones.
 */
export type RolloutMove = 'retarget' | 'abort' | 'wait' | 'continue-as-new' | 'look';

export function nextMove(rollout: Rollout, historyLong: boolean): RolloutMove {
  if (rollout.newer) return 'retarget';
  if (rollout.aborted) return 'abort';
  if (rollout.paused || rollout.progress.state === 'halted') return 'wait';
  if (historyLong) return 'continue-as-new';
  return 'look';
}

/** What a waiting rollout ({@link nextMove} `wait`) waits for. */
export const doneWaiting = (rollout: Rollout): boolean =>
  rollout.aborted || !!rollout.newer || (!rollout.paused && rollout.progress.state !== 'halted');

/**
 * The updates a rollout starts next: its instances in order, at most `concurrency` at once.
 * A `canary` batch and each `wave` all end before the rollout goes on (and soaks, when it has a
 * soak); a `window` starts the next instance's update as soon as one ends, over all it was given.
 */
export interface Batch {
  readonly kind: 'canary' | 'wave' | 'window';
  readonly instanceIds: readonly string[];
  readonly concurrency: number;
}

/**
 * The next batch of the instances `behind` the revision (oldest first, leaving out those whose
 * update failed), or undefined when none is left.
 */
export function nextBatch(rollout: Rollout, behind: readonly string[]): Batch | undefined {
  if (behind.length === 0) return undefined;
  const { settings, wave } = rollout.progress;
  if (wave === 0)
    return { kind: 'canary', instanceIds: behind.slice(0, settings.canary), concurrency: settings.canary };
  if (settings.soakSeconds > 0)
    return {
      kind: 'wave',
      instanceIds: behind.slice(0, settings.maxConcurrency),
      concurrency: settings.maxConcurrency,
    };
  return { kind: 'window', instanceIds: behind, concurrency: settings.maxConcurrency };
}

/** The state a rollout shows while a batch of `kind` runs. */
export const batchState = (kind: Batch['kind']): RolloutState => (kind === 'canary' ? 'canary' : 'waves');

/** The wave of the sliding window's `started`-th update: wave n holds the n-th `maxConcurrency` started. */
export const windowWave = (started: number, maxConcurrency: number): number =>
  1 + Math.floor((Math.max(started, 1) - 1) / maxConcurrency);

/** The rollout once the sliding window started one more update: its wave follows the count. */
export function startedInWindow(rollout: Rollout): Rollout {
  const started = rollout.startedInWindow + 1;
  return withProgress(
    { ...rollout, startedInWindow: started },
    { wave: windowWave(started, rollout.progress.settings.maxConcurrency) },
  );
}

/**
 * What follows a batch, of which `ended` updates ended:
 * - `look-again-later`: every instance taken was busy (none ended);
 * - `halt`: more updates failed than tolerated;
 * - `soak`: a canary batch or a wave ended and the rollout soaks `soakSeconds` before the next;
 * - `next`: on to the next batch at once.
 * The rollout returned carries the halted state, or the next wave.
 */
export function afterBatch(
  rollout: Rollout,
  batch: Batch,
  ended: number,
): { readonly rollout: Rollout; readonly then: 'look-again-later' | 'halt' | 'soak' | 'next' } {
  if (ended === 0) return { rollout, then: 'look-again-later' };
  if (tooManyFailures(rollout)) return { rollout: withProgress(rollout, { state: 'halted' }), then: 'halt' };
  if (batch.kind === 'window') return { rollout, then: 'next' };
  const next = withProgress(rollout, { wave: rollout.progress.wave + 1 });
  return rollout.progress.settings.soakSeconds > 0
    ? { rollout: withProgress(next, { state: 'soaking' }), then: 'soak' }
    : { rollout: next, then: 'next' };
}

/** The instances whose update failed in this rollout: not taken again. */
export const failedInstances = (rollout: Rollout): string[] =>
  Object.entries(rollout.progress.results)
    .filter(([, r]) => r.state === 'failed')
    .map(([id]) => id);

/**
 * The instances the rollout does not take again: those whose update failed; for a reference
 * rollout, those it updated too (an instance updated reads the object as it is then, which may be
 * newer than the version rolling out: it is not behind, and a newer change is a rollout of its own);
 * for a drain, those it moved or found unmovable too.
 */
export const settledInstances = (rollout: Rollout): string[] =>
  Object.entries(rollout.progress.results)
    .filter(
      ([, r]) =>
        r.state === 'failed' ||
        r.state === 'unmovable' ||
        r.state === 'moved' ||
        (rollout.request.reference !== undefined && r.state === 'updated'),
    )
    .map(([id]) => id);

/**
 * The rollout knowing which of its drain's instances do not move, and why (per instance id): each
 * one's result says so, once; instances it knew before keep theirs.
 */
export function withUnmovable(rollout: Rollout, unmovable: Readonly<Record<string, string>>): Rollout {
  const fresh = Object.entries(unmovable).filter(([id]) => !(id in rollout.progress.results));
  if (fresh.length === 0) return rollout;
  const results = { ...rollout.progress.results };
  for (const [id, description] of fresh) results[id] = { state: 'unmovable', description };
  return withProgress(rollout, { results });
}

/**
 * The state a rollout ends in once no instance is left behind: `done`; for a drain, `blocked`
 * while the cluster still holds instances it could not take (unmovable, or whose move failed).
 */
export function endState(rollout: Rollout): RolloutState {
  if (!rollout.request.drain) return 'done';
  const { failed, unmovable = 0 } = rollout.progress;
  return failed + unmovable > 0 ? 'blocked' : 'done';
}

/**
 * Which instances to read (and claim) ahead of the updates: the next `concurrency` in the queue
 * not read yet, so that a freed slot starts the next update at once.
 */
export const toReadAhead = (
  queue: readonly string[],
  read: ReadonlySet<string>,
  concurrency: number,
): string[] => [...new Set(queue)].filter((id) => !read.has(id)).slice(0, concurrency);

/** What a rollout read of an instance: an update it may start (claimed at `claimedAt`), or not. */
export type ReadAhead = { readonly claimedAt?: string } | { readonly busy: string } | { readonly gone: true };

/**
 * The claims to take back when a batch ends: those of the instances read ahead and claimed whose
 * update never started (the rollout paused, aborted, halted, or went elsewhere first).
 */
export const claimsToRelease = (
  unstarted: Iterable<readonly [string, ReadAhead]>,
): { instanceId: string; claimedAt: string }[] =>
  [...unstarted].flatMap(([instanceId, read]) =>
    'claimedAt' in read && read.claimedAt ? [{ instanceId, claimedAt: read.claimedAt }] : [],
  );
