/**
 * The operation workflows over stub activities (test/fixtures/workflows): on the integration run's
 * Temporal dev server, a worker on a task queue of its own runs the real workflow code, so
 * rollback, cancellation, the deadline and retries are covered without clusters or an operator.
 * Each test asserts the result, the memo `last_operation` reads and the records the stubs keep.
 *
 * test/fixtures/workflows/histories keeps the histories of such runs: replaying them proves that the
 * workflow code still takes up operations already running where they are. With
 * INTEROP_RECORD_HISTORIES=1 the runs write their histories there anew (see docs/architecture.md,
 * "Changing workflow code").
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root.js';
import { format, resolveConfig } from 'prettier';
import {
  CancelledFailure,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import {
  ACTION_WORKFLOW_TYPE,
  MEMO_KEY,
  OPERATION_OUTCOME_UPDATE,
  OPERATION_REFUSED,
  operationOutcomeUpdate,
  ROTATE_SECRET_ACTION,
  SECRET_ROTATION_WORKFLOW_TYPE,
  startingStatus,
  type ActionRequest,
  type SecretRotationRequest,
  WORKFLOW_TYPES,
  type BindingRequest,
  type InstanceRequest,
  type OperationStatus,
  type OperationType,
} from '../../src/workflows/messages.js';
import { startOperationWithOutcome } from '../../src/temporal/operations.js';
import { stubActivities, StubWorld, type Script } from '../fixtures/workflows/stub-activities.js';
import { builtWorkflows, environment, eventually, temporalClient, unique } from '../support/env.js';

const HISTORIES = new URL('../fixtures/workflows/histories/', import.meta.url);

/** The protobufjs of @temporalio/proto: its history type and its ProtoJSON reader and writer. */
function historyJson() {
  const requireFromProto = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'));
  const protojson = requireFromProto('protobufjs/ext/protojson') as {
    fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): unknown;
    toJson(type: unknown, message: unknown): unknown;
  };
  const root = patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown };
  return { ...protojson, historyType: root.lookupType('temporal.api.history.v1.History') };
}

/**
 * A workflow history from its JSON, as `temporal workflow show --output json` writes it. Read with
 * the protobufjs of @temporalio/proto: @temporalio/common's historyFromJSON reads with a copy of its
 * own, which does not know the history types when npm installs the two apart.
 */
function historyFromFile(name: string): proto.temporal.api.history.v1.IHistory {
  const { fromJson, historyType } = historyJson();
  const json = JSON.parse(readFileSync(new URL(name, HISTORIES), 'utf8')) as unknown;
  return fromJson(historyType, json, { ignoreUnknownFields: true }) as proto.temporal.api.history.v1.IHistory;
}

/**
 * With INTEROP_RECORD_HISTORIES set, writes the history of the operation `handle` ran (it has
 * ended) to the histories folder, in the repository's prettier style, as
 * `<operation>--<what the test does>.json`: the test's WHEN clause, else its GIVEN clause.
 */
