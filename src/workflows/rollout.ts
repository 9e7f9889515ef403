/**
 * The rollout of a plan: brings every instance of the plan to the plan's revision (or, the rollout
 * of a referenced object's change, every instance of the plan that reads the object to read its
 * new version: `request.reference`), each through
 * the ordinary update workflow (so the OSB rules hold and a failed update rolls back). First a
 * canary batch, all of whose updates end before any other starts; then at most `maxConcurrency`
 * updates at once. With a soak, they go in waves: each wave's updates all end, then the rollout
 * soaks. Without one, they go in a sliding window: as soon as one update ends, the next instance's
 * starts. More failed updates than `maxFailures` halt it: no update starts after that, and those in
 * flight finish. An instance busy with an operation of its own or of a binding waits and is taken
 * again later, never skipped.
 *
 * One rollout workflow per plan (its id from the plan), and one per referenced object and plan: a
 * plan change (an object's change) arrives as a signal, and the rollout goes on towards the plan's
 * revision (the object's resourceVersion) as the apiserver holds it then, superseding the one
 * rolling out (so signals heard out of order, or once per worker, still end on the newest). Pause,
 * resume and abort are Updates whose validators refuse what the rollout's state does not allow;
 * the progress is a query and the workflow's memo. Before its history grows long it continues as
 * new, always with no update in flight: a run can wait for the result of only the children it
 * started itself.
 *
 * The drain of a cluster (`request.drain`) is a rollout too: its instances behind are those placed
 * on the cluster, oldest first, and its step for each is the move workflow (under the instance's
 * workflow id, claimed for `move` as an update is claimed), the target left to the plan's
 * scheduler. It cordons the cluster first. Instances whose plan says they do not move are listed
 * in its results as `unmovable`, with why, and never moved; while any such instance (or one whose
 * move failed) is left, the drain ends `blocked`, not `done`. Its steps write the cluster's
 * `Drained` condition as it goes.
 *
 * The decisions (which instances next, when to soak or halt, what a command or a newer revision
 * does) are rollout-plan.ts's; this file runs the steps they choose.
 */
import {
  ApplicationFailure,
  condition,
  continueAsNew,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { RolloutInstanceResult, RolloutProgress, RolloutRequest } from '../admin/contract.js';
import type { DrainActivities, RolloutActivities } from '../activities/index.js';
import type { DrainMove } from '../activities/drains.js';
import type { RolloutUpdate } from '../activities/rollouts.js';
import {
  MOVE_WORKFLOW_TYPE,
  ROLLOUT_MEMO_KEY,
  ROLLOUT_REFUSED,
  WORKFLOW_TYPES,
  rolloutAbortUpdate,
  rolloutPauseUpdate,
  rolloutProgressQuery,
  rolloutResumeUpdate,
  rolloutRevisionSignal,
  type InstanceRequest,
  type MoveRequest,
  type OperationStatus,
  type RolloutLimits,
  type RolloutTarget,
} from './messages.js';
import {
  afterBatch,
  batchState,
  carriedOf,
  claimsToRelease,
  commanded,
  doneWaiting,
  endState,
  heard,
  initialRollout,
  interrupted,
  mustStop,
  nextBatch,
  nextMove,
  refusal,
  retargeted,
  seen,
  settledInstances,
  startedInWindow,
  takeNewer,
  targeted,
  toReadAhead,
  withBehind,
  withProgress,
  withResult,
  withUnmovable,
  type Batch,
  type Rollout,
  type RolloutCarried,
  type RolloutCommand,
} from './rollout-plan.js';
import { operationStartOptions } from './operation-start.js';
import { movesToCurrentVersion } from './versioning.js';

export type { RolloutCarried } from './rollout-plan.js';

const DEFAULT_LIMITS: Required<RolloutLimits> = {
  maxHistoryEvents: 8_000,
  busyRetryMs: 5_000,
  behindPage: 500,
};

const steps = proxyActivities<RolloutActivities & DrainActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '30 s' },
});

const COMMANDS = [
  ['pause', rolloutPauseUpdate],
  ['resume', rolloutResumeUpdate],
  ['abort', rolloutAbortUpdate],
] as const;

