/**
 * What `last_operation` answers, from an operation's state as its workflow keeps it (the memo) or,
 * once the workflow's history is gone, as the record's status keeps it. Pure.
 */
import { serviceFabrikOperationType, type ServiceFabrikOperationType } from '../adoption/service-fabrik.js';
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
  /** The OSB operation the status tells of (ours, or what adoption read of Service Fabrik's). */
  readonly operation?: string;
  readonly instanceUsable?: boolean;
  readonly updateRepeatable?: boolean;
}

/**
 * The last operation as a record's status tells it: any state but `succeeded` and `failed` is
 * still in progress; the error, when there is one, is the description. A failed update or
 * deprovision says whether the instance is usable, a failed update whether it may be repeated,
 * when the status says so, as {@link lastOperationOf} does.
 */
export function lastOperationOfRecord(status: RecordStatus | undefined): LastOperation {
  const state = status?.state === 'succeeded' || status?.state === 'failed' ? status.state : 'in progress';
  const description = status?.error || status?.description;
  const failed = state === 'failed';
  const usable = failed && (status?.operation === 'update' || status?.operation === 'deprovision');
  return {
    state,
    ...(description ? { description } : {}),
    ...(usable && status?.instanceUsable !== undefined ? { instanceUsable: status.instanceUsable } : {}),
    ...(failed && status?.operation === 'update' && status.updateRepeatable !== undefined
      ? { updateRepeatable: status.updateRepeatable }
      : {}),
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
 * The operation a `last_operation` poll asks about: one this broker handed out (its type and the
 * run that carries it), or one Service Fabrik's broker handed out before the landscape was
 * adopted (its type alone: like Service Fabrik's broker, the answer is the last operation's).
 */
export type AskedOperation =
  | { readonly type: OperationType; readonly runId: string }
  | { readonly serviceFabrik: ServiceFabrikOperationType };

/**
 * The `operation` query of `last_operation`: absent or empty is undefined.
 *
 * @throws OsbError 400 when it is not an operation string this broker, or Service Fabrik's
 *   broker, hands out.
 */
export function parseOperationQuery(operation: string | undefined): AskedOperation | undefined {
  if (operation === undefined || operation === '') return undefined;
  const parsed = parseOperationString(operation);
  if (parsed) return parsed;
  const serviceFabrik = serviceFabrikOperationType(operation);
  if (serviceFabrik) return { serviceFabrik };
  throw badRequest(`Unknown operation "${operation.slice(0, 100)}".`);
}

/** Whether the poll asks about the deletion of the instance or binding (which, once it is gone, is 410). */
export function asksDeletion(kind: 'instance' | 'binding', asked: AskedOperation | undefined): boolean {
  if (!asked) return false;
  if ('serviceFabrik' in asked) return asked.serviceFabrik === 'delete';
  return asked.type === (kind === 'instance' ? 'deprovision' : 'unbind');
}

/** The run the poll names, when it names one (this broker's operation strings do). */
export const askedRunId = (asked: AskedOperation | undefined): string | undefined =>
  asked && 'runId' in asked ? asked.runId : undefined;
