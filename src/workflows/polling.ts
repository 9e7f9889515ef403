/**
 * How often an operation checks the operator's status: soon at first (most operators answer within
 * a second or two), then less often, and never so often over a long deadline that the workflow's
 * history outgrows what Temporal keeps. Each check adds about six events (a workflow task's three, the
 * step's marker, a timer's two); Temporal warns at 10,240 events and ends the run at 51,200.
 */

/** The first wait after a check that says "in progress". */
export const FIRST_POLL_MS = 250;

/** The longest wait between two checks for deadlines up to MAX_CHECKS of them. */
export const LONGEST_POLL_MS = 10_000;

/** About the most checks one operation makes, however long its deadline. */
export const MAX_CHECKS = 1000;

/** The longest wait between checks for an operation with this deadline. */
export function longestPoll(deadlineSeconds: number): number {
  return Math.max(LONGEST_POLL_MS, Math.ceil((deadlineSeconds * 1000) / MAX_CHECKS));
}

/** The wait after `previousMs` (doubling up to {@link longestPoll}). */
export function nextPoll(previousMs: number, deadlineSeconds: number): number {
  return Math.min(previousMs * 2, longestPoll(deadlineSeconds));
}
