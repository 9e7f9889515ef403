/**
 * How an operation's steps run: first as local activities, in the worker that runs the workflow,
 * with no trip through a task queue, retried there for a few seconds; a step still failing after
 * that (a cluster unreachable, an object held by another controller) goes on as a queued activity,
 * retried by the server with backoff and shown in the Temporal UI as pending, with its attempts
 * and last failure, until the operation's deadline. Every step is a few idempotent Kubernetes
 * calls, so a worker that dies mid-step just runs it again.
 *
 * A step on a cluster that has a worker of its own (its reference carries that worker's task
 * queue) runs only queued, on that queue: the workers of the landscape hold no credentials of it,
 * and that worker none to read the master's records. The landscape reads the records the step
 * works from and gives them to it; the step answers what to write on the master, and the
 * landscape writes it (activities/cluster-steps.ts). Its arguments are encrypted with the
 * cluster's key, the one key that worker holds (cluster-workers.ts).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  TemporalFailure,
  TimeoutFailure,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import { RetryState } from '@temporalio/common';
import type { Activities } from '../activities/index.js';
import { clusterWorkerSteps, type ClusterWorker } from './cluster-workers.js';
import type { ClusterStepResult } from './messages.js';

/**
 * Marks the operations whose steps on a cluster with a worker of its own are given the master's
 * records and answer what to write there; those begun before ran them reading the master there.
 */
export const STEPS_GIVEN_RECORDS = 'cluster-steps-given-records';

/** A step of an operation: one of the activities. */
export type StepName = keyof Activities;

/** How one step runs. */
export interface StepPolicy {
  /** Its first attempts, in the worker. */
  readonly local: LocalActivityOptions;
  /** Its later attempts, queued; the schedule-to-close timeout is the longest it keeps trying. */
  readonly queued: ActivityOptions;
  /**
   * Whether it gives up at the operation's deadline (given at least {@link SHORTEST_QUEUED_MS}
   * queued). A step that records how an operation ended must happen whatever the deadline: it
   * keeps trying for its queued schedule-to-close timeout.
   */
  readonly untilDeadline: boolean;
  /**
   * Whether it works on the instance's cluster (its first argument names the instance): on a
   * cluster with a worker of its own, it runs there.
   */
  readonly onCluster?: boolean;
}

/** The least time a queued step of an operation gets, even once the deadline has passed. */
export const SHORTEST_QUEUED_MS = 10_000;

/** The longest a queued step keeps trying. */
const LONGEST_QUEUED_MS = 30 * 60_000;

/** First attempts: a few, over a few seconds, in the worker. */
const IN_THE_WORKER: LocalActivityOptions = {
  startToCloseTimeout: '20 s',
  scheduleToCloseTimeout: '30 s',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '2 s', maximumAttempts: 5 },
};

/** Later attempts: queued, retried by the server with backoff. */
const QUEUED: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: LONGEST_QUEUED_MS,
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '10 s' },
};

/** The work of an operation: it stops at the deadline. */
const WORK: StepPolicy = { local: IN_THE_WORKER, queued: QUEUED, untilDeadline: true };

/** The work of an operation on the instance's cluster: there, when the cluster has a worker of its own. */
const WORK_ON_THE_CLUSTER: StepPolicy = { ...WORK, onCluster: true };

/** Recording how an operation ended: whatever the deadline. */
const RECORDING_THE_END: StepPolicy = { local: IN_THE_WORKER, queued: QUEUED, untilDeadline: false };

/** Every step and how it runs. */
export const STEP_POLICIES = {
  recordInstance: WORK,
  recordedInstanceRequest: WORK,
  scheduleInstance: WORK,
  replicateInstance: WORK_ON_THE_CLUSTER,
  applyTemplate: WORK_ON_THE_CLUSTER,
  applyTemplateWatched: WORK_ON_THE_CLUSTER,
  applyTemplateAwaited: WORK_ON_THE_CLUSTER,
  checkStatus: WORK_ON_THE_CLUSTER,
  pruneResources: WORK_ON_THE_CLUSTER,
  deleteResources: WORK_ON_THE_CLUSTER,
  removeInstanceRecord: WORK_ON_THE_CLUSTER,
  recordBinding: WORK,
  removeBindingRecord: WORK_ON_THE_CLUSTER,
  recordInstanceStatus: RECORDING_THE_END,
  recordBindingStatus: RECORDING_THE_END,
  startAction: WORK,
  recordActionStatus: RECORDING_THE_END,
  rotateGeneratedSecret: WORK_ON_THE_CLUSTER,
  removeUnusedSecretVersions: WORK_ON_THE_CLUSTER,
  startMove: WORK,
  recordBackup: WORK,
  placeMove: WORK,
  copyGeneratedSecrets: WORK_ON_THE_CLUSTER,
  handOverGeneratedSecrets: WORK_ON_THE_CLUSTER,
  takeOverGeneratedSecrets: WORK_ON_THE_CLUSTER,
  clearHandedOverSecrets: WORK,
  switchCluster: WORK,
  leaveCluster: WORK_ON_THE_CLUSTER,
  recordsForCluster: WORK,
  recordFromCluster: RECORDING_THE_END,
} as const satisfies Record<StepName, StepPolicy>;

