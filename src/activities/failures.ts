/**
 * Two kinds of error, as in controller-runtime: terminal ones fail the operation at once with a
 * human description (a template error, an object the apiserver rejects as invalid); everything
 * else (connection refused, conflicts, 5xx, 429, a cluster not yet reachable) is retried with
 * backoff while the operation is within its deadline.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
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

/**
 * A retry in the normal course of things (a write that lost a race with another writer, a step
 * waiting for objects to go): retried as {@link retryable}, but benign, so that the worker logs it
 * at debug rather than as a warning with its stack. A failure of the cluster or of the network is
 * no such thing and stays {@link retryable}.
 */
export const expectedRetry = (message: string): ApplicationFailure =>
  ApplicationFailure.create({ message, nonRetryable: false, category: ApplicationFailureCategory.BENIGN });

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
  // Another writer changed the object since it was read: the next attempt reads it again.
  if (status === 409) return expectedRetry(`${message} (HTTP ${status})`);
  return retryable(status ? `${message} (HTTP ${status})` : message);
}
