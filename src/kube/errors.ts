/**
 * Reading errors of @kubernetes/client-node 1.x (`ApiException {code, body}`) by status code,
 * without instanceof (it breaks across module copies in jest and the workflow sandbox).
 */

/** HTTP status of an API error, or undefined for anything else (network errors, bugs). */
export function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' && code >= 100 && code < 600 ? code : undefined;
}

export const isNotFound = (err: unknown): boolean => statusCodeOf(err) === 404;
export const isAlreadyExists = (err: unknown): boolean => statusCodeOf(err) === 409;
/** A write conditioned on a resourceVersion that the object no longer has (409 Conflict). */
export const isConflict = (err: unknown): boolean => statusCodeOf(err) === 409;

/** The apiserver's own message of an API error (its Status.message), else the error's message. */
export function apiMessageOf(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const body = (err as { body?: unknown }).body;
    if (typeof body === 'string') {
      try {
        const status = JSON.parse(body) as { message?: unknown };
        if (typeof status.message === 'string') return status.message;
      } catch {
        // not JSON: fall through
      }
    } else if (typeof body === 'object' && body !== null) {
      const message = (body as { message?: unknown }).message;
      if (typeof message === 'string') return message;
    }
    const message = (err as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  }
  return String(err);
}