/** Until when an operation's steps may keep trying, and how long that is, for the message. */
export interface Deadline {
  readonly at: () => number;
  readonly seconds: number;
}

/**
 * A step that failed for good, as a queued one does: an ActivityFailure around the cause (the SDK
 * hands over the bare cause for local activities).
 */
function stepFailure(name: StepName, cause: TemporalFailure): ActivityFailure {
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
 * The worker serving the cluster of a step's instance, when it has one of its own: the step's
 * first argument is the instance's reference, a binding's, or a target, and the reference that
 * names the worker's task queue names its cluster too.
 */
export function clusterWorkerOf(arg: unknown): ClusterWorker | undefined {
  type Placed = { clusterId?: unknown; taskQueue?: unknown } | undefined;
  const ref = arg as (Placed & { instance?: Placed }) | null | undefined;
  const placed = ref?.taskQueue !== undefined ? ref : ref?.instance;
  const { clusterId, taskQueue } = placed ?? {};
  if (typeof taskQueue !== 'string' || taskQueue === '') return undefined;
  if (typeof clusterId !== 'string' || clusterId === '')
    throw new Error(
      `a step on task queue ${taskQueue} names no cluster: its arguments cannot be encrypted for it`,
    );
  return { clusterId, taskQueue };
}

/**
 * Runs a step locally, then queued while its failure may pass (not failed for good, not
 * cancelled): until `deadline` when its policy says so, else for its queued schedule-to-close
 * timeout. A step on a cluster with a worker of its own runs only queued, there. Out of time, it
 * fails for good with its last failure.
 */
async function runStep(name: StepName, args: unknown[], deadline: Deadline): Promise<unknown> {
  const policy: StepPolicy = STEP_POLICIES[name];
  const cluster = policy.onCluster ? clusterWorkerOf(args[0]) : undefined;
  if (!cluster || !patched(STEPS_GIVEN_RECORDS)) return runStepOn(name, args, deadline, cluster);
  const [first, ...rest] = args;
  const fromMaster = await runStep('recordsForCluster', [first], deadline);
  const answer = (await runStepOn(
    name,
    [{ ...(first as object), fromMaster }, ...rest],
    deadline,
    cluster,
  )) as ClusterStepResult;
  if (answer.toMaster.length > 0)
    await runStep('recordFromCluster', [name, first, answer.toMaster], deadline);
  return answer.value;
}

/** Runs a step as {@link runStep} says, on the cluster's own worker when given one. */
async function runStepOn(
  name: StepName,
  args: unknown[],
  deadline: Deadline,
  cluster: ClusterWorker | undefined,
): Promise<unknown> {
  const policy: StepPolicy = STEP_POLICIES[name];
  const run = (steps: Activities) => (steps[name] as (...a: unknown[]) => Promise<unknown>)(...args);
  let localFailure: TemporalFailure | undefined;
  if (!cluster) {
    try {
      return await run(proxyLocalActivities<Activities>(policy.local));
    } catch (err) {
      if (isCancellation(err) || !(err instanceof TemporalFailure)) throw err;
      const cause = err instanceof ActivityFailure ? err.cause : err;
      if (cause instanceof ApplicationFailure && cause.nonRetryable) throw stepFailure(name, err);
      localFailure = err;
    }
  }
  const timeLeft = Math.min(Math.max(deadline.at() - Date.now(), SHORTEST_QUEUED_MS), LONGEST_QUEUED_MS);
  try {
    const options: ActivityOptions = {
      ...policy.queued,
      ...(policy.untilDeadline ? { scheduleToCloseTimeout: timeLeft } : {}),
    };
    return await run(
      cluster ? clusterWorkerSteps<Activities>(cluster, options) : proxyActivities<Activities>(options),
    );
  } catch (err) {
    // Out of time: the server timed the step out, or stopped retrying because the next attempt would have been too late.
    const outOfTime =
      err instanceof ActivityFailure &&
      (err.cause instanceof TimeoutFailure || err.retryState === RetryState.TIMEOUT);
    if (!outOfTime) throw err;
    const last =
      lastFailureMessage(err) ??
      (localFailure && (lastFailureMessage(localFailure) ?? localFailure.message)) ??
      `no worker took it from task queue ${cluster?.taskQueue}`;
    throw stepFailure(
      name,
      ApplicationFailure.nonRetryable(
        `Not done within ${policy.untilDeadline ? `${deadline.seconds} s` : '30 minutes'}: ${last}`,
        'Deadline',
      ),
    );
  }
}

/** The steps of an operation, each run locally then queued as its policy says, until `deadline`. */
export function localThenQueued(deadline: Deadline): Activities {
  const steps = Object.keys(STEP_POLICIES).map((name) => [
    name,
    (...args: unknown[]) => runStep(name as StepName, args, deadline),
  ]);
  return Object.fromEntries(steps) as Activities;
}

/** Whether an error is a step that failed for good, rather than a cancellation or a bug. */
export const isStepFailure = (err: unknown): boolean => err instanceof ActivityFailure;

/** The human description of why a step failed (the activity's terminal message, not a stack). */
export function failureDescription(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return cause.message;
  return cause instanceof Error ? cause.message : String(cause);
}
