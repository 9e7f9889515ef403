/**
 * The broker's Temporal side: starting an operation's workflow, describing its runs, answering a
 * request that finds an operation already running, and waiting for a synchronous one.
 *
 * One workflow id per instance and per binding (src/resources/names.ts) makes a retried request
 * find the running operation and keeps two operations on one instance from running at once. The
 * operation's state lives in the workflow's memo, so `last_operation` is one describe call that
 * works with no worker running. A synchronous request gets its answer from the operation itself:
 * an update ({@link operationOutcomeUpdate}) sent with the start of the workflow, or to the run it
 * found, completes when the operation ends.
 */
import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { decodeOptionalFailureToOptionalError } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { ClusterClient } from '../kube/clients.js';
import { InstanceClaims } from '../kube/operation-claims.js';
import { claimSideOf } from '../resources/operation-claims.js';
import type { OperationStartRecorder } from '../metrics/recorders.js';
import { concurrencyError, conflict, gone, notFound, OsbError } from '../osb/errors.js';
import type { LastOperation, OperationOutcome, RequestMeta } from '../osb/service-broker.js';
import { isCustomAction } from '../resources/actions.js';
import { MOVE_OPERATION } from '../resources/migration.js';
import type { SFPlan, SFServiceInstance } from '../resources/types.js';
import {
  MEMO_KEY,
  OPERATION_REFUSED,
  refusalOf,
  operationOutcomeUpdate,
  type ActionRequest,
  type AwaitedOperation,
  type MoveRequest,
  operationString,
  type BindingRequest,
  type InstanceRequest,
  type OperationEnvelope,
  type OperationName,
  type OperationStatus,
  type OperationType,
} from '../workflows/messages.js';
import { OsbPlanId, OsbServiceId } from '../workflows/search-attributes.js';
import {
  askedRunId,
  asksDeletion,
  isDeletion,
  lastOperationOf,
  lastOperationOfRecord,
  parseOperationQuery,
  settledStatus,
  type RecordStatus,
} from './last-operation.js';
import type { Found } from './found.js';
import type { RequestDigest } from './request-digest.js';
import { isTemporalUnreachable } from './temporal-errors.js';
import { startOperation, startOperationWithOutcome } from '../temporal/operations.js';

/** What a describe call tells of the latest (or a given) run of an operation workflow. */
export interface RunState {
  readonly runId: string;
  readonly serviceId?: string;
  readonly planId?: string;
  readonly running: boolean;
  readonly statusName: string;
  /** When the run started (ms since the epoch, the Temporal server's clock). */
  readonly startedAt: number;
  readonly memo?: OperationStatus;
  /** The last failure of a step the run waits on (queued and retried), e.g. a cluster not answering. */
  readonly waiting?: string;
}

/** A workflow started, or the operation that was already running under its id. */
export type Started =
  | { readonly handle: WorkflowHandleWithFirstExecutionRunId; readonly running?: undefined }
  | { readonly handle?: undefined; readonly running: RunState };

/**
 * For a caller that waits: the final status of the operation it started, or the operation that
 * was already running under its id.
 */
export type Ended =
  | { readonly ended: OperationStatus; readonly running?: undefined }
  | { readonly ended?: undefined; readonly running: RunState };

/** How {@link WorkflowRuns.start} starts an operation. */
export interface StartOptions {
  /** The instance's record, when the caller has just read it (its claim is written on it). */
  readonly instance?: SFServiceInstance | undefined;
  /** Start with the update that answers with the operation's final status, and wait for it. */
  readonly wait?: boolean;
  /** Start only when the workflow id has never run: the caller found no record. */
  readonly firstOfItsId?: boolean;
}

/**
 * A start made for a record that was not there, refused because a run of its id ended meanwhile
 * (or before, when the id was deleted and is created again): the record as that run left it
 * decides the request.
 */
export class RanBefore extends Error {
  constructor(readonly workflowId: string) {
    super(`A run of ${workflowId} ended before its start.`);
    this.name = 'RanBefore';
  }
}

