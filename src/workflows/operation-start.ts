/**
 * How an operation's workflow starts, whoever starts it (the broker, a controller of the worker, a
 * rollout, the rotation schedule): its workflow type, its state in its memo, its search attributes,
 * and a new run allowed under the instance's or binding's workflow id once the last one closed.
 * Pure and free of Node builtins, so that workflows starting children use it too; clients start
 * operations through `startOperation` (src/temporal/operations.ts).
 */
import { isCustomAction } from '../resources/actions.js';
import { MOVE_OPERATION } from '../resources/migration.js';
import {
  ACTION_WORKFLOW_TYPE,
  MEMO_KEY,
  MOVE_WORKFLOW_TYPE,
  ROTATE_SECRET_ACTION,
  SECRET_ROTATION_WORKFLOW_TYPE,
  WORKFLOW_TYPES,
  startingStatus,
  type OperationName,
} from './messages.js';
import { operationSearchAttributes } from './search-attributes.js';

/** What an operation's start reads of its request: the ids it works on and the request's hash. */
export type OperationStartRequest = Parameters<typeof startingStatus>[1] &
  Parameters<typeof operationSearchAttributes>[1];

/**
 * The workflow type an operation runs as: one per OSB operation, one for the rotation of a
 * generated secret, one for every other custom action, one for a move.
 */
export function operationWorkflowType(type: OperationName): string {
  if (type === ROTATE_SECRET_ACTION) return SECRET_ROTATION_WORKFLOW_TYPE;
  if (type === MOVE_OPERATION) return MOVE_WORKFLOW_TYPE;
  return isCustomAction(type) ? ACTION_WORKFLOW_TYPE : WORKFLOW_TYPES[type];
}

/**
 * The options every start of an operation's workflow carries, from a client or as a child: the
 * operation's starting state as its memo (`last_operation` reads it before the workflow ran a
 * step), its search attributes, and a new run under a workflow id whose last run closed, whatever
 * its outcome.
 */
export function operationStartOptions(type: OperationName, request: OperationStartRequest) {
  return {
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    memo: { [MEMO_KEY]: startingStatus(type, request) },
    typedSearchAttributes: operationSearchAttributes(type, request),
  } as const;
}
