/**
 * Starting an operation's workflow from a client: the one way the broker and the worker's
 * controllers start one, so each operation starts alike whoever asked for it.
 */
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { OperationName } from '../workflows/messages.js';
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
}

/**
 * Starts the operation's workflow, with the options of {@link operationStartOptions}.
 *
 * @throws WorkflowExecutionAlreadyStartedError while another run of the workflow id is open: one
 *   operation at a time per instance and per binding.
 */
export async function startOperation<R extends OperationStartRequest>(
  client: Client,
  { workflowId, taskQueue, type, request }: OperationStart<R>,
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  return client.workflow.start(operationWorkflowType(type), {
    workflowId,
    taskQueue,
    args: [request],
    workflowIdConflictPolicy: 'FAIL',
    ...operationStartOptions(type, request),
  });
}
