/**
 * Two kinds of error, as in controller-runtime: terminal ones fail the operation at once with a
 * human description (a template error, an object the apiserver rejects as invalid); everything
 * else (connection refused, conflicts, 5xx, 429, a cluster not yet reachable) is retried with
 * backoff while the operation is within its deadline.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { apiMessageOf, statusCodeOf } from '../kube/errors.js';

/** Failure types the workflows recognise. */
export const FAILURE_TYPES = {
  template: 'TemplateError',
  invalidObject: 'InvalidObject',
  plan: 'PlanError',
  /**
   * A reference in a rendered object (`getValueFrom`) that cannot be resolved: a field not found,
   * a value that cannot be transformed or is of the wrong type.
   */
  reference: 'ReferenceError',
  /** A custom action the instance cannot run now (being deleted, never provisioned). */
  instance: 'InstanceError',
} as const;

/** A failure that is retried (the activity's retry policy applies). */
export const retryable = (message: string): Error => new Error(message);

/** A failure that ends the operation: the message is the description users see. */
export const terminal = (message: string, type: string): ApplicationFailure =>
  ApplicationFailure.nonRetryable(message, type);

/** Terminal API errors: the request itself is wrong and will stay wrong. */
const TERMINAL_STATUS = new Set([400, 422]);

/**
 * Wraps an error of a Kubernetes call with what we were doing, deciding whether to retry.
 * `what` reads like "applying postgresql sapcp-1234 in cluster 1".
 */
export function kubeFailure(err: unknown, what: string): Error {
  if (err instanceof ApplicationFailure) return err;
  const status = statusCodeOf(err);
  const message = `${what}: ${apiMessageOf(err)}`;
  if (status !== undefined && TERMINAL_STATUS.has(status))
    return terminal(message, FAILURE_TYPES.invalidObject);
  // Server-side apply reports an object that does not fit its type's schema as a 500.
  if (/failed to create typed patch object/.test(message))
    return terminal(message, FAILURE_TYPES.invalidObject);
  return retryable(status ? `${message} (HTTP ${status})` : message);
}