async function keepHistory(operation: string, handle: WorkflowHandle): Promise<void> {
  if (!process.env.INTEROP_RECORD_HISTORIES) return;
  const testName = expect.getState().currentTestName ?? '';
  const clause = /WHEN (.*?) THEN/.exec(testName)?.[1] ?? /GIVEN (.*?) THEN/.exec(testName)?.[1] ?? testName;
  const slug = clause
    .toLowerCase()
    .replace(/['’]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  const { toJson, historyType } = historyJson();
  const file = new URL(`${operation}--${slug}.json`, HISTORIES);
  // Indented as the CLI writes it: prettier keeps an object it finds on several lines so.
  const text = JSON.stringify(toJson(historyType, await handle.fetchHistory()), null, 2);
  const options = await resolveConfig(fileURLToPath(file));
  writeFileSync(file, await format(text, { ...options, parser: 'json' }));
}

let connection: NativeConnection;
let temporal: { client: Client; close(): Promise<void> };
const world = new StubWorld();

beforeAll(async () => {
  // Steps that fail on purpose would fill the output with their warnings.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  connection = await NativeConnection.connect({ address: environment().temporal.address });
  temporal = await temporalClient();
});

afterAll(async () => {
  await connection?.close();
  await temporal?.close();
});

/** Runs `test` with a worker of the workflows over the stub activities, on a task queue of its own. */
async function withWorker<T>(test: (taskQueue: string) => Promise<T>): Promise<T> {
  const taskQueue = unique('workflows');
  const worker = await Worker.create({
    connection,
    namespace: environment().temporal.namespace,
    taskQueue,
    ...builtWorkflows(),
    activities: stubActivities(world),
  });
  return worker.runUntil(test(taskQueue));
}

const instanceRequest = (instanceId: string, fields: Partial<InstanceRequest> = {}): InstanceRequest => ({
  instanceId,
  serviceId: 'postgresql',
  planId: 'small',
  parameters: { size: 1 },
  requestHash: `hash-of-${fields.planId ?? 'small'}`,
  deadlineSeconds: 60,
  ...fields,
});

const bindingRequest = (instanceId: string, bindingId: string): BindingRequest => ({
  instanceId,
  bindingId,
  serviceId: 'postgresql',
  planId: 'small',
  requestHash: 'hash-of-binding',
  deadlineSeconds: 60,
});

/** Starts an operation as the broker does: the workflow of its type, its starting status as the memo. */
function start(
  taskQueue: string,
  type: OperationType,
  request: InstanceRequest | BindingRequest,
): Promise<WorkflowHandle> {
  return temporal.client.workflow.start(WORKFLOW_TYPES[type], {
    taskQueue,
    workflowId: unique(type),
    args: [request],
    memo: { [MEMO_KEY]: startingStatus(type, request) },
  });
}

async function memoOf(handle: WorkflowHandle): Promise<OperationStatus | undefined> {
  return (await handle.describe()).memo?.[MEMO_KEY] as OperationStatus | undefined;
}

/** Runs an operation to its end; returns its result and the memo it left. */
async function run(
  type: OperationType,
  request: InstanceRequest | BindingRequest,
): Promise<{ result: OperationStatus; memo: OperationStatus | undefined }> {
  return withWorker(async (taskQueue) => {
    const handle = await start(taskQueue, type, request);
    const result = (await handle.result()) as OperationStatus;
    await keepHistory(type, handle);
    return { result, memo: await memoOf(handle) };
  });
}

/** Starts an operation, cancels it once the operator says `progress`, as a synchronous request that gave up. */
async function cancelWhile(
  type: OperationType,
  request: InstanceRequest | BindingRequest,
  progress: string,
): Promise<{ error: unknown; memo: OperationStatus | undefined }> {
  return withWorker(async (taskQueue) => {
    const handle = await start(taskQueue, type, request);
    await eventually(`the ${type} to wait for the operator`, async () =>
      (await memoOf(handle))?.description === progress ? true : undefined,
    );
    await handle.cancel();
    const error = await handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    await keepHistory(type, handle);
    return { error, memo: await memoOf(handle) };
  });
}

const waiting = (description: string): Script['reports'] => ({
  provision: { state: 'in progress', description },
  update: { state: 'in progress', description },
  deprovision: { state: 'in progress', description },
});

describe('provision', () => {
  test('GIVEN an operator that answers WHEN an instance is provisioned THEN it succeeds and the record says so', async () => {
    const id = unique('instance');
    const { result, memo } = await run('provision', instanceRequest(id, { dashboardUrl: 'https://db/1' }));
    expect(result).toEqual({
      operation: 'provision',
      requestHash: 'hash-of-small',
      state: 'succeeded',
      description: 'The instance is provisioned',
      dashboardUrl: 'https://db/1',
    });
    expect(memo).toEqual(result);
    expect(world.instance(id).status).toEqual(result);
    expect(world.instance(id).objects).toEqual(['database-small']);
  });

  test('GIVEN a synchronous provision WHEN it is cancelled THEN what it created is deleted and the record removed', async () => {
    const id = unique('instance');
    world.script(id, {
      reports: { provision: { state: 'in progress', description: 'creating the database' } },
    });
    const { error, memo } = await cancelWhile('provision', instanceRequest(id), 'creating the database');
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(world.instances.has(id)).toBe(false);
    expect(memo).toEqual({
      operation: 'provision',
      requestHash: 'hash-of-small',
      state: 'in progress',
      description: 'Deleting the operator’s resources',
    });
  });

  test('GIVEN an operator that never answers WHEN the deadline passes THEN the provision fails, naming the last report', async () => {
    const id = unique('instance');
    world.script(id, { reports: waiting('creating the database') });
    const { result, memo } = await run('provision', instanceRequest(id, { deadlineSeconds: 1 }));
    expect(result).toEqual({
      operation: 'provision',
      requestHash: 'hash-of-small',
      state: 'failed',
      description: 'The operator did not report the outcome within 1 s (last: creating the database)',
    });
    expect(memo).toEqual(result);
    expect(world.instance(id).status).toEqual(result);
  });

  test('GIVEN a step that keeps failing WHEN its time runs out THEN the provision fails with the step’s last failure', async () => {
    const id = unique('instance');
    world.script(id, { failing: { step: 'applyTemplate', message: 'the apiserver is unreachable' } });
    const { result, memo } = await run('provision', instanceRequest(id, { deadlineSeconds: 1 }));
    expect(result).toEqual({
      operation: 'provision',
      requestHash: 'hash-of-small',
      state: 'failed',
      description: 'Not done within 1 s: the apiserver is unreachable',
    });
    expect(memo).toEqual(result);
    expect(world.instance(id).status).toEqual(result);
  });

  test('GIVEN a step that fails in the worker and once queued WHEN it is retried THEN it succeeds and so does the provision', async () => {
    const id = unique('instance');
    world.script(id, { failing: { step: 'applyTemplate', message: 'connection refused', times: 6 } });
    const { result } = await run('provision', instanceRequest(id));
    expect(result).toMatchObject({ state: 'succeeded', description: 'The instance is provisioned' });
    expect(world.attemptsOf(id, 'applyTemplate')).toBe(7);
    expect(world.instance(id).objects).toEqual(['database-small']);
  });
});

describe('update', () => {
  test('GIVEN an operator that answers WHEN the plan changes THEN the update succeeds on the new plan', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    const { result, memo } = await run('update', instanceRequest(id, { planId: 'large' }));
    expect(result).toEqual({
      operation: 'update',
      requestHash: 'hash-of-large',
      state: 'succeeded',
      description: 'The instance is updated',
      instanceUsable: true,
      updateRepeatable: true,
    });
    expect(memo).toEqual(result);
    expect(world.instance(id).request.planId).toBe('large');
    expect(world.instance(id).objects).toEqual(['database-large']);
  });

  test('GIVEN an operator that refuses WHEN the update fails THEN the instance is rolled back and stays usable', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    world.script(id, {
      reports: { update: { state: 'failed', description: 'the operator refused the plan' } },
    });
    const { result, memo } = await run('update', instanceRequest(id, { planId: 'large' }));
    expect(result).toEqual({
      operation: 'update',
      requestHash: 'hash-of-large',
      state: 'failed',
      description:
        'the operator refused the plan (rolled back: the instance keeps its previous plan and parameters)',
      instanceUsable: true,
      updateRepeatable: true,
    });
    expect(memo).toEqual(result);
    expect(world.instance(id).status).toEqual(result);
    expect(world.instance(id).request).toEqual(instanceRequest(id));
    expect(world.instance(id).objects).toEqual(['database-small']);
  });

  test('GIVEN a synchronous update WHEN it is cancelled THEN the instance is rolled back and the memo says so', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    world.script(id, { reports: waiting('resizing the database') });
    const { error, memo } = await cancelWhile(
      'update',
      instanceRequest(id, { planId: 'large' }),
      'resizing the database',
    );
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const cancelled = {
      operation: 'update',
      requestHash: 'hash-of-large',
      state: 'failed',
      description: 'The update was cancelled and rolled back.',
      instanceUsable: true,
      updateRepeatable: true,
    };
    expect(memo).toEqual(cancelled);
    expect(world.instance(id).status).toEqual(cancelled);
    expect(world.instance(id).request).toEqual(instanceRequest(id));
    expect(world.instance(id).objects).toEqual(['database-small']);
  });
});

