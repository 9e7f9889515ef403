/**
 * Starting an operation's workflow from a client: the one way the broker and the worker's
 * controllers start one, so each operation starts alike whoever asked for it.
 */
import {
  WithStartWorkflowOperation,
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import {
  operationOutcomeUpdate,
  type AwaitedOperation,
  type OperationName,
  type OperationStatus,
} from '../workflows/messages.js';
import {
  operationStartOptions,
  operationWorkflowType,
  type OperationStartRequest,
} from '../workflows/operation-start.js';

/** Where and as what an operation's workflow starts. */
export interface OperationStart<R extends OperationStartRequest> {
  /** The instance's or binding's workflow id (src/resources/names.ts). */
  readonly workflowId: string;
  readonly taskQueue: string;
  readonly type: OperationName;
  /** The workflow's one argument. */
  readonly request: R;
  /**
   * Start only when the workflow id has never run (as far as Temporal keeps closed runs): for a
   * create that found no record, whose start must not take effect after an operation of the id
   * that ran meanwhile (a start delayed in transit lands after it).
   */
  readonly firstOfItsId?: boolean;
}

/**
 * The workflow options of an operation's start: one run at a time under its workflow id, so a
 * start while another run of the id is open fails (the caller answers from that run); with
 * `firstOfItsId`, a start after any run of the id fails too; and the options of
 * {@link operationStartOptions}.
 */
const startOptions = <R extends OperationStartRequest>({
  workflowId,
  taskQueue,
  type,
  request,
  firstOfItsId,
}: OperationStart<R>) =>
  ({
    workflowId,
    taskQueue,
    args: [request],
    workflowIdConflictPolicy: 'FAIL',
    ...operationStartOptions(type, request),
    ...(firstOfItsId ? { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const } : {}),
  }) as const;

/**
 * Starts the operation's workflow, with the options of {@link operationStartOptions}.
 *
 * @throws WorkflowExecutionAlreadyStartedError while another run of the workflow id is open: one
 *   operation at a time per instance and per binding; with `firstOfItsId`, when any run of it is
 *   kept.
 */
export async function startOperation<R extends OperationStartRequest>(
  client: Client,
  start: OperationStart<R>,
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  return client.workflow.start(operationWorkflowType(start.type), startOptions(start));
}

/** An operation started together with the update that answers with its final status. */
export interface OperationWithOutcome {
  /**
   * The operation's final status, the {@link operationOutcomeUpdate}'s result.
   *
   * @throws WorkflowExecutionAlreadyStartedError while another run of the workflow id is open
   *   (nothing was started); WorkflowUpdateFailedError when the run ended without answering.
   */
  readonly outcome: Promise<OperationStatus>;
  /** The run started; rejects when none was. */
  readonly workflow: Promise<WorkflowHandle>;
}

/**
 * Starts the operation's workflow as {@link startOperation} does, in one call with the update
 * that answers with its final status (Update-With-Start), for a caller that waits for the
 * operation's end: the answer comes when the workflow reaches it, with no reading of its history.
 * The run's handle is known once the run's first workflow task has accepted the update.
 */
export function startOperationWithOutcome<R extends OperationStartRequest>(
  client: Client,
  start: OperationStart<R>,
): OperationWithOutcome {
  const startWorkflowOperation = new WithStartWorkflowOperation(
    operationWorkflowType(start.type),
    startOptions(start),
  );
  const awaited: AwaitedOperation = { operation: start.type, requestHash: start.request.requestHash };
  // Not executeUpdateWithStart: the run's handle comes with the call's first answer, which that
  // call only gets once the update completes (or the server's wait for it ends), and a request
  // that gives up before then must know the run it cancels. Accepted, the update is answered
  // after the run's first workflow task; its result is then waited for on the update itself.
  const update = client.workflow.startUpdateWithStart(operationOutcomeUpdate, {
    args: [awaited],
    waitForStage: 'ACCEPTED',
    startWorkflowOperation,
  });
  return {
    outcome: update.then((accepted) => accepted.result()),
    workflow: startWorkflowOperation.workflowHandle(),
  };
}
