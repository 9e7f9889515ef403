/**
 * What the worker measures of its operations, on the integration run's Temporal dev server: the
 * real workflow code over the stub activities (test/fixtures/workflows), with the workflow
 * interceptor and its sink, and the activity interceptor, as the worker registers them. Each
 * operation's ending is reported once, with its kind, outcome, plan and cluster; steps run again
 * are counted by name.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { stepRetries } from '../../src/activities/metrics.js';
import type { FinishedOperation, OperationRecorder } from '../../src/metrics/recorders.js';
import {
  MEMO_KEY,
  startingStatus,
  WORKFLOW_TYPES,
  type InstanceRequest,
  type OperationStatus,
} from '../../src/workflows/messages.js';
import {
  OsbInstanceId,
  OsbOperation,
  OsbPlanId,
  OsbServiceId,
} from '../../src/workflows/search-attributes.js';
import { stubActivities, StubWorld } from '../fixtures/workflows/stub-activities.js';
import { builtWorkflows, environment, eventually, temporalClient, unique } from '../support/env.js';

let connection: NativeConnection;
let temporal: { client: Client; close(): Promise<void> };
const world = new StubWorld();

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: environment().temporal.address });
  temporal = await temporalClient();
});

afterAll(async () => {
  await connection?.close();
  await temporal?.close();
});

/** What the worker reported. */
function recording() {
  const finished: Omit<FinishedOperation, 'seconds'>[] = [];
  const retries = new Map<string, number>();
  const recorder: OperationRecorder = {
    operationFinished({ seconds, ...operation }) {
      expect(seconds).toBeGreaterThanOrEqual(0);
      finished.push(operation);
    },
    stepRetried(step) {
      retries.set(step, (retries.get(step) ?? 0) + 1);
    },
    templateRendered: () => undefined,
  };
  return { finished, retries, recorder };
}

/** Runs `test` with a worker as the worker root builds it (over the stub activities) reporting to `recorder`. */
async function withWorker<T>(
  recorder: OperationRecorder,
  test: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = unique('operation-metrics');
  const worker = await Worker.create({
    connection,
    namespace: environment().temporal.namespace,
    taskQueue,
    ...builtWorkflows(recorder),
    activities: stubActivities(world),
    interceptors: { activity: [stepRetries(recorder)] },
  });
  return worker.runUntil(test(taskQueue));
}

const instanceRequest = (instanceId: string, fields: Partial<InstanceRequest> = {}): InstanceRequest => ({
  instanceId,
  serviceId: 'postgresql',
  planId: 'small',
  parameters: { size: 1 },
  requestHash: 'hash-of-small',
  deadlineSeconds: 60,
  ...fields,
});

/** Starts a provision as the broker does, search attributes included. */
function provision(taskQueue: string, request: InstanceRequest): Promise<WorkflowHandle> {
  return temporal.client.workflow.start(WORKFLOW_TYPES.provision, {
    taskQueue,
    workflowId: unique('provision'),
    args: [request],
    memo: { [MEMO_KEY]: startingStatus('provision', request) },
    typedSearchAttributes: [
      { key: OsbInstanceId, value: request.instanceId },
      { key: OsbServiceId, value: request.serviceId },
      { key: OsbPlanId, value: request.planId },
      { key: OsbOperation, value: 'provision' },
    ],
  });
}

describe('the metrics of the operations in the worker', () => {
  test('GIVEN a step that fails a few times WHEN the provision succeeds THEN one success is reported, on its cluster, and the step’s retries', async () => {
    const { finished, retries, recorder } = recording();
    const id = unique('instance');
    world.script(id, { failing: { step: 'applyTemplate', message: 'connection refused', times: 6 } });
    await withWorker(recorder, async (taskQueue) => {
      const result = (await (await provision(taskQueue, instanceRequest(id))).result()) as OperationStatus;
      expect(result.state).toBe('succeeded');
      await eventually('the ending to be reported', async () => (finished.length > 0 ? true : undefined));
    });
    expect(finished).toEqual([{ kind: 'provision', outcome: 'succeeded', planId: 'small', clusterId: '1' }]);
    // Seven attempts in all: the first of the local run and of the queued run are not retries.
    expect(world.attemptsOf(id, 'applyTemplate')).toBe(7);
    expect([...retries]).toEqual([['applyTemplate', 5]]);
  });

  test('GIVEN an operator that never answers WHEN the deadline passes THEN one failure is reported', async () => {
    const { finished, recorder } = recording();
    const id = unique('instance');
    world.script(id, { reports: { provision: { state: 'in progress', description: 'creating' } } });
    await withWorker(recorder, async (taskQueue) => {
      const handle = await provision(taskQueue, instanceRequest(id, { deadlineSeconds: 1 }));
      expect(((await handle.result()) as OperationStatus).state).toBe('failed');
      await eventually('the ending to be reported', async () => (finished.length > 0 ? true : undefined));
    });
    expect(finished).toEqual([{ kind: 'provision', outcome: 'failed', planId: 'small', clusterId: '1' }]);
  });

  test('GIVEN a running provision WHEN it is cancelled THEN one cancellation is reported', async () => {
    const { finished, recorder } = recording();
    const id = unique('instance');
    world.script(id, { reports: { provision: { state: 'in progress', description: 'creating' } } });
    await withWorker(recorder, async (taskQueue) => {
      const handle = await provision(taskQueue, instanceRequest(id));
      await eventually('the provision to wait for the operator', async () => {
        const memo = (await handle.describe()).memo?.[MEMO_KEY] as OperationStatus | undefined;
        return memo?.description === 'creating' ? true : undefined;
      });
      await handle.cancel();
      await expect(handle.result()).rejects.toThrow();
      await eventually('the ending to be reported', async () => (finished.length > 0 ? true : undefined));
    });
    expect(finished).toEqual([{ kind: 'provision', outcome: 'cancelled', planId: 'small', clusterId: '1' }]);
  });

  test('GIVEN a workflow that is not an operation WHEN it ends THEN nothing is reported', async () => {
    const { finished, recorder } = recording();
    const id = unique('instance');
    await withWorker(recorder, async (taskQueue) => {
      // The same workflow, started without the search attributes the broker sets.
      const handle = await temporal.client.workflow.start(WORKFLOW_TYPES.provision, {
        taskQueue,
        workflowId: unique('provision'),
        args: [instanceRequest(id)],
      });
      expect(((await handle.result()) as OperationStatus).state).toBe('succeeded');
    });
    expect(finished).toEqual([]);
  });
});
