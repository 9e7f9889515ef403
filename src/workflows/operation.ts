/**
 * What every operation workflow shares: the activity options, the operation's state kept in the
 * memo (so `last_operation` reads it with one describe call, worker or not), waiting for the
 * operator with backoff up to the plan's deadline, and the description of a failure.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  sleep,
  upsertMemo,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities, StatusReport } from '../activities/index.js';
import { MEMO_KEY, type OperationState, type OperationStatus } from './messages.js';

/** One step against the clusters: retried with backoff until its deadline unless it fails terminally. */
export const STEP: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '30 minutes',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '10 s' },
};

export const activities = proxyActivities<Activities>(STEP);

/** The state of one running operation, mirrored into the memo whenever it changes. */
export class Operation {
  private status: OperationStatus;

  /** `starting`: the operation's {@link startingStatus}, which the broker started the workflow with. */
  constructor(starting: OperationStatus) {
    this.status = starting;
    // Written again only when the workflow was started without it (not by the broker).
    const started = workflowInfo().memo?.[MEMO_KEY];
    if (JSON.stringify(started) !== JSON.stringify(this.status)) upsertMemo({ [MEMO_KEY]: this.status });
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
 * 250 ms to 10 s, and fails the operation when the deadline passes first.
 */
export async function waitForOperator(
  op: Operation,
  check: () => Promise<StatusReport>,
  deadlineSeconds: number,
): Promise<StatusReport> {
  const deadline = Date.now() + deadlineSeconds * 1000;
  let delay = 250;
  for (;;) {
    const report = await check();
    if (report.state !== 'in progress') return report;
    op.update({ description: report.description ?? 'Waiting for the operator' });
    if (Date.now() + delay > deadline) {
      return {
        state: 'failed',
        description: `The operator did not report the outcome within ${deadlineSeconds} s${report.description ? ` (last: ${report.description})` : ''}`,
      };
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 10_000);
  }
}

/** The human description of why a step failed (the activity's terminal message, not a stack). */
export function failureDescription(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return cause.message;
  return cause instanceof Error ? cause.message : String(cause);
}

/** Whether an error ends the operation (a failed activity) rather than the workflow itself (a bug, a cancel). */
export const isStepFailure = (err: unknown): boolean => err instanceof ActivityFailure;
