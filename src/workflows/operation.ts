/**
 * What every operation workflow shares: how a step runs (in the worker first, then queued), the
 * operation's state kept in the memo (so `last_operation` reads it with one describe call, worker
 * or not), waiting for the operator with backoff up to the plan's deadline, and the description of
 * a failure.
 */
import {
  ActivityFailure,
  CancellationScope,
  ApplicationFailure,
  isCancellation,
  TemporalFailure,
  TimeoutFailure,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  upsertMemo,
  workflowInfo,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import { RetryState } from '@temporalio/common';
import type { Activities } from '../activities/index.js';
import { MEMO_KEY, type OperationState, type OperationStatus, type StatusReport } from './messages.js';
import { FIRST_POLL_MS, nextPoll } from './polling.js';

/**
 * A step first runs as a local activity, in the worker that runs the workflow: no trip through a
 * task queue, so a provision costs Temporal about a third of what queued activities do. Every
 * step is a few idempotent Kubernetes calls, so a worker that dies mid-step just runs it again.
 * It is retried there for a few seconds.
 */
export const LOCAL_STEP: LocalActivityOptions = {
  startToCloseTimeout: '20 s',
  scheduleToCloseTimeout: '30 s',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '2 s', maximumAttempts: 5 },
};

/**
 * A step still failing after that (a cluster unreachable, an object held by another controller)
 * goes on as a queued activity: retried by the server with backoff until the operation's deadline
 * (at least {@link SHORTEST_QUEUED_MS}; recording an outcome, up to 30 minutes), and shown in the
 * Temporal UI as pending, with its attempts and last failure, while it waits.
 */
export const QUEUED_STEP: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '30 minutes',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '10 s' },
};

/** The least time a queued step of an operation gets, even once the deadline has passed. */
export const SHORTEST_QUEUED_MS = 10_000;
const LONGEST_QUEUED_MS = 30 * 60_000;

const local = proxyLocalActivities<Activities>(LOCAL_STEP);
const queued = proxyActivities<Activities>(QUEUED_STEP);

/** Until when an operation's steps may keep trying, and how long that is, for the message. */
interface Deadline {
  readonly at: () => number;
  readonly seconds: number;
}

/**
 * A step that failed for good, as a queued one does: an ActivityFailure around the cause (the SDK
 * hands over the bare cause for local activities).
 */
function stepFailure(name: string, cause: TemporalFailure): ActivityFailure {
  if (cause instanceof ActivityFailure) return cause;
  return new ActivityFailure(
    cause.message,
    name,
    undefined,
    RetryState.NON_RETRYABLE_FAILURE,
    undefined,
    cause,
  );
}

/** The message of the last failure in a chain (a step out of time carries its last failure). */
function lastFailureMessage(err: unknown): string | undefined {
  let message: string | undefined;
  for (let cause = err; cause instanceof TemporalFailure; cause = cause.cause) {
    if (cause instanceof ApplicationFailure) message = cause.message;
  }
  return message;
}

/**
 * Runs a step locally, then queued while its failure may pass (not failed for good, not
 * cancelled): until the operation's deadline when there is one, else up to 30 minutes. Out of
 * time, it fails for good with its last failure.
 */
async function runStep(name: keyof Activities, args: unknown[], deadline?: Deadline): Promise<unknown> {
  const run = (steps: Activities) => (steps[name] as (...a: unknown[]) => Promise<unknown>)(...args);
  let localFailure: TemporalFailure;
  try {
    return await run(local);
  } catch (err) {
    if (isCancellation(err) || !(err instanceof TemporalFailure)) throw err;
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) throw stepFailure(name, err);
    localFailure = err;
  }
  const timeLeft = (d: Deadline) =>
    Math.min(Math.max(d.at() - Date.now(), SHORTEST_QUEUED_MS), LONGEST_QUEUED_MS);
  try {
    return await run(
      deadline
        ? proxyActivities<Activities>({ ...QUEUED_STEP, scheduleToCloseTimeout: timeLeft(deadline) })
        : queued,
    );
  } catch (err) {
    // Out of time: the server timed the step out, or stopped retrying because the next attempt would have been too late.
    const outOfTime =
      err instanceof ActivityFailure &&
      (err.cause instanceof TimeoutFailure || err.retryState === RetryState.TIMEOUT);
    if (!outOfTime) throw err;
    const last = lastFailureMessage(err) ?? lastFailureMessage(localFailure) ?? localFailure.message;
    throw stepFailure(
      name,
      ApplicationFailure.nonRetryable(
        `Not done within ${deadline ? `${deadline.seconds} s` : '30 minutes'}: ${last}`,
        'Deadline',
      ),
    );
  }
}

/** Steps run by {@link runStep}, until `deadline` when given. */
function stepsUntil(deadline?: Deadline): Activities {
  return new Proxy({} as Activities, {
    get:
      (_, name: keyof Activities) =>
      (...args: unknown[]) =>
        runStep(name, args, deadline),
  });
}

