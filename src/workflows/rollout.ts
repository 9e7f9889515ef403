/**
 * The rollout of a plan: brings every instance of the plan to the plan's revision, each through
 * the ordinary update workflow (so the OSB rules hold and a failed update rolls back). First a
 * canary batch, all of whose updates end before any other starts; then at most `maxConcurrency`
 * updates at once. With a soak, they go in waves: each wave's updates all end, then the rollout
 * soaks. Without one, they go in a sliding window: as soon as one update ends, the next instance's
 * starts. More failed updates than `maxFailures` halt it: no update starts after that, and those in
 * flight finish. An instance busy with an operation of its own or of a binding waits and is taken
 * again later, never skipped.
 *
 * One rollout workflow per plan (its id from the plan): a plan change arrives as a signal, and the
 * rollout goes on towards the plan's revision as the apiserver holds it then, superseding the one
 * rolling out (so signals heard out of order, or once per worker, still end on the newest). Pause,
 * resume and abort are signals; the progress is a query and the workflow's memo. Before its
 * history grows long it continues as new, always with no update in flight: a run can wait for the
 * result of only the children it started itself.
 */
import {
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  DEFAULT_ROLLOUT_SETTINGS,
  ROLLOUT_MESSAGES,
  type RolloutInstanceResult,
  type RolloutProgress,
  type RolloutRequest,
  type RolloutSettings,
} from '../admin/contract.js';
import type { RolloutActivities } from '../activities/index.js';
import type { RolloutUpdate } from '../activities/rollouts.js';
import { WORKFLOW_TYPES, type InstanceRequest, type OperationStatus } from './messages.js';
import { operationStartOptions } from './operation-start.js';

export const rolloutRevisionSignal = defineSignal<[RolloutRequest]>(ROLLOUT_MESSAGES.revision);
export const rolloutPauseSignal = defineSignal(ROLLOUT_MESSAGES.pause);
export const rolloutResumeSignal = defineSignal(ROLLOUT_MESSAGES.resume);
export const rolloutAbortSignal = defineSignal(ROLLOUT_MESSAGES.abort);
export const rolloutProgressQuery = defineQuery<RolloutProgress>(ROLLOUT_MESSAGES.progress);

/**
 * The memo key of a rollout's progress (without the per-instance results), for the Temporal UI:
 * written as its state, wave or revision changes (each write is an event and a visibility update),
 * so its counts may be a wave old; the query answers with the live ones.
 */
export const ROLLOUT_MEMO_KEY = 'rollout';

/** States a rollout ends in (or, halted, waits in for an admin). */
const FINAL_STATES = new Set(['done', 'aborted', 'halted']);

/** How long a rollout that could start no update (every instance busy) waits before looking again. */
const BUSY_RETRY_MS = 5_000;
/** How many of the instances behind a rollout reads at once (the oldest first). */
const BEHIND_PAGE = 500;

/** Events in one run before it continues as new, at the latest. */
const MAX_HISTORY_EVENTS = 8_000;

/** What one run hands the next. */
export interface RolloutCarried {
  readonly progress: RolloutProgress;
  readonly paused: boolean;
  /** Failed updates tolerated before the rollout halts. @default the settings' `maxFailures` */
  readonly failureLimit?: number;
  /** Updates started in the sliding window, which number its waves. @default 0 */
  readonly startedInWindow?: number;
}

const steps = proxyActivities<RolloutActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '30 s' },
});

