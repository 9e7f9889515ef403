/**
 * What every operation workflow shares: the operation's state, kept in the memo (so
 * `last_operation` reads it with one describe call, worker or not); its deadline and its steps;
 * running its runbook, where a step that fails for good fails the operation and a cancellation
 * runs the compensations; waiting for the operator with backoff up to the deadline; and ending
 * with a final status.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  defineSignal,
  isCancellation,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import type { Activities } from '../activities/index.js';
import { failureDescription, isStepFailure, localThenQueued } from './local-then-queued.js';
import {
  MEMO_KEY,
  OPERATION_REFUSED,
  OPERATOR_CHANGED_SIGNAL,
  operationOutcomeUpdate,
  refusalOf,
  type OperationState,
  type OperationStatus,
  type StatusReport,
} from './messages.js';
import { FIRST_CHECK_AFTER_APPLY_MS, FIRST_POLL_MS, nextPoll, WORD_IN_THE_STEP_MS } from './polling.js';
import { OsbState } from './search-attributes.js';

/** See {@link OPERATOR_CHANGED_SIGNAL}. */
export const operatorChangedSignal = defineSignal(OPERATOR_CHANGED_SIGNAL);

/** Undoes what one step did. */
export type Compensation = () => Promise<unknown> | unknown;

/** Where a runbook pushes the compensation of each step as the step succeeds. */
export interface Compensations {
  push(compensation: Compensation): void;
}

/** How an operation ends once the operator has reported. */
export interface Ending {
  /** The description when the report has none: by whether it succeeded. */
  readonly succeeded: string;
  readonly failed: string;
  /** Fields of the final status beyond its state and description. */
  readonly extra?: Partial<OperationStatus>;
  /** Writes the final status to the operation's record; absent when there is no record to write to. */
  readonly record?: ((status: OperationStatus) => Promise<void>) | undefined;
}

/**
 * The state of one running operation, mirrored into the memo whenever it changes, and its
 * deadline: the plan's `maximum_polling_duration` (or the broker's default) from its start, which
 * is when the platform stops polling.
 */
export class Operation {
  private status: OperationStatus;
  private deadlineAt: number;
  private changes = 0;
  private ended = false;
  /** The operation's steps, run by their policies (see local-then-queued.ts). */
  readonly steps: Activities;

  /**
   * `starting`: the operation's {@link startingStatus}, which the broker started the workflow with;
   * `deadlineSeconds`: how long the operation may take; `firstPollMs`: the first wait between two
   * status checks (see polling.ts).
   */
  constructor(
    starting: OperationStatus,
    readonly deadlineSeconds: number,
    readonly firstPollMs: number = FIRST_POLL_MS,
  ) {
    setHandler(operatorChangedSignal, () => void (this.changes += 1));
    this.status = starting;
    // A synchronous request's answer: the final status, whenever the operation ends (a cancelled
    // deletion or update still ends with one). An operation that ends by its cancellation has
    // none: the update ends with the run, and the caller reads the run's outcome.
    setHandler(
      operationOutcomeUpdate,
      async () => {
        await CancellationScope.nonCancellable(() => condition(() => this.ended));
        return this.status;
      },
      {
        validator: (awaited) => {
          const refusal = refusalOf(this.status, awaited);
          if (refusal)
            throw ApplicationFailure.create({
              type: OPERATION_REFUSED,
              message: refusal,
              details: [this.status.operation],
              nonRetryable: true,
            });
        },
        unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON,
      },
    );
    this.deadlineAt = workflowInfo().runStartTime.getTime() + deadlineSeconds * 1000;
    this.steps = localThenQueued({ at: () => this.deadlineAt, seconds: deadlineSeconds });
    // Written again only when the workflow was started without it (not by the broker).
    const started = workflowInfo().memo?.[MEMO_KEY];
    if (JSON.stringify(started) !== JSON.stringify(this.status)) upsertMemo({ [MEMO_KEY]: this.status });
  }