describe('deprovision', () => {
  test('GIVEN a provisioned instance WHEN it is deprovisioned THEN its resources and its record are gone', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    const { result, memo } = await run('deprovision', instanceRequest(id));
    expect(result).toEqual({
      operation: 'deprovision',
      requestHash: 'hash-of-small',
      state: 'succeeded',
      description: 'The instance is deprovisioned',
      instanceUsable: false,
    });
    expect(memo).toEqual(result);
    expect(world.instances.has(id)).toBe(false);
  });

  test('GIVEN a synchronous deprovision WHEN it is cancelled THEN it stops where it is and says to send it again', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    world.script(id, { reports: waiting('dropping the database') });
    const { error, memo } = await cancelWhile('deprovision', instanceRequest(id), 'dropping the database');
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const stopped = {
      operation: 'deprovision',
      requestHash: 'hash-of-small',
      state: 'failed',
      description: 'The deprovision was stopped before it finished; send the request again to finish it.',
    };
    expect(memo).toEqual(stopped);
    expect(world.instance(id).status).toEqual(stopped);
  });
});

describe('bind and unbind', () => {
  test('GIVEN an instance WHEN it is bound and unbound THEN the binding is created, then gone', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    const bound = await run('bind', bindingRequest(id, 'binding-1'));
    expect(bound.result).toEqual({
      operation: 'bind',
      requestHash: 'hash-of-binding',
      state: 'succeeded',
      description: 'The binding is created',
      responseSecret: 'sf-binding-binding-1',
    });
    expect(bound.memo).toEqual(bound.result);
    expect(world.instance(id).bindings.get('binding-1')).toMatchObject({
      status: bound.result,
      objects: ['user-binding-1'],
    });

    const unbound = await run('unbind', bindingRequest(id, 'binding-1'));
    expect(unbound.result).toEqual({
      operation: 'unbind',
      requestHash: 'hash-of-binding',
      state: 'succeeded',
      description: 'The binding is deleted',
    });
    expect(unbound.memo).toEqual(unbound.result);
    expect(world.instance(id).bindings.has('binding-1')).toBe(false);
  });

  test('GIVEN a bind template that fails WHEN the instance is bound THEN the bind fails at once with the template’s message', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    world.script(id, {
      failing: {
        step: 'applyTemplate',
        message: 'The bind template of plan small failed: boom',
        forGood: true,
      },
    });
    const { result, memo } = await run('bind', bindingRequest(id, 'binding-1'));
    expect(result).toEqual({
      operation: 'bind',
      requestHash: 'hash-of-binding',
      state: 'failed',
      description: 'The bind template of plan small failed: boom',
    });
    expect(memo).toEqual(result);
    expect(world.attemptsOf(id, 'applyTemplate')).toBe(1);
    expect(world.instance(id).bindings.get('binding-1')?.status).toEqual(result);
  });
});

