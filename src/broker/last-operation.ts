/**
 * What `last_operation` answers, from an operation's state as its workflow keeps it (the memo) or,
 * once the workflow's history is gone, as the record's status keeps it. Pure.
 */
import { badRequest } from '../osb/errors.js';
import type { LastOperation } from '../osb/service-broker.js';
import {
  parseOperationString,
  type OperationName,
  type OperationStatus,
  type OperationType,
  waitDescription,
} from '../workflows/messages.js';

/** Seconds a platform should wait before polling a running operation again. */
export const RETRY_AFTER_SECONDS = 2;

/** Deprovision and unbind: given up on, they stop where they are rather than roll back. */
export const isDeletion = (type: OperationName): boolean => type === 'deprovision' || type === 'unbind';

/**
 * An operation's state as `last_operation` reports it: `instance_usable` only for a failed update
 * or deprovision, `update_repeatable` only for a failed update (OSB: a failed provision leaves no
 * instance to speak of), and a retry delay while it runs.
 */
export function lastOperationOf(status: OperationStatus): LastOperation {
  const failed = status.state === 'failed';
  const usable = failed && (status.operation === 'update' || status.operation === 'deprovision');
  return {
    state: status.state,
    ...(status.description ? { description: status.description } : {}),
    ...(usable && status.instanceUsable !== undefined ? { instanceUsable: status.instanceUsable } : {}),
    ...(failed && status.operation === 'update' && status.updateRepeatable !== undefined
      ? { updateRepeatable: status.updateRepeatable }
      : {}),
    ...(status.state === 'in progress' ? { retryAfterSeconds: RETRY_AFTER_SECONDS } : {}),
  };
}

/** What a record's status tells of the last operation. */
export interface RecordStatus {
  readonly state?: string;
  readonly description?: string;
  readonly error?: string;
}

/**
 * The last operation as a record's status tells it: any state but `succeeded` and `failed` is
 * still in progress; the error, when there is one, is the description.
 */
export function lastOperationOfRecord(status: RecordStatus | undefined): LastOperation {
  const state = status?.state === 'succeeded' || status?.state === 'failed' ? status.state : 'in progress';
  const description = status?.error || status?.description;
  return {
    state,
    ...(description ? { description } : {}),
    ...(state === 'in progress' ? { retryAfterSeconds: RETRY_AFTER_SECONDS } : {}),
  };
}

/**
 * The operation's state: its memo, except that a run that stopped without recording its outcome
 * (terminated, timed out, cancelled) failed, and the description says how. `statusName` is
 * Temporal's name of the run's status (`RUNNING`, `COMPLETED`, `CANCELLED`, `TERMINATED`, ...).
 */
export function settledStatus(
  memo: OperationStatus,
  run: { readonly running: boolean; readonly statusName: string; readonly waiting?: string },
): OperationStatus {
  const waiting = run.running && memo.state === 'in progress' && run.waiting && waitDescription(run.waiting);
  if (waiting) return { ...memo, description: waiting };
  if (run.running || memo.state !== 'in progress') return memo;
  const reason =
    run.statusName !== 'CANCELLED'
      ? `stopped (${run.statusName.toLowerCase()})`
      : isDeletion(memo.operation)
        ? 'was stopped before it finished'
        : 'was cancelled and rolled back';
  return { ...memo, state: 'failed', description: `The ${memo.operation} ${reason}.` };
}

/**
 * The `operation` query of `last_operation`: absent or empty is undefined.
 *
 * @throws OsbError 400 when it is not an operation string this broker hands out.
 */
export function parseOperationQuery(
  operation: string | undefined,
): { type: OperationType; runId: string } | undefined {
  if (operation === undefined || operation === '') return undefined;
  const parsed = parseOperationString(operation);
  if (!parsed) throw badRequest(`Unknown operation "${operation.slice(0, 100)}".`);
  return parsed;
}