/** How many settled runs are remembered: a closed run never changes, so last_operation needs no call. */
const SETTLED_CACHE_SIZE = 10_000;

export class WorkflowRuns {
  private readonly settledRuns = new Map<string, RunState>();

  private readonly claims: InstanceClaims;

  constructor(
    private readonly deps: {
      readonly client: Client;
      readonly master: ClusterClient;
      readonly instanceNamespace?: string;
      readonly taskQueue: string;
      readonly syncTimeoutMs: number;
      readonly operationTimeoutSeconds: number;
      readonly statusPollMs?: number;
      readonly metrics?: OperationStartRecorder;
    },
  ) {
    this.claims = new InstanceClaims({
      master: deps.master,
      ...(deps.instanceNamespace ? { instanceNamespace: deps.instanceNamespace } : {}),
      latest: (workflowId) => this.describe(workflowId),
    });
  }

  /**
   * What the broker adds to a request it starts an operation for: the digest, the deadline (the
   * plan's maximum_polling_duration, else the default) and who asked.
   */
  envelope(meta: RequestMeta, digest: RequestDigest, plan: SFPlan | undefined): OperationEnvelope {
    const who = meta.originatingIdentity;
    return {
      requestHash: digest.value,
      deadlineSeconds: plan?.spec.maximum_polling_duration ?? this.deps.operationTimeoutSeconds,
      ...(this.deps.statusPollMs ? { firstPollMs: this.deps.statusPollMs } : {}),
      ...(who
        ? {
            requestedBy:
              'value' in who
                ? { platform: who.platform, identity: who.value }
                : { platform: who.platform, unreadable: true },
          }
        : {}),
    };
  }

  /** The latest run of `workflowId`, or the run `runId`; undefined when there is none. */
  async describe(workflowId: string, runId?: string): Promise<RunState | undefined> {
    const cached = runId ? this.settledRuns.get(`${workflowId}/${runId}`) : undefined;
    if (cached) return cached;
    const run = await this.describeRun(workflowId, runId);
    if (run && runId && !run.running) {
      if (this.settledRuns.size >= SETTLED_CACHE_SIZE)
        this.settledRuns.delete(this.settledRuns.keys().next().value!);
      this.settledRuns.set(`${workflowId}/${runId}`, run);
    }
    return run;
  }

  /** The run of `workflowId` that is running, if one is. */
  async running(workflowId: string): Promise<RunState | undefined> {
    const run = await this.describe(workflowId);
    return run?.running ? run : undefined;
  }

  /**
   * `last_operation` of an instance or a binding: its operation's state as the run's memo keeps it
   * (the run `operation` names, else the latest), or, once Temporal has no run, as its record's
   * status keeps it, as it does while Temporal cannot be reached. When the latest run is a custom
   * action an admin ran, the record's status answers too: it still tells of the last OSB
   * operation, which is what a platform asks about. An `operation` Service Fabrik's broker handed
   * out names no run: the latest answers, as its broker answered the record's last operation. A
   * record of another installation is not there, whatever run its operation id finds.
   *
   * @throws OsbError 400 for an operation string neither broker hands out; without a run or a
   *   record, 410 when the operation asked about is the deletion, else 404.
   */
  async lastOperation(
    kind: 'instance' | 'binding',
    workflowId: string,
    operation: string | undefined,
    record: () => Promise<Found<{ readonly status?: RecordStatus }>>,
  ): Promise<LastOperation> {
    const asked = parseOperationQuery(operation);
    const absent = () =>
      asksDeletion(kind, asked)
        ? gone(`The service ${kind} is deleted.`)
        : notFound(`The service ${kind} does not exist.`);
    // Read beside the run: whose record it is decides first (another's run is none of this answer's).
    const described = this.describe(workflowId, askedRunId(asked));
    described.catch(() => undefined);
    let found: Found<{ readonly status?: RecordStatus }> | undefined;
    try {
      found = await record();
    } catch (err) {
      // The master cannot be read: the run answers alone (its record is looked at only to tell whose it is).
      const run = await described.catch(() => undefined);
      if (run?.memo && !isCustomAction(run.memo.operation))
        return lastOperationOf(settledStatus(run.memo, run));
      throw err;
    }
    if (found.elsewhere) throw absent();
    let run: RunState | undefined;
    try {
      run = await described;
    } catch (err) {
      // Temporal cannot be reached: the record's status is the best answer there is, if any.
      if (!isTemporalUnreachable(err) || !found.record) throw err;
      return lastOperationOfRecord(found.record.status);
    }
    // A custom action (an admin's) is no OSB operation: the record's status still tells of the last one.
    if (run?.memo && !isCustomAction(run.memo.operation))
      return lastOperationOf(settledStatus(run.memo, run));
    // History is gone: the record's status is the last word.
    if (!found.record) throw absent();
    return lastOperationOfRecord(found.record.status);
  }

