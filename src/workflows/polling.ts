/**
 * How often an operation checks the operator's status: soon at first, since most operators answer
 * quickly, then less often, and never so often over a long deadline that the workflow's history
 * outgrows what Temporal keeps: every check adds a few events (a workflow task, the step's marker,
 * a timer), and Temporal ends a run whose history grows too long.
 */

/** The first wait after a check that says "in progress". */
export const FIRST_POLL_MS = 250;

/**
 * The longest wait before the first check after an apply that left the operator a change to
 * observe, when a watch will say once it did: the check waits for that word, and this bounds the
 * wait when the word is lost (a watch that reconnects, a worker that restarts).
 */
export const FIRST_CHECK_AFTER_APPLY_MS = 5_000;

/**
 * The part of {@link FIRST_CHECK_AFTER_APPLY_MS} the apply step itself waits for the operator's word
 * (applyTemplateAwaited), in the worker, holding its place among the worker's steps: most operators
 * answer within it; past it, the operation waits in its workflow, holding nothing.
 */
export const WORD_IN_THE_STEP_MS = 2_000;

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