  /** When the operation must have ended, in ms since the epoch. */
  get deadline(): number {
    return this.deadlineAt;
  }

  get current(): OperationStatus {
    return this.status;
  }

  /** How many times the operator changed a source of the status check (see {@link operatorChangedSignal}). */
  get operatorChanges(): number {
    return this.changes;
  }

  /**
   * Runs the operation's runbook and returns the operator's report. A step that fails for good
   * ends the runbook with a failed report that carries the step's description. A cancellation (a
   * synchronous request that gave up) runs the compensations the runbook pushed, newest first (see
   * {@link undo}), then ends the workflow cancelled.
   */
  async run(runbook: (compensations: Compensations) => Promise<StatusReport>): Promise<StatusReport> {
    const compensations: Compensation[] = [];
    try {
      return await runbook({ push: (compensation) => void compensations.push(compensation) });
    } catch (err) {
      if (isCancellation(err)) {
        await this.undo(async () => {
          for (const compensation of [...compensations].reverse()) await compensation();
        });
        throw err;
      }
      if (!isStepFailure(err)) throw err;
      return { state: 'failed', description: failureDescription(err) };
    }
  }

  /**
   * Undoes what an operation made when it failed or was cancelled: `work` runs to the end though
   * the workflow is cancelled, with a whole new deadline from now.
   */
  async undo<T>(work: () => Promise<T>): Promise<T> {
    this.deadlineAt = Date.now() + this.deadlineSeconds * 1000;
    return CancellationScope.nonCancellable(work);
  }

  /**
   * Records progress; the memo is written only when something changed, and the `OsbState` search
   * attribute when the state did (so the UI's list filters find failed operations).
   */
  update(change: Partial<Omit<OperationStatus, 'operation' | 'requestHash'>>): OperationStatus {
    const next = { ...this.status, ...change };
    if (JSON.stringify(next) !== JSON.stringify(this.status)) {
      const stateChanged = next.state !== this.status.state;
      this.status = next;
      upsertMemo({ [MEMO_KEY]: next });
      if (stateChanged) upsertSearchAttributes([{ key: OsbState, value: next.state }]);
    }
    return this.status;
  }

  /** The status the operation ends with, not yet published. */
  finalStatus(
    state: OperationState,
    description?: string,
    extra: Partial<OperationStatus> = {},
  ): OperationStatus {
    return { ...this.status, state, ...(description !== undefined ? { description } : {}), ...extra };
  }

  /**
   * Ends the operation with `status`: written to its record by `record` (when given) first, so the
   * memo says it ended only as the workflow ends; then published in the memo, in the same workflow
   * task as the workflow returns, so both land together, with the answers to the synchronous
   * requests waiting on it ({@link operationOutcomeUpdate}), which are sent before the workflow
   * completes.
   */
  async endWith(
    status: OperationStatus,
    record?: (status: OperationStatus) => Promise<void>,
  ): Promise<OperationStatus> {
    if (record) await record(status);
    const ended = this.update(status);
    this.ended = true;
    await condition(allHandlersFinished);
    return ended;
  }

  /** Ends the operation with the operator's report (see {@link endWith}). */
  async end(report: StatusReport, ending: Ending): Promise<OperationStatus> {
    const description =
      report.description ?? (report.state === 'succeeded' ? ending.succeeded : ending.failed);
    return this.endWith(this.finalStatus(report.state, description, ending.extra), ending.record);
  }
}

/** How the wait for the operator begins. */
export interface WaitStart {
  /**
   * The apply before the wait left the operator a change to observe, and word to be woken once it
   * did (applyTemplateWatched): the first check waits for a wake-up since the operation had seen
   * this many ({@link Operation.operatorChanges}, counted before the apply), or for
   * {@link FIRST_CHECK_AFTER_APPLY_MS} at most.
   */
  readonly operatorBehindSince?: number;
  /** The longest that first wait. @default FIRST_CHECK_AFTER_APPLY_MS */
  readonly withinMs?: number;
}