  handle(workflowId: string, runId: string): WorkflowHandle {
    return this.deps.client.workflow.getHandle(workflowId, runId);
  }

  /**
   * Starts the operation's workflow with `input`, its memo the starting status and its search
   * attributes the ids of the input. An update or deprovision first claims the instance against
   * its bindings' operations, a bind or unbind against the instance's (src/kube/operation-claims.ts).
   * When another broker started an operation under the same id a moment ago, that one is returned
   * as running. A custom action (`x-<name>`) runs the action workflow, the rotation of a generated
   * secret (`x-rotate-secret`) its own. `instance` is the instance's record when the caller has
   * just read it. With `wait`, the workflow starts with the update that answers with its final
   * status, and the operation's end is waited for (see {@link bounded}). With `firstOfItsId` (a
   * create that found no record) it starts only when the id has never run: a start that took long
   * on its way must not land after an operation of the id that ran meanwhile.
   *
   * @throws RanBefore with `firstOfItsId`, when a run of the id has ended: the caller reads the
   *   record again and decides anew. OsbError 422 `ConcurrencyError` when that operation has
   *   already finished again, or while an operation of the other side of the instance runs; with
   *   `wait`, as {@link bounded}.
   */
  async start(
    type: OperationName,
    workflowId: string,
    input: InstanceRequest | BindingRequest | ActionRequest | MoveRequest,
    options?: StartOptions & { readonly wait?: false },
  ): Promise<Started>;
  async start(
    type: OperationName,
    workflowId: string,
    input: InstanceRequest | BindingRequest | ActionRequest | MoveRequest,
    options: StartOptions,
  ): Promise<Started | Ended>;
  async start(
    type: OperationName,
    workflowId: string,
    input: InstanceRequest | BindingRequest | ActionRequest | MoveRequest,
    { instance, wait = false, firstOfItsId = false }: StartOptions = {},
  ): Promise<Started | Ended> {
    const side = claimSideOf(type, 'bindingId' in input ? input.bindingId : undefined);
    const release = side ? await this.claims.claim(input.instanceId, side, instance) : undefined;
    const start = { workflowId, taskQueue: this.deps.taskQueue, type, request: input, firstOfItsId };
    const counted = () => {
      if (!isCustomAction(type) && type !== MOVE_OPERATION)
        this.deps.metrics?.operationStarted(type, input.serviceId, input.planId);
    };
    // Whether the workflow started: when it may have, its claim stays (it goes stale once it ends).
    let started: boolean | undefined = false;
    try {
      if (!wait) {
        const handle = await startOperation(this.deps.client, start);
        counted();
        return { handle };
      }
      let run: Promise<WorkflowHandle> | undefined;
      const ended = await this.bounded(
        type,
        () => {
          const operation = startOperationWithOutcome(this.deps.client, start);
          run = operation.workflow.then((handle) => {
            started = true;
            counted();
            return handle;
          });
          run.catch(() => undefined);
          const awaited = { operation: type, requestHash: input.requestHash };
          return this.settled(
            operation.outcome,
            () => run!,
            type,
            async () => {
              // The start went through (the run holds the claim now) but the update was given up.
              started = undefined;
              return this.resent(workflowId, awaited);
            },
          );
        },
        async () => {
          started = undefined;
          await this.cancelStarted(run, workflowId, { operation: type, requestHash: input.requestHash });
        },
      );
      return { ended };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
        if (started === false) await release?.();
        throw err;
      }
      const running = await this.running(workflowId);
      if (running) return { running };
      if (firstOfItsId) {
        await release?.();
        throw new RanBefore(workflowId);
      }
      throw concurrencyError('Another operation finished just now; retry the request.');
    }
  }

  /**
   * The answer to a request that finds an operation already running on the same instance or
   * binding. The same request again gets the same operation: asynchronously its operation string,
   * synchronously the wait for its outcome, as the first request does.
   *
   * @throws OsbError 409 for a provision of the same id with other attributes; 422
   *   `ConcurrencyError` for any other operation.
   */
  async repeatOf(
    running: RunState,
    workflowId: string,
    type: OperationType,
    digest: RequestDigest,
    async: boolean,
  ): Promise<OperationOutcome> {
    const memo = running.memo;
    if (memo?.operation === type && digest.matches(memo.requestHash)) {
      return this.outcome(
        this.handle(workflowId, running.runId),
        running.runId,
        { operation: type, requestHash: memo.requestHash },
        async,
        false,
        memo.dashboardUrl,
      );
    }
    if (memo?.operation === type && type === 'provision') {
      throw conflict('An instance with this id is being provisioned with different attributes.');
    }
    throw concurrencyError(`Another operation (${memo?.operation ?? 'unknown'}) is in progress.`);
  }

  /**
   * The rest of a deprovision or an unbind once its plan's rules are checked: the same request
   * again while it runs gets the same answer; without a record there is nothing to delete; else
   * the operation runs on the service and plan the record holds.
   *
   * @throws OsbError 410 without a record; as {@link repeatOf} while another operation runs.
   */
  async deletion(
    type: 'deprovision' | 'unbind',
    workflowId: string,
    found: {
      /** The instance's id, and the binding's for an unbind. */
      readonly ids: { readonly instanceId: string; readonly bindingId?: string };
      readonly running: RunState | undefined;
      readonly record: { readonly spec: { readonly serviceId: string; readonly planId: string } } | undefined;
    },
    request: { readonly envelope: OperationEnvelope; readonly digest: RequestDigest },
    async: boolean,
  ): Promise<OperationOutcome> {
    const { ids, running, record } = found;
    const { envelope, digest } = request;
    if (running) return this.repeatOf(running, workflowId, type, digest, async);
    if (!record) {
      throw gone(`The service ${type === 'unbind' ? 'binding' : 'instance'} does not exist.`);
    }
    const input = { ...ids, serviceId: record.spec.serviceId, planId: record.spec.planId, ...envelope };
    const started = await this.start(type, workflowId, input, { wait: !async });
    return this.answer(started, workflowId, type, digest, async);
  }

  /**
   * The answer to a request that started `started` itself (and waited for it, when synchronous),
   * or found it already running.
   */
  answer(
    started: Started | Ended,
    workflowId: string,
    type: OperationType,
    digest: RequestDigest,
    async: boolean,
    dashboardUrl?: string,
  ): Promise<OperationOutcome> {
    if (started.running) return this.repeatOf(started.running, workflowId, type, digest, async);
    const created = type === 'provision';
    if ('ended' in started) return Promise.resolve(this.done(started.ended!, created, dashboardUrl));
    const { handle } = started;
    const awaited = { operation: type, requestHash: digest.value };
    return this.outcome(handle, handle.firstExecutionRunId, awaited, async, created, dashboardUrl);
  }

  /**
   * 202 when asynchronous; else waits for the run's operation to end (bounded) and answers with
   * its outcome.
   */
  async outcome(
    handle: WorkflowHandle,
    runId: string,
    awaited: AwaitedOperation,
    async: boolean,
    created: boolean,
    dashboardUrl?: string,
  ): Promise<OperationOutcome> {
    if (async) {
      return {
        kind: 'accepted',
        operation: operationString(awaited.operation, runId),
        ...(dashboardUrl ? { dashboardUrl } : {}),
      };
    }
    return this.done(await this.waitSync(handle, awaited), created, dashboardUrl);
  }

  private done(status: OperationStatus, created: boolean, dashboardUrl?: string): OperationOutcome {
    const url = status.dashboardUrl ?? dashboardUrl;
    return { kind: 'done', created, ...(url ? { dashboardUrl: url } : {}) };
  }

  /**
   * Waits for the operation of a run that is already running (bounded, see {@link bounded}): the
   * {@link operationOutcomeUpdate} sent to it answers when the operation ends. `awaited` is what
   * the request asks for, as the run holds it (its memo's operation and request digest).
   *
   * @throws OsbError as {@link bounded}; 409 or 422 when the run refuses the request
   *   ({@link refusal}).
   */
  waitSync(handle: WorkflowHandle, awaited: AwaitedOperation): Promise<OperationStatus> {
    return this.bounded(
      awaited.operation,
      () => this.awaitOn(handle, awaited),
      () => handle.cancel(),
    );
  }

  /** Sends the run the {@link operationOutcomeUpdate} (again when it was given up) and waits for its answer. */
  private awaitOn(handle: WorkflowHandle, awaited: AwaitedOperation): Promise<OperationStatus> {
    return this.settled(
      handle.executeUpdate(operationOutcomeUpdate, { args: [awaited] }),
      () => handle,
      awaited.operation,
      () => this.awaitOn(handle, awaited),
    );
  }

  /**
   * The answer to a synchronous request whose start went through but whose update was given up:
   * the latest run of the workflow id, when it is the request's operation (the one the start
   * made), is sent the update again; one that has ended answers with its outcome.
   */
  private async resent(workflowId: string, awaited: AwaitedOperation): Promise<OperationStatus> {
    const latest = await this.describe(workflowId);
    if (!latest?.memo || refusalOf(latest.memo, awaited))
      throw concurrencyError('Another operation started just now; retry the request.');
    const handle = this.handle(workflowId, latest.runId);
    if (!latest.running) return (await handle.result()) as OperationStatus;
    return this.awaitOn(handle, awaited);
  }

  /**
   * Waits for a synchronous operation: `wait` runs its calls to Temporal, which are abandoned past
   * the bound. Past the bound it cancels the workflow (`cancel`), which rolls back what it
   * created, so a request that gave up leaves no orphan behind.
   *
   * @throws OsbError 504 `Timeout` past the bound; 500 `OperationFailed` when the operation failed.
   */
  private async bounded(
    type: OperationName,
    wait: () => Promise<OperationStatus>,
    cancel: () => Promise<unknown>,
  ): Promise<OperationStatus> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.deps.syncTimeoutMs);
    });
    const abandon = new AbortController();
    const waiting = this.deps.client.withAbortSignal(abandon.signal, wait);
    try {
      const result = await Promise.race([waiting, timeout]);
      if (result === 'timeout') {
        waiting.catch(() => undefined);
        abandon.abort();
        await cancel();
        const undone = isDeletion(type)
          ? 'was stopped; send the request again to finish it'
          : 'was rolled back';
        throw new OsbError(
          504,
          `The ${type} did not finish within ${Math.round(this.deps.syncTimeoutMs / 1000)} s and ${undone}.`,
          'Timeout',
        );
      }
      if (result.state === 'failed') {
        throw new OsbError(500, result.description ?? `The ${type} failed.`, 'OperationFailed');
      }
      return result;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The final status the {@link operationOutcomeUpdate} answers with. A run that ended without
   * answering it (cancelled, or ended before the update reached it) answers with its own outcome.
   * An update the server gave up because the workflow task that carried it failed (as one does
   * when a signal arrives while its local steps run) is sent `again`.
   *
   * @throws OsbError 409 or 422 when the run refused the request ({@link refusal}).
   */
  private async settled(
    outcome: Promise<OperationStatus>,
    run: () => Promise<WorkflowHandle> | WorkflowHandle,
    type: OperationName,
    again: () => Promise<OperationStatus>,
  ): Promise<OperationStatus> {
    try {
      return await outcome;
    } catch (err) {
      if (isUpdateGivenUp(err)) return again();
      if (!(err instanceof WorkflowUpdateFailedError) && !(err instanceof WorkflowNotFoundError)) throw err;
      const cause = err.cause;
      if (cause instanceof ApplicationFailure && cause.type === OPERATION_REFUSED) {
        throw refusal(type, String(cause.details?.[0] ?? 'unknown'), cause.message);
      }
      return (await (await run()).result()) as OperationStatus;
    }
  }

  /**
   * Cancels the run a synchronous request started, once it gave up on it. When the request did
   * not learn which run it started, the running one is cancelled only if it is the request's own
   * operation.
   */
  private async cancelStarted(
    run: Promise<WorkflowHandle> | undefined,
    workflowId: string,
    awaited: AwaitedOperation,
  ): Promise<void> {
    const handle = await run?.catch(() => undefined);
    if (handle) {
      await handle.cancel();
      return;
    }
    const running = await this.running(workflowId);
    if (running?.memo && !refusalOf(running.memo, awaited))
      await this.handle(workflowId, running.runId).cancel();
  }

  private async describeRun(workflowId: string, runId?: string): Promise<RunState | undefined> {
    try {
      const info = await this.deps.client.workflow.getHandle(workflowId, runId).describe();
      const memo = info.memo?.[MEMO_KEY] as OperationStatus | undefined;
      // describe() leaves the typed view empty for values stored without type metadata.
      const attributes = info.searchAttributes ?? {};
      const attribute = (name: string): string | undefined => {
        const value = attributes[name]?.[0];
        return typeof value === 'string' ? value : undefined;
      };
      const serviceId = attribute(OsbServiceId.name);
      const planId = attribute(OsbPlanId.name);
      // The failure's message is encoded (see src/temporal/failure-converter.ts): decode it.
      const lastFailure = info.raw.pendingActivities?.find((step) => step.lastFailure?.message)?.lastFailure;
      const waiting = lastFailure
        ? (
            await decodeOptionalFailureToOptionalError(
              this.deps.client.options.loadedDataConverter,
              lastFailure,
            )
          )?.message
        : undefined;
      return {
        ...(serviceId ? { serviceId } : {}),
        ...(planId ? { planId } : {}),
        runId: info.runId,
        running: info.status.name === 'RUNNING',
        statusName: info.status.name,
        startedAt: info.startTime.getTime(),
        ...(memo ? { memo } : {}),
        ...(waiting ? { waiting } : {}),
      };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }
}

/**
 * The answer to a request the run it waits on refused: what {@link WorkflowRuns.repeatOf} answers
 * for a request that finds `running` in progress.
 */
function refusal(type: OperationName, running: string, reason: string): OsbError {
  if (running === type && type === 'provision')
    return conflict('An instance with this id is being provisioned with different attributes.');
  if (running === type && type === 'bind')
    return conflict('A binding with this id is being created with different attributes.');
  return concurrencyError(reason);
}

/**
 * Whether an update was given up by the server, unanswered, because the workflow task that
 * carried it failed: Temporal answers FAILED_PRECONDITION, and the update may be sent again.
 */
function isUpdateGivenUp(err: unknown): boolean {
  const FAILED_PRECONDITION = 9;
  const codeOf = (e: unknown) => (e as { code?: unknown } | undefined)?.code;
  return (
    codeOf(err) === FAILED_PRECONDITION || (err instanceof Error && codeOf(err.cause) === FAILED_PRECONDITION)
  );
}
