/**
 * What a failed Temporal call means for the platform: when Temporal cannot be reached (the server
 * restarting, the network between), the request may succeed later, so the broker answers 503 with
 * `Retry-After` rather than 500, and reads that can do without Temporal answer from the records.
 */
import { isGrpcServiceError } from '@temporalio/client';
import { unavailable, type OsbError } from '../osb/errors.js';

/** gRPC codes of a call that did not reach a serving Temporal: UNAVAILABLE, DEADLINE_EXCEEDED. */
const UNREACHABLE_CODES: ReadonlySet<number> = new Set([14, 4]);

/** How long the platform is asked to wait before it sends the request again, in seconds. */
export const TEMPORAL_RETRY_AFTER_SECONDS = 15;

/** Whether `err` (or an error it was caused by) is a call that did not reach a serving Temporal. */
export function isTemporalUnreachable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 10; depth += 1) {
    if (isGrpcServiceError(e) && UNREACHABLE_CODES.has(e.code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The 503 the platform gets while Temporal cannot be reached. */
export const temporalUnavailable = (): OsbError =>
  unavailable(
    'The broker cannot reach its workflow service right now; send the request again later.',
    TEMPORAL_RETRY_AFTER_SECONDS,
  );

/** `err` as the platform should see it: the 503 when Temporal was unreachable, else unchanged. */
export const asPlatformError = (err: unknown): unknown =>
  isTemporalUnreachable(err) ? temporalUnavailable() : err;