/**
 * Steps that must happen whatever the deadline, such as recording an operation's outcome: queued,
 * they keep trying for up to 30 minutes. The work of an operation runs by its {@link Operation.steps}.
 */
export const activities = stepsUntil();

/**
 * The state of one running operation, mirrored into the memo whenever it changes, and its
 * deadline: the plan's `maximum_polling_duration` (or the broker's default) from its start, which
 * is when the platform stops polling.
 */
export class Operation {
  private status: OperationStatus;
  private deadlineAt: number;
  /** The operation's steps: each keeps trying until the deadline (see {@link runStep}). */
  readonly steps: Activities;

  /**
   * `starting`: the operation's {@link startingStatus}, which the broker started the workflow with;
   * `deadlineSeconds`: how long the operation may take.
   */
  constructor(
    starting: OperationStatus,
    readonly deadlineSeconds: number,
  ) {
    this.status = starting;
    this.deadlineAt = workflowInfo().runStartTime.getTime() + deadlineSeconds * 1000;
    this.steps = stepsUntil({ at: () => this.deadlineAt, seconds: deadlineSeconds });
    // Written again only when the workflow was started without it (not by the broker).
    const started = workflowInfo().memo?.[MEMO_KEY];
    if (JSON.stringify(started) !== JSON.stringify(this.status)) upsertMemo({ [MEMO_KEY]: this.status });
  }

  /** When the operation must have ended, in ms since the epoch. */
  get deadline(): number {
    return this.deadlineAt;
  }

  /**
   * Undoes what an operation made when it failed or was cancelled (a synchronous request that gave
   * up): `work` runs to the end though the workflow is cancelled, with a whole new deadline from now.
   */
  async undo<T>(work: () => Promise<T>): Promise<T> {
    this.deadlineAt = Date.now() + this.deadlineSeconds * 1000;
    return CancellationScope.nonCancellable(work);
  }

  get current(): OperationStatus {
    return this.status;
  }

  /** Records progress or the outcome; the memo is written only when something changed. */
  update(change: Partial<Omit<OperationStatus, 'operation' | 'requestHash'>>): OperationStatus {
    const next = { ...this.status, ...change };
    if (JSON.stringify(next) !== JSON.stringify(this.status)) {
      this.status = next;
      upsertMemo({ [MEMO_KEY]: next });
    }
    return this.status;
  }

  /** The outcome, not yet published: record it first, so the memo says done only as the workflow ends. */
  outcome(
    state: OperationState,
    description?: string,
    extra: Partial<OperationStatus> = {},
  ): OperationStatus {
    return { ...this.status, state, ...(description !== undefined ? { description } : {}), ...extra };
  }

  /** Publishes the outcome in the memo; the workflow returns in the same task, so both land together. */
  finish(outcome: OperationStatus): OperationStatus {
    return this.update(outcome);
  }
}

/**
 * Polls the `status` template until the operator reports success or failure, backing off from
 * 250 ms to 10 s (longer for very long deadlines, see polling.ts), and fails the operation when
 * its deadline passes first; the last check is at the deadline.
 */
export async function waitForOperator(
  op: Operation,
  check: () => Promise<StatusReport>,
): Promise<StatusReport> {
  let delay = FIRST_POLL_MS;
  for (;;) {
    const report = await check();
    if (report.state !== 'in progress') return report;
    op.update({ description: report.description ?? 'Waiting for the operator' });
    const left = op.deadline - Date.now();
    if (left <= 0) {
      return {
        state: 'failed',
        description: `The operator did not report the outcome within ${op.deadlineSeconds} s${report.description ? ` (last: ${report.description})` : ''}`,
      };
    }
    await sleep(Math.min(delay, left));
    delay = nextPoll(delay, op.deadlineSeconds);
  }
}

/**
 * Ends an operation that a synchronous request gave up on (the workflow is being cancelled): its
 * outcome is recorded all the same and published in the memo, then the workflow ends cancelled.
 */
export async function recordCancelled(
  op: Operation,
  status: OperationStatus,
  record?: (status: OperationStatus) => Promise<void>,
): Promise<void> {
  if (record) await CancellationScope.nonCancellable(() => record(status));
  op.finish(status);
}

/**
 * The outcome of a deprovision or unbind that a synchronous request gave up on: it stops where it
 * is (what is deleted stays deleted), and the platform deletes again to finish it.
 */
export const stoppedDeletion = (op: Operation): OperationStatus =>
  op.outcome(
    'failed',
    `The ${op.current.operation} was stopped before it finished; send the request again to finish it.`,
  );

/** The human description of why a step failed (the activity's terminal message, not a stack). */
export function failureDescription(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return cause.message;
  return cause instanceof Error ? cause.message : String(cause);
}

/** Whether an error ends the operation (a failed activity) rather than the workflow itself (a bug, a cancel). */
export const isStepFailure = (err: unknown): boolean => err instanceof ActivityFailure;
