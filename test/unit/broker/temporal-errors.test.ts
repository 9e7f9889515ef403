/**
 * A Temporal that cannot be reached: 503 with Retry-After for the platform, never 500; and
 * last_operation answered from the record meanwhile.
 */
import { ServiceError, type Client } from '@temporalio/client';
import {
  asPlatformError,
  isTemporalUnreachable,
  TEMPORAL_RETRY_AFTER_SECONDS,
} from '../../../src/broker/temporal-errors.js';
import type { ClusterClient } from '../../../src/kube/clients.js';
import { WorkflowRuns } from '../../../src/broker/workflow-runs.js';
import { OsbError } from '../../../src/osb/errors.js';

/** An error as @grpc/grpc-js raises it for a call with this status code. */
const grpcError = (code: number, details: string): Error =>
  Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });

const unreachable = () =>
  new ServiceError('Failed to describe workflow', { cause: grpcError(14, 'No connection established') });

describe('isTemporalUnreachable', () => {
  test.each([
    ['UNAVAILABLE, as the client wraps it', unreachable(), true],
    ['UNAVAILABLE, bare', grpcError(14, 'Connection refused'), true],
    ['DEADLINE_EXCEEDED', new ServiceError('x', { cause: grpcError(4, 'Deadline exceeded') }), true],
    ['NOT_FOUND', new ServiceError('x', { cause: grpcError(5, 'not found') }), false],
    ['INVALID_ARGUMENT', grpcError(3, 'bad query'), false],
    ['an error without a gRPC cause', new Error('connect ECONNREFUSED'), false],
    ['not an error', 'boom', false],
  ])('GIVEN %s THEN %s', (_name, err, expected) => {
    expect(isTemporalUnreachable(err)).toBe(expected);
  });
});

describe('asPlatformError', () => {
  test('GIVEN Temporal unreachable THEN 503 ServiceUnavailable with Retry-After, no gRPC detail', () => {
    const err = asPlatformError(unreachable());
    expect(err).toBeInstanceOf(OsbError);
    const failure = err as OsbError;
    expect([failure.status, failure.code, failure.retryAfterSeconds]).toEqual([
      503,
      'ServiceUnavailable',
      TEMPORAL_RETRY_AFTER_SECONDS,
    ]);
    expect(failure.description).not.toMatch(/connection|grpc|14/i);
  });

  test('GIVEN any other error THEN it is unchanged', () => {
    const other = new Error('else');
    expect(asPlatformError(other)).toBe(other);
  });
});

describe('WorkflowRuns.lastOperation while Temporal cannot be reached', () => {
  const runs = () =>
    new WorkflowRuns({
      client: {
        workflow: { getHandle: () => ({ describe: () => Promise.reject(unreachable()) }) },
      } as unknown as Client,
      // the claims of updates and bindings are not reached by last_operation
      master: {} as ClusterClient,
      taskQueue: 'q',
      syncTimeoutMs: 1000,
      operationTimeoutSeconds: 60,
    });

  test('GIVEN a record WHEN asked THEN the record status answers', async () => {
    const answer = await runs().lastOperation('instance', 'instance/i', undefined, async () => ({
      record: { status: { state: 'succeeded' } },
      elsewhere: false,
    }));
    expect(answer).toEqual({ state: 'succeeded' });
  });

  test('GIVEN a record in progress WHEN asked THEN in progress, with the record description', async () => {
    const answer = await runs().lastOperation('instance', 'instance/i', undefined, async () => ({
      record: { status: { state: 'in progress', description: 'Creating.' } },
      elsewhere: false,
    }));
    expect(answer).toMatchObject({ state: 'in progress', description: 'Creating.' });
  });

  test('GIVEN no record WHEN asked THEN the unreachable error (503 once mapped), not 404', async () => {
    const err = await runs()
      .lastOperation('instance', 'instance/i', undefined, async () => ({ elsewhere: false }))
      .catch((e: unknown) => e);
    expect(isTemporalUnreachable(err)).toBe(true);
  });
});