const fresh = (request: RolloutRequest, settings: RolloutSettings): RolloutProgress => ({
  planId: request.planId,
  revision: request.revision,
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
 * The results counted: done, failed and in flight, from the per-instance results; `behind` is the
 * number of instances listed behind the revision that none of these counts holds yet.
 */
function counted(progress: RolloutProgress, behind = 0): RolloutProgress {
  const results = Object.values(progress.results);
  const done = results.filter((r) => r.state === 'updated').length;
  const failed = results.filter((r) => r.state === 'failed').length;
  const inFlight = results.filter((r) => r.state === 'in flight').length;
  return {
    ...progress,
    done,
    failed,
    inFlight,
    total: Math.max(progress.total, done + failed + inFlight + behind),
  };
}

/** The wave of the sliding window's `started`-th update: wave n holds the n-th `maxConcurrency` started. */
const windowWave = (started: number, maxConcurrency: number): number =>
  1 + Math.floor((Math.max(started, 1) - 1) / maxConcurrency);

export async function rolloutWorkflow(
  request: RolloutRequest,
  carried?: RolloutCarried,
): Promise<RolloutProgress> {
  const carriedOn = carried && carried.progress.revision === request.revision ? carried : undefined;
  let current = request;
  // Until the plan's settings are read, the defaults: a query is answered from the start.
  let settings: RolloutSettings = carried?.progress.settings ?? {
    ...DEFAULT_ROLLOUT_SETTINGS,
    ...request.settings,
  };
  let progress: RolloutProgress = carriedOn?.progress ?? fresh(request, settings);
  let failureLimit = carriedOn?.failureLimit ?? settings.maxFailures;
  let startedInWindow = carriedOn?.startedInWindow ?? 0;
  let paused = carried?.paused ?? false;
  let aborted = false;
  let resumed = false;
  let newer: RolloutRequest | undefined;
  // Rollouts started by earlier code read each instance just before its update, unclaimed.
  const readsAhead = patched('rollout-reads-ahead');

  setHandler(rolloutRevisionSignal, (next) => {
    if (next.revision !== progress.revision || next.settings) newer = next;
  });
  setHandler(rolloutPauseSignal, () => {
    paused = true;
  });
  setHandler(rolloutResumeSignal, () => {
    paused = false;
    resumed = true;
  });
  setHandler(rolloutAbortSignal, () => {
    aborted = true;
  });
  /** The progress as the outside sees it: a paused rollout says so. */
  const seen = (): RolloutProgress =>
    paused && !FINAL_STATES.has(progress.state) ? { ...progress, state: 'paused' } : progress;
  setHandler(rolloutProgressQuery, seen);

  let memoOf: Pick<RolloutProgress, 'revision' | 'state' | 'wave'> | undefined;
  /** Changes the progress, counts the results again and, at a new stage, shows it in the memo. */
  const publish = (change: Partial<RolloutProgress> = {}) => {
    progress = counted({ ...progress, ...change });
    const { results: _results, ...summary } = seen();
    if (
      memoOf?.revision === summary.revision &&
      memoOf.state === summary.state &&
      memoOf.wave === summary.wave
    )
      return;
    memoOf = summary;
    upsertMemo({ [ROLLOUT_MEMO_KEY]: summary });
  };
  const setResult = (instanceId: string, result: RolloutInstanceResult | undefined) => {
    const results = { ...progress.results };
    if (result) results[instanceId] = result;
    else delete results[instanceId];
    progress = { ...progress, results };
  };
  /** Makes `target` the rollout's revision and settings, from the start. */
  const retarget = (next: RolloutRequest, target: { revision: string; settings: RolloutSettings }) => {
    current = { ...next, revision: target.revision };
    settings = target.settings;
    progress = fresh(current, settings);
    failureLimit = settings.maxFailures;
    startedInWindow = 0;
  };

  const tooManyFailures = () => progress.failed > failureLimit;
  const historyLong = () =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS;
  /** No update may start now (those in flight finish): the rollout stops, or goes elsewhere. */
  const mustStop = () => aborted || paused || !!newer || tooManyFailures() || historyLong();

  /**
   * Updates one instance through the update workflow, as `update` (read before) says: true once it
   * ended (or the instance is gone); false when it has to wait, or the rollout stopped before it
   * started.
   */
  async function updateOne(
    instanceId: string,
    update: RolloutUpdate,
    onStarted: () => void,
  ): Promise<boolean> {
    if ('gone' in update) {
      setResult(instanceId, undefined);
      publish();
      return true;
    }
    if ('busy' in update) {
      setResult(instanceId, { state: 'waiting', description: update.busy });
      publish();
      return false;
    }
    const { request: req, workflowId } = update;
    setResult(instanceId, { state: 'in flight' });
    publish();
    try {
      const child = await startChild<(input: InstanceRequest) => Promise<OperationStatus>>(
        WORKFLOW_TYPES.update,
        {
          workflowId,
          args: [req],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          ...operationStartOptions('update', req),
        },
      );
      onStarted();
      const status = await child.result();
      setResult(
        instanceId,
        status.state === 'succeeded'
          ? { state: 'updated' }
          : { state: 'failed', description: status.description ?? 'The update failed' },
      );
      return true;
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        setResult(instanceId, {
          state: 'waiting',
          description: 'waiting for another operation of the instance to end',
        });
        return false;
      }
      setResult(instanceId, {
        state: 'failed',
        description: err instanceof Error ? err.message : String(err),
      });
      return true;
    } finally {
      publish();
    }
  }

  /**
   * Updates the instances in order, at most `concurrency` at once: as soon as one update ends, the
   * next instance's starts, until none is left or the rollout must stop. While the window is full,
   * the next instances are read (and claimed) ahead, so that a freed slot starts the next update at
   * once. Resolves once every update it started has ended (none is left in flight) and the claims
   * of those read ahead but not started are taken back, with how many ended.
   */
  async function updateAll(
    instanceIds: readonly string[],
    concurrency: number,
    onStarted: () => void = () => undefined,
  ): Promise<number> {
    const queue = [...instanceIds];
    const ahead = new Map<string, RolloutUpdate>();
    let reading: Promise<void> | undefined;
    /** Reads `first` and the instances after it in the queue not read yet, as many as the window holds. */
    const readFrom = (first: string): Promise<void> =>
      (reading ??= (async () => {
        try {
          if (!readsAhead) {
            ahead.set(first, await steps.rolloutUpdate(first, progress.revision));
            return;
          }
          const ids = [first, ...queue].filter((id) => !ahead.has(id)).slice(0, concurrency);
          for (const [id, update] of await steps.rolloutUpdates(ids, progress.revision))
            ahead.set(id, update);
        } finally {
          reading = undefined;
        }
      })());
    const readAheadOfWindow = () => {
      const next = queue.slice(0, concurrency);
      if (readsAhead && next.length > 0 && !next.every((id) => ahead.has(id)) && !mustStop())
        void readFrom(next.find((id) => !ahead.has(id))!);
    };
    let ended = 0;
    const slot = async () => {
      while (queue.length > 0 && !mustStop()) {
        const instanceId = queue.shift()!;
        while (!ahead.has(instanceId)) await readFrom(instanceId);
        const update = ahead.get(instanceId)!;
        ahead.delete(instanceId);
        // A pause, an abort or a failure may have come while the instance was read.
        if (mustStop()) {
          ahead.set(instanceId, update);
          break;
        }
        const started = () => {
          onStarted();
          readAheadOfWindow();
        };
        if (await updateOne(instanceId, update, started)) ended++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, slot));
    await reading;
    const unstarted = [...ahead].flatMap(([instanceId, update]) =>
      'claimedAt' in update && update.claimedAt ? [{ instanceId, claimedAt: update.claimedAt }] : [],
    );
    if (unstarted.length > 0) await steps.releaseRolloutClaims(unstarted);
    return ended;
  }

  /** The sliding window numbers its waves by the updates it started. */
  const countWindowStart = () => {
    startedInWindow++;
    publish({ wave: windowWave(startedInWindow, settings.maxConcurrency) });
  };

  if (!carried) {
    // The plan as it is now decides the revision: a request may have been overtaken already.
    retarget(request, await steps.rolloutTarget(request.planId, request.revision, request.settings));
  }
  for (;;) {
    // Here no update is in flight: each step below waits for those it started.
    if (newer) {
      // The plan changed again (or new settings came): the rollout goes on towards the plan's
      // revision now. Revisions heard out of order or twice change nothing.
      const next = newer;
      newer = undefined;
      const target = await steps.rolloutTarget(next.planId, next.revision, next.settings);
      if (target.revision !== progress.revision || next.settings) {
        retarget(next, target);
        publish();
      }
    }
    if (aborted) {
      publish({ state: 'aborted' });
      return progress;
    }
    if (paused) {
      publish();
      await condition(() => !paused || aborted || !!newer);
      continue;
    }
    if (progress.state === 'halted') {
      publish();
      resumed = false;
      await condition(() => resumed || aborted || !!newer);
      if (resumed && !aborted && !newer) {
        // Resumed after a halt: it goes on, tolerating as many failures again.
        failureLimit = progress.failed + settings.maxFailures;
        publish({ state: progress.wave === 0 ? 'canary' : 'waves' });
      }
      continue;
    }
    if (historyLong() && !newer) {
      await continueAsNew<typeof rolloutWorkflow>(current, {
        progress,
        paused,
        failureLimit,
        startedInWindow,
      });
    }
    const failed = new Set(
      Object.entries(progress.results)
        .filter(([, r]) => r.state === 'failed')
        .map(([id]) => id),
    );
    // The instances behind, a page at a time: an update takes an instance off the list, so the
    // next look finds the next page.
    const page = patched('rollout-reads-behind-a-page-at-a-time')
      ? await steps.firstInstancesBehind(current.planId, progress.revision, BEHIND_PAGE, [...failed])
      : undefined;
    const behind =
      page?.first ??
      (await steps.instancesBehind(current.planId, progress.revision)).filter((id) => !failed.has(id));
    progress = counted(progress, page?.total ?? behind.length);
    if (behind.length === 0) {
      if (newer) continue;
      publish({ state: 'done' });
      return progress;
    }

    const canary = progress.wave === 0;
    const inWaves = canary || settings.soakSeconds > 0;
    publish({ state: canary ? 'canary' : 'waves' });
    const ended = canary
      ? await updateAll(behind.slice(0, settings.canary), settings.canary)
      : inWaves
        ? await updateAll(behind.slice(0, settings.maxConcurrency), settings.maxConcurrency)
        : await updateAll(behind, settings.maxConcurrency, countWindowStart);

    if (ended === 0) {
      // Every instance taken was busy: look again in a moment.
      await condition(() => aborted || paused || !!newer, BUSY_RETRY_MS);
      continue;
    }
    if (tooManyFailures()) {
      publish({ state: 'halted' });
      continue;
    }
    if (inWaves) {
      publish({ wave: progress.wave + 1 });
      if (settings.soakSeconds > 0) {
        publish({ state: 'soaking' });
        await condition(() => aborted || paused || !!newer, settings.soakSeconds * 1000);
      }
    }
  }
}