describe('the answer to a synchronous request: the update that awaits the outcome', () => {
  /** The history's events of the update that awaits the outcome, by kind, and where the run completed. */
  async function updateEvents(handle: WorkflowHandle) {
    const events = (await handle.fetchHistory()).events ?? [];
    const index = (has: (e: (typeof events)[number]) => unknown) => events.findIndex((e) => has(e));
    return {
      accepted: events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes),
      rejected: events.filter((e) => e.workflowExecutionUpdateRejectedEventAttributes),
      completedAt: index((e) => e.workflowExecutionUpdateCompletedEventAttributes),
      firstStepAt: index((e) => e.activityTaskScheduledEventAttributes ?? e.markerRecordedEventAttributes),
      acceptedAt: index((e) => e.workflowExecutionUpdateAcceptedEventAttributes),
      runCompletedAt: index((e) => e.workflowExecutionCompletedEventAttributes),
    };
  }

  test('GIVEN an instance WHEN a bind starts with the update THEN the update answers with its final status, sent before the run completes', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    const request = bindingRequest(id, 'binding-1');
    const { outcome, handle } = await withWorker(async (taskQueue) => {
      const started = startOperationWithOutcome(temporal.client, {
        workflowId: unique('bind'),
        taskQueue,
        type: 'bind',
        request,
      });
      return { outcome: await started.outcome, handle: await started.workflow };
    });
    // THEN the answer is the final status: it names the Secret with the credentials, never them
    expect(outcome).toEqual({
      operation: 'bind',
      requestHash: 'hash-of-binding',
      state: 'succeeded',
      description: 'The binding is created',
      responseSecret: 'sf-binding-binding-1',
    });
    expect(await handle.result()).toEqual(outcome);
    await keepHistory('bind', handle);
    // AND the history shows the update accepted in the run's first workflow task, before any
    // step, and completed before the run did
    const events = await updateEvents(handle);
    expect(events.accepted).toHaveLength(1);
    expect(
      events.accepted[0]!.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name,
    ).toBe(OPERATION_OUTCOME_UPDATE);
    expect(events.acceptedAt).toBeLessThan(events.firstStepAt);
    expect(events.completedAt).toBeGreaterThan(events.acceptedAt);
    expect(events.completedAt).toBeLessThan(events.runCompletedAt);
  });

  test('GIVEN a bind in progress WHEN a request for another bind or an unbind awaits it THEN the validator refuses it and the history keeps nothing of it', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    world.script(id, { reports: { bind: { state: 'in progress', description: 'creating the user' } } });
    const request = bindingRequest(id, 'binding-1');
    const { refusals, handle, ending } = await withWorker(async (taskQueue) => {
      const started = startOperationWithOutcome(temporal.client, {
        workflowId: unique('bind'),
        taskQueue,
        type: 'bind',
        request,
      });
      const ending = started.outcome.then(
        () => undefined,
        (err: unknown) => err,
      );
      const handle = await started.workflow;
      await eventually('the bind to wait for the operator', async () =>
        (await memoOf(handle))?.description === 'creating the user' ? true : undefined,
      );
      const refusals = await Promise.all(
        [
          { operation: 'bind' as const, requestHash: 'hash-of-another-binding' },
          { operation: 'unbind' as const, requestHash: 'hash-of-binding' },
        ].map((awaited) =>
          handle.executeUpdate(operationOutcomeUpdate, { args: [awaited] }).then(
            () => undefined,
            (err: unknown) => err,
          ),
        ),
      );
      await handle.cancel();
      return { refusals, handle, ending: await ending };
    });
    // THEN each is refused with the running operation's name and the reason
    const causes = refusals.map((err) => {
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      const cause = (err as WorkflowUpdateFailedError).cause as ApplicationFailure;
      return { type: cause.type, message: cause.message, details: cause.details };
    });
    expect(causes).toEqual([
      {
        type: OPERATION_REFUSED,
        message: 'The bind in progress was asked with other attributes.',
        details: ['bind'],
      },
      { type: OPERATION_REFUSED, message: 'Another operation (bind) is in progress.', details: ['bind'] },
    ]);
    // AND the history holds the starting request's update alone
    const events = await updateEvents(handle);
    expect(events.accepted).toHaveLength(1);
    expect(events.rejected).toHaveLength(0);
    // AND the starting request's update, its run cancelled without a final status, ends with the run
    expect(ending).toBeInstanceOf(WorkflowUpdateFailedError);
  });
});