/**
 * Applies with applyTemplateAwaited (`apply`, given how long its step may wait for the operator's
 * word), then waits for the operator with `check`: at once when the word came in the step or there
 * was none to wait for; else the first check waits on for the word, in the workflow, for the rest
 * of {@link FIRST_CHECK_AFTER_APPLY_MS}.
 */
export async function applyAndWaitForOperator(
  op: Operation,
  apply: (waitMs: number) => Promise<{ readonly operatorBehind: boolean; readonly heard: boolean }>,
  check: () => Promise<StatusReport>,
): Promise<StatusReport> {
  const changes = op.operatorChanges;
  const inTheStep = Math.max(0, Math.min(WORD_IN_THE_STEP_MS, op.deadline - Date.now()));
  const { operatorBehind, heard } = await apply(inTheStep);
  const start =
    operatorBehind && !heard
      ? { operatorBehindSince: changes, withinMs: FIRST_CHECK_AFTER_APPLY_MS - inTheStep }
      : {};
  return waitForOperator(op, check, start);
}

/**
 * Polls the `status` template until the operator reports success or failure, backing off as
 * polling.ts says, and fails the operation when its deadline passes first; the last check is at
 * the deadline. A change the worker saw to one of the sources the check read (the
 * {@link operatorChangedSignal}, since the check began) ends the wait at once: the poll is the
 * fallback for changes no watch reported. The first check runs at once, unless `start` says the
 * operator has yet to observe what was applied.
 */
export async function waitForOperator(
  op: Operation,
  check: () => Promise<StatusReport>,
  start: WaitStart = {},
): Promise<StatusReport> {
  let delay = op.firstPollMs;
  const since = start.operatorBehindSince;
  if (since !== undefined) {
    const left = op.deadline - Date.now();
    if (left > 0)
      await condition(
        () => op.operatorChanges > since,
        Math.min(start.withinMs ?? FIRST_CHECK_AFTER_APPLY_MS, left),
      );
  }
  for (;;) {
    const seen = op.operatorChanges;
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
    await condition(() => op.operatorChanges > seen, Math.min(delay, left));
    delay = nextPoll(delay, op.deadlineSeconds);
  }
}

/** How a deletion (deprovision, unbind) of a record of type `R` runs, and how it ends. */
export interface Deletion<R> {
  /** Records the request; returns the record. */
  readonly record: () => Promise<R>;
  /** Deletes what the record's operations made, waits for the operator, drops the record. */
  readonly remove: (recorded: R) => Promise<StatusReport>;
  /** Writes a final status to the record. */
  readonly writeStatus: (recorded: R, status: OperationStatus) => Promise<void>;
  /** How it ends, given the operator's report and the record (when the request got recorded). */
  readonly ending: (report: StatusReport, recorded: R | undefined) => Omit<Ending, 'record'>;
}

/**
 * Runs a deletion: records the request, removes, and ends; a deletion that succeeded has no record
 * left to write its final status to. Cancelled (a synchronous request that gave up), it stops
 * where it is, since what is deleted stays deleted, and ends saying so, on the record too once
 * there is one: the platform deletes again to finish it.
 */
export async function runDeletion<R>(op: Operation, deletion: Deletion<R>): Promise<OperationStatus> {
  let recorded: R | undefined;
  const writeStatus = (record: R) => (status: OperationStatus) => deletion.writeStatus(record, status);
  const stopped = () =>
    op.finalStatus(
      'failed',
      `The ${op.current.operation} was stopped before it finished; send the request again to finish it.`,
    );
  const report = await op.run(async (compensations) => {
    compensations.push(() =>
      op.endWith(stopped(), recorded === undefined ? undefined : writeStatus(recorded)),
    );
    const record = await deletion.record();
    recorded = record;
    return deletion.remove(record);
  });
  const record = report.state === 'succeeded' || recorded === undefined ? undefined : writeStatus(recorded);
  return op.end(report, { ...deletion.ending(report, recorded), record });
}