export async function rolloutWorkflow(
  request: RolloutRequest,
  carried?: RolloutCarried,
  limits: RolloutLimits = {},
): Promise<RolloutProgress> {
  const { maxHistoryEvents, busyRetryMs, behindPage } = { ...DEFAULT_LIMITS, ...limits };
  // Until the plan's settings are read, the request's: a query is answered from the start.
  let rollout: Rollout = initialRollout(request, carried);

  setHandler(rolloutRevisionSignal, (next) => {
    rollout = heard(rollout, next);
  });
  for (const [command, update] of COMMANDS) {
    setHandler(
      update,
      () => {
        rollout = commanded(rollout, command);
        return seen(rollout);
      },
      { validator: () => refuseUnless(command, rollout) },
    );
  }
  setHandler(rolloutProgressQuery, () => seen(rollout));

  let memoOf: Pick<RolloutProgress, 'revision' | 'state' | 'wave'> | undefined;
  /** Shows the rollout in the memo when it reached a new stage. */
  const publish = () => {
    const { results: _results, ...summary } = seen(rollout);
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
    rollout = withResult(rollout, instanceId, result);
    publish();
  };
  const historyLong = () =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > maxHistoryEvents;
  /** No update may start now (those in flight finish). */
  const stopping = () => mustStop(rollout, historyLong());

  /**
   * Updates one instance through the update workflow (a drain: moves it through the move
   * workflow), as `update` (read before) says: true once it ended (or the instance is gone);
   * false when it has to wait.
   */
  async function updateOne(
    instanceId: string,
    update: RolloutUpdate | DrainMove,
    onStarted: () => void,
  ): Promise<boolean> {
    if ('gone' in update) {
      setResult(instanceId, undefined);
      return true;
    }
    if ('busy' in update) {
      setResult(instanceId, { state: 'waiting', description: update.busy });
      return false;
    }
    const { workflowId, request: req } = update;
    // A drain's move request says why it moves; an update request never has a reason.
    const moving = 'reason' in req;
    setResult(instanceId, { state: 'in flight' });
    try {
      const options = { workflowId, parentClosePolicy: ParentClosePolicy.ABANDON };
      const child = moving
        ? await startChild<(input: MoveRequest) => Promise<OperationStatus>>(MOVE_WORKFLOW_TYPE, {
            ...options,
            args: [req],
            ...operationStartOptions('move', req),
          })
        : await startChild<(input: InstanceRequest) => Promise<OperationStatus>>(WORKFLOW_TYPES.update, {
            ...options,
            args: [req],
            ...operationStartOptions('update', req),
          });
      onStarted();
      const status = await child.result();
      setResult(
        instanceId,
        status.state === 'succeeded'
          ? { state: moving ? 'moved' : 'updated' }
          : {
              state: 'failed',
              description: status.description ?? (moving ? 'The move failed' : 'The update failed'),
            },
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

  /**
   * Runs a batch: its instances in order, at most `concurrency` updates at once, each slot taking
   * the next instance as soon as its update ends, until none is left or the rollout must stop.
   * While the slots are full, the next instances are read (and claimed) ahead, so that a freed
   * slot starts the next update at once. Resolves once every update it started has ended and the
   * claims of those read ahead but not started are taken back, with how many ended.
   */
  async function runBatch({ kind, instanceIds, concurrency }: Batch): Promise<number> {
    const queue = [...instanceIds];
    const ahead = new Map<string, RolloutUpdate | DrainMove>();
    let reading: Promise<void> | undefined;
    /** Reads `first` and the instances after it in the queue not read yet, as many as a batch runs at once. */
    const readFrom = (first: string): Promise<void> =>
      (reading ??= (async () => {
        try {
          const ids = toReadAhead([first, ...queue], new Set(ahead.keys()), concurrency);
          const { drain } = rollout.request;
          const read = drain
            ? await steps.drainMoves(ids, drain.clusterId, rollout.request.requestedBy)
            : await steps.rolloutUpdates(ids, rollout.progress.revision, rollout.request.reference);
          for (const [id, update] of read) ahead.set(id, update);
        } finally {
          reading = undefined;
        }
      })());
    const readAheadOfSlots = () => {
      const next = toReadAhead(queue, new Set(ahead.keys()), concurrency);
      if (next.length > 0 && !stopping()) void readFrom(next[0]!);
    };
    const started = () => {
      if (kind === 'window') {
        rollout = startedInWindow(rollout);
        publish();
      }
      readAheadOfSlots();
    };
    let ended = 0;
    const slot = async () => {
      while (queue.length > 0 && !stopping()) {
        const instanceId = queue.shift()!;
        while (!ahead.has(instanceId)) await readFrom(instanceId);
        // A pause, an abort or a failure may have come while the instance was read: its claim is
        // taken back below.
        if (stopping()) break;
        const update = ahead.get(instanceId)!;
        ahead.delete(instanceId);
        if (await updateOne(instanceId, update, started)) ended++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, slot));
    await reading;
    const unstarted = claimsToRelease(ahead);
    if (unstarted.length > 0)
      await (rollout.request.drain
        ? steps.releaseDrainClaims(unstarted)
        : steps.releaseRolloutClaims(unstarted));
    return ended;
  }

  /** Where the request goes, as the plan (for a drain: the cluster, which it cordons) says now. */
  const targetOf = (req: RolloutRequest): Promise<RolloutTarget> =>
    req.drain
      ? steps.startDrain(req.drain.clusterId, req.settings)
      : steps.rolloutTarget(req.planId ?? '', req.revision, req.settings, req.reference);

  /** A drain writes its cluster's `Drained` condition as it goes. */
  const showDrain = async () => {
    const { drain } = rollout.request;
    if (drain) await steps.recordDrained(drain.clusterId, seen(rollout));
  };

  // The plan as it is now decides the revision: a request may have been overtaken already. A
  // command may come while the plan is read: the rollout is taken as it is once the read ends.
  if (!carried) {
    if (patched('rollout-commands-while-targeting')) {
      const target = await targetOf(request);
      rollout = targeted(rollout, request, target);
    } else {
      rollout = targeted(rollout, request, await targetOf(request));
    }
    await showDrain();
  }
  for (;;) {
    // Here no update is in flight: each step below waits for those it started.
    switch (nextMove(rollout, historyLong())) {
      case 'retarget': {
        // The plan changed again (or new settings came): the rollout goes on towards the plan's
        // revision now.
        const [next, rest] = takeNewer(rollout);
        rollout = rest;
        if (!next) continue;
        const target = await targetOf(next);
        rollout = retargeted(rollout, next, target);
        publish();
        continue;
      }
      case 'abort':
        rollout = withProgress(rollout, { state: 'aborted' });
        publish();
        await showDrain();
        return rollout.progress;
      case 'wait':
        // Paused, or halted: until an admin resumes or aborts it, or a newer revision comes.
        publish();
        await showDrain();
        await condition(() => doneWaiting(rollout));
        continue;
      case 'continue-as-new':
        return continueAsNew<typeof rolloutWorkflow>(rollout.request, carriedOf(rollout), limits);
      case 'look':
        break;
    }

    // The instances behind, a page at a time: an update takes an instance off the list, so the
    // next look finds the next page.
    const { drain } = rollout.request;
    let behind;
    if (drain) {
      const on = await steps.firstInstancesOnCluster(drain.clusterId, behindPage, settledInstances(rollout));
      rollout = withUnmovable(rollout, on.unmovable);
      behind = on;
    } else
      behind = await steps.firstInstancesBehind(
        rollout.request.planId ?? '',
        rollout.progress.revision,
        behindPage,
        settledInstances(rollout),
        rollout.request.reference,
      );
    rollout = withBehind(rollout, behind.total);
    const batch = nextBatch(rollout, behind.first);
    if (!batch) {
      if (rollout.newer) continue;
      rollout = withProgress(rollout, { state: endState(rollout) });
      publish();
      await showDrain();
      return rollout.progress;
    }

    rollout = withProgress(rollout, { state: batchState(batch.kind) });
    publish();
    await showDrain();
    const ended = await runBatch(batch);
    const after = afterBatch(rollout, batch, ended);
    rollout = after.rollout;
    publish();
    await showDrain();
    if (after.then === 'look-again-later') await condition(() => interrupted(rollout), busyRetryMs);
    if (after.then === 'soak')
      await condition(() => interrupted(rollout), rollout.progress.settings.soakSeconds * 1000);
  }
}

/** The validator of a rollout command: refuses, with why, what the rollout's state does not allow. */
function refuseUnless(command: RolloutCommand, rollout: Rollout): void {
  const why = refusal(command, seen(rollout));
  if (why) throw ApplicationFailure.create({ type: ROLLOUT_REFUSED, message: why, nonRetryable: true });
}

// Long-lived, continuing as new: it moves to the workers' current version (versioning.ts).
movesToCurrentVersion(rolloutWorkflow);