describe('custom action', () => {
  const actionRequest = (instanceId: string): ActionRequest => ({
    instanceId,
    serviceId: 'postgresql',
    planId: 'small',
    action: 'x-backup',
    parameters: { label: 'nightly' },
    requestHash: 'hash-of-backup',
    deadlineSeconds: 60,
  });

  /** Runs the action as the broker starts it; returns its result, its memo and its run id. */
  const runAction = (request: ActionRequest) =>
    withWorker(async (taskQueue) => {
      const handle = await temporal.client.workflow.start(ACTION_WORKFLOW_TYPE, {
        taskQueue,
        workflowId: unique('action'),
        args: [request],
        memo: { [MEMO_KEY]: startingStatus(request.action, request) },
      });
      const result = (await handle.result()) as OperationStatus;
      await keepHistory(request.action, handle);
      return { result, memo: await memoOf(handle), runId: handle.firstExecutionRunId };
    });

  test('GIVEN a provisioned instance WHEN x-backup runs THEN its template sees the run, and the outcome is recorded apart', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    const { result, memo, runId } = await runAction(actionRequest(id));
    expect(result).toEqual({
      operation: 'x-backup',
      requestHash: 'hash-of-backup',
      state: 'succeeded',
      description: 'x-backup succeeded',
      instanceUsable: true,
    });
    expect(memo).toEqual(result);
    expect(world.instance(id).actionRuns).toEqual([
      { name: 'x-backup', id: runId, parameters: { label: 'nightly' } },
    ]);
    expect(world.instance(id).lastAction).toEqual(result);
    // The OSB operation's status and objects are as the provision left them.
    expect(world.instance(id).status).toBeUndefined();
    expect(world.instance(id).objects).toEqual(['database-small']);
  });

  test('GIVEN an operator that fails the action THEN it fails with the operator’s words, and nothing is undone', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    world.script(id, { reports: { 'x-backup': { state: 'failed', description: 'disk full' } } });
    const { result } = await runAction(actionRequest(id));
    expect(result).toMatchObject({ operation: 'x-backup', state: 'failed', description: 'disk full' });
    expect(world.instance(id).lastAction).toEqual(result);
    expect(world.instance(id).objects).toEqual(['database-small']);
  });

  test('GIVEN no instance THEN the action fails at once saying why, and nothing is applied or recorded', async () => {
    const id = unique('instance');
    const { result } = await runAction(actionRequest(id));
    expect(result).toMatchObject({ state: 'failed', description: 'x-backup cannot run: no instance' });
    expect(world.attemptsOf(id, 'applyTemplate')).toBe(0);
    expect(world.attemptsOf(id, 'recordActionStatus')).toBe(0);
  });
});

