/** How a failed Kubernetes call is retried, and whether the worker warns of it (activities/failures.ts). */
import { ApplicationFailure } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { expectedRetry, FAILURE_TYPES, kubeFailure, retryable } from '../../../src/activities/failures.js';

const apiError = (code: number, message: string) =>
  Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: JSON.stringify({ message }) });

describe('a failed Kubernetes call', () => {
  test('GIVEN a conflict (409) WHEN wrapped THEN it is retried as a benign failure, which the worker logs at debug', () => {
    const failure = kubeFailure(apiError(409, 'the object has been modified'), 'applying Job grant-1');
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({
      message: 'applying Job grant-1: the object has been modified (HTTP 409)',
      nonRetryable: false,
      category: ApplicationFailureCategory.BENIGN,
    });
  });

  test.each([
    [500, 'etcdserver: request timed out'],
    [429, 'too many requests'],
    [503, 'the server is shutting down'],
  ])('GIVEN HTTP %i WHEN wrapped THEN it is retried and stays a warning', (code, message) => {
    const failure = kubeFailure(apiError(code, message), 'reading Secret s');
    expect(failure).not.toBeInstanceOf(ApplicationFailure);
    expect(failure.message).toBe(`reading Secret s: ${message} (HTTP ${code})`);
  });

  test('GIVEN an invalid object (422) WHEN wrapped THEN it ends the operation', () => {
    expect(kubeFailure(apiError(422, 'spec.x: Invalid value'), 'applying ConfigMap c')).toMatchObject({
      nonRetryable: true,
      type: FAILURE_TYPES.invalidObject,
    });
  });

  test('GIVEN no answer at all WHEN wrapped THEN it is retried and stays a warning', () => {
    const failure = kubeFailure(new Error('connect ECONNREFUSED 127.0.0.1:6443'), 'reading Secret s');
    expect(failure).not.toBeInstanceOf(ApplicationFailure);
  });

  test('GIVEN the two kinds of retry WHEN made THEN only the expected one is benign', () => {
    expect(expectedRetry('waiting for 1 object(s) to go')).toMatchObject({
      nonRetryable: false,
      category: ApplicationFailureCategory.BENIGN,
    });
    expect(retryable('the cluster does not answer')).not.toBeInstanceOf(ApplicationFailure);
  });
});
