/**
 * The rollout of a plan: brings every instance of the plan to the plan's revision, each through
 * the ordinary update workflow (so the OSB rules hold and a failed update rolls back). First a
 * canary batch, then waves of at most `maxConcurrency` updates, with a soak between them; more
 * failed updates than `maxFailures` halt it. An instance busy with an operation of its own or of a
 * binding waits and is taken again in a later wave, never skipped.
 *
 * One rollout workflow per plan (its id from the plan): a plan change arrives as a signal, and the
 * rollout goes on towards the plan's revision as the apiserver holds it then, superseding the one
 * rolling out (so signals heard out of order, or once per worker, still end on the newest). Pause, resume and abort are signals; the progress is a query and
 * the workflow's memo. It continues as new between waves before its history grows long.
 */
import {
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  ParentClosePolicy,
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
import {
  MEMO_KEY,
  WORKFLOW_TYPES,
  startingStatus,
  type InstanceRequest,
  type OperationStatus,
} from './messages.js';
import { operationSearchAttributes } from './search-attributes.js';

export const rolloutRevisionSignal = defineSignal<[RolloutRequest]>(ROLLOUT_MESSAGES.revision);
export const rolloutPauseSignal = defineSignal(ROLLOUT_MESSAGES.pause);
export const rolloutResumeSignal = defineSignal(ROLLOUT_MESSAGES.resume);
export const rolloutAbortSignal = defineSignal(ROLLOUT_MESSAGES.abort);
export const rolloutProgressQuery = defineQuery<RolloutProgress>(ROLLOUT_MESSAGES.progress);

/** The memo key of a rollout's progress (without the per-instance results). */
export const ROLLOUT_MEMO_KEY = 'rollout';

/** States a rollout ends in (or, halted, waits in for an admin). */
const FINAL_STATES = new Set(['done', 'aborted', 'halted']);

/** How long a wave that could start no update (every instance busy) waits before looking again. */
const BUSY_RETRY_MS = 5_000;

/** Events in one run before it continues as new, at the latest. */
const MAX_HISTORY_EVENTS = 8_000;

/** What one run hands the next. */
export interface RolloutCarried {
  readonly progress: RolloutProgress;
  readonly paused: boolean;
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

/** The results counted: done, failed and in flight, from the per-instance results. */
function counted(progress: RolloutProgress, behind: number): RolloutProgress {
  const results = Object.values(progress.results);
  const done = results.filter((r) => r.state === 'updated').length;
  const failed = results.filter((r) => r.state === 'failed').length;
  const inFlight = results.filter((r) => r.state === 'in flight').length;
  return { ...progress, done, failed, inFlight, total: Math.max(progress.total, done + failed + behind) };
}

export async function rolloutWorkflow(
  request: RolloutRequest,
  carried?: RolloutCarried,
): Promise<RolloutProgress> {
  let current = request;
  // Until the plan's settings are read, the defaults: a query is answered from the start.
  let settings: RolloutSettings = carried?.progress.settings ?? {
    ...DEFAULT_ROLLOUT_SETTINGS,
    ...request.settings,
  };
  let progress: RolloutProgress =
    carried && carried.progress.revision === request.revision ? carried.progress : fresh(request, settings);
  let paused = carried?.paused ?? false;
  let aborted = false;
  let resumed = false;
  let newer: RolloutRequest | undefined;

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

  /** Changes the progress and shows it in the memo (without the per-instance results). */
  const publish = (change: Partial<RolloutProgress>) => {
    progress = { ...progress, ...change };
    const { results: _results, ...summary } = seen();
    upsertMemo({ [ROLLOUT_MEMO_KEY]: summary });
  };
  const setResult = (instanceId: string, result: RolloutInstanceResult | undefined) => {
    const results = { ...progress.results };
    if (result) results[instanceId] = result;
    else delete results[instanceId];
    progress = { ...progress, results };
  };

  /** Updates one instance through the update workflow; false when it had to wait. */
  async function updateOne(instanceId: string): Promise<boolean> {
    const update = await steps.rolloutUpdate(instanceId, progress.revision);
    if ('gone' in update) {
      setResult(instanceId, undefined);
      return true;
    }
    if ('busy' in update) {
      setResult(instanceId, { state: 'waiting', description: update.busy });
      return false;
    }
    const { request: req, workflowId } = update;
    setResult(instanceId, { state: 'in flight' });
    publish({});
    try {
      const child = await startChild<(input: InstanceRequest) => Promise<OperationStatus>>(
        WORKFLOW_TYPES.update,
        {
          workflowId,
          args: [req],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          memo: { [MEMO_KEY]: startingStatus('update', req) },
          typedSearchAttributes: operationSearchAttributes('update', req),
        },
      );
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
    }
  }

  if (!carried) {
    // The plan as it is now decides the revision: a request may have been overtaken already.
    const target = await steps.rolloutTarget(request.planId, request.revision, request.settings);
    current = { ...request, revision: target.revision };
    settings = target.settings;
    progress = fresh(current, settings);
  }
  for (;;) {
    if (newer) {
      // The plan changed again (or new settings came): the rollout goes on towards the plan's
      // revision now. Revisions heard out of order or twice change nothing.
      const next = newer;
      newer = undefined;
      const target = await steps.rolloutTarget(next.planId, next.revision, next.settings);
      if (target.revision !== progress.revision || next.settings) {
        current = { ...next, revision: target.revision };
        settings = target.settings;
        progress = fresh(current, settings);
        publish({});
      }
    }
    if (aborted) {
      publish({ state: 'aborted' });
      return progress;
    }
    if (paused) {
      publish({});
      await condition(() => !paused || aborted || !!newer);
      continue;
    }
    if (progress.state === 'halted') {
      publish({});
      resumed = false;
      await condition(() => resumed || aborted || !!newer);
      if (resumed && !aborted && !newer) publish({ state: progress.wave === 0 ? 'canary' : 'waves' });
      continue;
    }
    const failed = new Set(
      Object.entries(progress.results)
        .filter(([, r]) => r.state === 'failed')
        .map(([id]) => id),
    );
    const behind = (await steps.instancesBehind(current.planId, progress.revision)).filter(
      (id) => !failed.has(id),
    );
    progress = counted(progress, behind.length);
    if (behind.length === 0) {
      if (newer) continue;
      publish({ state: 'done' });
      return progress;
    }
    const canary = progress.wave === 0;
    const batch = behind.slice(0, canary ? settings.canary : settings.maxConcurrency);
    publish({ state: canary ? 'canary' : 'waves' });
    const started = await Promise.all(batch.map(updateOne));
    progress = counted(progress, behind.length - started.filter(Boolean).length);
    if (!started.some(Boolean)) {
      // Every instance of the wave is busy: look again in a moment.
      publish({});
      await condition(() => aborted || paused || !!newer, BUSY_RETRY_MS);
      continue;
    }
    if (progress.failed > settings.maxFailures) {
      publish({ state: 'halted' });
      continue;
    }
    publish({ wave: progress.wave + 1 });
    if (settings.soakSeconds > 0) {
      publish({ state: 'soaking' });
      await condition(() => aborted || paused || !!newer, settings.soakSeconds * 1000);
    }
    const historyLong =
      workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS;
    if (historyLong && !newer) {
      await continueAsNew<typeof rolloutWorkflow>(current, { progress, paused });
    }
  }
}