describe('rotation of a generated secret', () => {
  const rotationRequest = (instanceId: string): SecretRotationRequest => ({
    instanceId,
    serviceId: 'postgresql',
    planId: 'small',
    action: ROTATE_SECRET_ACTION,
    parameters: { secret: 'password' },
    requestHash: 'hash-of-rotation',
    deadlineSeconds: 60,
  });

  const runRotation = (request: SecretRotationRequest) =>
    withWorker(async (taskQueue) => {
      const handle = await temporal.client.workflow.start(SECRET_ROTATION_WORKFLOW_TYPE, {
        taskQueue,
        workflowId: unique('rotation'),
        args: [request],
        memo: { [MEMO_KEY]: startingStatus(request.action, request) },
      });
      const result = (await handle.result()) as OperationStatus;
      await keepHistory(request.action, handle);
      return { result, memo: await memoOf(handle) };
    });

  test('GIVEN an operator that takes up the new version THEN the rotation succeeds and removes what nothing uses', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    const { result, memo } = await runRotation(rotationRequest(id));
    expect(result).toEqual({
      operation: 'x-rotate-secret',
      requestHash: 'hash-of-rotation',
      state: 'succeeded',
      description: 'password is at version 2 (Secret password-v2); removed password-v1',
      instanceUsable: true,
    });
    expect(memo).toEqual(result);
    expect(world.instance(id).lastAction).toEqual(result);
    expect(world.instance(id).removedVersions).toEqual(['password-v1']);
    expect(world.attemptsOf(id, 'applyTemplate')).toBe(1);
  });

  test('GIVEN an operator that fails the update THEN the rotation fails with its words and removes nothing', async () => {
    const id = unique('instance');
    world.seed(instanceRequest(id));
    world.script(id, {
      reports: { update: { state: 'failed', description: 'cannot read the new password' } },
    });
    const { result } = await runRotation(rotationRequest(id));
    expect(result).toMatchObject({ state: 'failed', description: 'cannot read the new password' });
    expect(world.instance(id).secretVersions).toEqual({ password: 2 });
    expect(world.attemptsOf(id, 'removeUnusedSecretVersions')).toBe(0);
    expect(world.instance(id).lastAction).toEqual(result);
  });
});

describe('operations already running', () => {
  test('GIVEN the histories of operations recorded before WHEN the workflows replay them THEN each replays as it ran', async () => {
    const files = readdirSync(HISTORIES).filter((name) => name.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    const histories = files.map((name) => ({ workflowId: name, history: historyFromFile(name) }));
    const replayed: { workflowId: string; error?: unknown }[] = [];
    for await (const { workflowId, error } of Worker.runReplayHistories(
      { workflowBundle: builtWorkflows().workflowBundle },
      histories,
    )) {
      replayed.push({ workflowId, ...(error ? { error: String(error) } : {}) });
    }
    expect(replayed).toEqual(files.map((workflowId) => ({ workflowId })));
  });
});
