/**
 * The rollout workflow over stub activities (test/fixtures/workflows): on the integration run's
 * Temporal dev server, a worker on a task queue of its own runs the real rollout workflow and the
 * real update workflows it starts, over in-memory plans and instances, so the canary, the waves,
 * the soak, a halt, pause, resume and abort (and their refusals), a newer revision mid-rollout and
 * continuing as new are covered in seconds, without clusters or an operator. Each test asserts the
 * result, the query's answer, the Updates' answers and what the stubs saw of the updates.
 */
import {
  ApplicationFailure,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { RolloutProgress, RolloutSettings } from '../../src/admin/contract.js';
import { instanceWorkflowId } from '../../src/resources/names.js';
import {
  OPERATOR_CHANGED_SIGNAL,
  ROLLOUT_REFUSED,
  rolloutAbortUpdate,
  rolloutPauseUpdate,
  rolloutProgressQuery,
  rolloutResumeUpdate,
  rolloutRevisionSignal,
  type RolloutLimits,
} from '../../src/workflows/messages.js';
import type { rolloutWorkflow } from '../../src/workflows/rollout.js';
import { stubActivities, StubWorld } from '../fixtures/workflows/stub-activities.js';
import {
  onRevision,
  StubPlan,
  stubRolloutActivities,
} from '../fixtures/workflows/stub-rollout-activities.js';
import { builtWorkflows, environment, eventually, temporalClient, unique } from '../support/env.js';

let connection: NativeConnection;
let temporal: { client: Client; close(): Promise<void> };
const world = new StubWorld();
const plans = new Map<string, StubPlan>();

beforeAll(async () => {
  // Updates that fail on purpose would fill the output with their warnings.
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
  const taskQueue = unique('rollouts');
  const worker = await Worker.create({
    connection,
    namespace: environment().temporal.namespace,
    taskQueue,
    ...builtWorkflows(),
    activities: stubRolloutActivities(world, stubActivities(world), plans),
  });
  return worker.runUntil(test(taskQueue));
}

/** GIVEN a plan on revision `r1` with `count` instances provisioned before it, and these rollout settings. */
function planWith(count: number, settings: Partial<RolloutSettings>): StubPlan {
  const plan = new StubPlan(unique('plan'), 'r1', settings);
  plans.set(plan.planId, plan);
  for (let k = 0; k < count; k++) {
    const instanceId = unique(`instance-${k}`);
    world.seed({
      instanceId,
      serviceId: 'postgresql',
      planId: plan.planId,
      requestHash: 'hash-of-provision',
      deadlineSeconds: 60,
    });
    plan.instances.push(instanceId);
  }
  return plan;
}

/** Starts the plan's rollout towards its revision, as a plan change does. */
function startRollout(
  taskQueue: string,
  plan: StubPlan,
  limits: RolloutLimits = {},
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof rolloutWorkflow>> {
  return temporal.client.workflow.start<typeof rolloutWorkflow>('rolloutWorkflow', {
    taskQueue,
    workflowId: unique('rollout'),
    args: [{ planId: plan.planId, revision: plan.revision, requestedBy: 'plan change' }, undefined, limits],
  });
}

/** Holds the instance's update in flight: the operator says "in progress" until {@link release}. */
const hold = (instanceId: string) =>
  world.script(instanceId, { reports: { update: { state: 'in progress' } } });

/** Lets the instance's update end: the operator is done, and the update hears it at once. */
async function release(instanceId: string): Promise<void> {
  world.script(instanceId, {});
  const update = temporal.client.workflow.getHandle(instanceWorkflowId(instanceId));
  // The rollout counts an update in flight once it has asked for it: the server may be starting it still.
  await eventually('the update running', async () =>
    (await update.describe().catch(() => undefined))?.status.name === 'RUNNING' ? true : undefined,
  );
  await update.signal(OPERATOR_CHANGED_SIGNAL);
}

/** Waits until the rollout's progress satisfies `enough`. */
const until = (handle: WorkflowHandle, what: string, enough: (p: RolloutProgress) => boolean) =>
  eventually(what, async () => {
    const progress = await handle.query(rolloutProgressQuery);
    return enough(progress) ? progress : undefined;
  });

/** The refusal an Update got: its failure's type and message. */
async function refusalOf(update: Promise<unknown>): Promise<{ type?: string; message: string }> {
  const err = await update.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (err as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return { type: (cause as ApplicationFailure).type ?? undefined, message: cause!.message };
}

/** How many Updates the workflow accepted: a refused one leaves nothing in the history. */
async function acceptedUpdates(handle: WorkflowHandle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
}

describe('canary and waves', () => {
  test('GIVEN a canary of 1, waves of 2 and a soak WHEN the plan changes THEN the canary ends before any other update starts, each wave ends before the soak, and every instance is on the revision', async () => {
    const plan = planWith(5, { canary: 1, maxConcurrency: 2, soakSeconds: 1, maxFailures: 0 });
    const result = await withWorker(async (taskQueue) => (await startRollout(taskQueue, plan)).result());

    expect(result).toMatchObject({
      planId: plan.planId,
      revision: 'r1',
      state: 'done',
      total: 5,
      done: 5,
      failed: 0,
      inFlight: 0,
      wave: 3,
      requestedBy: 'plan change',
    });
    for (const id of plan.instances) expect(onRevision(world, id, 'r1')).toBe(true);
    // oldest first: the canary, then two waves of two, each after the soak that follows the one before
    const runs = plan.updates;
    expect(runs).toHaveLength(5);
    const idsOf = (from: number, to: number) =>
      runs
        .slice(from, to)
        .map((r) => r.instanceId)
        .sort();
    expect([idsOf(0, 1), idsOf(1, 3), idsOf(3, 5)]).toEqual([
      plan.instances.slice(0, 1),
      plan.instances.slice(1, 3).sort(),
      plan.instances.slice(3, 5).sort(),
    ]);
    const endOf = (from: number, to: number) => Math.max(...runs.slice(from, to).map((r) => r.end!));
    const startOf = (from: number, to: number) => Math.min(...runs.slice(from, to).map((r) => r.start));
    expect(startOf(1, 3)).toBeGreaterThanOrEqual(endOf(0, 1) + 900);
    expect(startOf(3, 5)).toBeGreaterThanOrEqual(endOf(1, 3) + 900);
    expect(plan.widest()).toBe(2);
  });

  test('GIVEN no canary and no soak WHEN the plan changes THEN a sliding window keeps at most the maximum at once, and numbers its waves by the updates started', async () => {
    const plan = planWith(6, { canary: 0, maxConcurrency: 2, soakSeconds: 0, maxFailures: 0 });
    const result = await withWorker(async (taskQueue) => (await startRollout(taskQueue, plan)).result());

    expect(result).toMatchObject({ state: 'done', total: 6, done: 6, failed: 0, wave: 3 });
    expect(plan.widest()).toBe(2);
    expect(plan.released).toEqual([]);
  });

  test('GIVEN an instance busy with an operation of its own WHEN its turn comes THEN it waits, and is updated once free', async () => {
    const plan = planWith(2, { canary: 0, maxConcurrency: 2 });
    const [busy, free] = plan.instances as [string, string];
    plan.busy.set(busy, 'waiting for its bind to end');
    const result = await withWorker(async (taskQueue) => {
      const handle = await startRollout(taskQueue, plan, { busyRetryMs: 200 });
      const waiting = await until(
        handle,
        'the busy instance to wait',
        (p) => p.results[free]?.state === 'updated',
      );
      expect(waiting.results[busy]).toEqual({ state: 'waiting', description: 'waiting for its bind to end' });
      plan.busy.delete(busy);
      return handle.result();
    });
    expect(result).toMatchObject({ state: 'done', total: 2, done: 2 });
    expect(result.results[busy]).toEqual({ state: 'updated' });
  });
});

describe('a halt', () => {
  test('GIVEN updates that fail WHEN more fail than tolerated THEN the rollout halts naming them, refuses a pause, and a resume tolerates as many more', async () => {
    const plan = planWith(4, { canary: 1, maxConcurrency: 2, soakSeconds: 0, maxFailures: 1 });
    for (const id of plan.instances)
      world.script(id, { reports: { update: { state: 'failed', description: 'told to fail' } } });

    const { halted, refused, resumed, result } = await withWorker(async (taskQueue) => {
      const handle = await startRollout(taskQueue, plan);
      const halted = await until(handle, 'the halt', (p) => p.state === 'halted');
      const refused = await refusalOf(handle.executeUpdate(rolloutPauseUpdate));
      const resumed = await handle.executeUpdate(rolloutResumeUpdate);
      return { halted, refused, resumed, result: await handle.result() };
    });

    // the canary failed (tolerated), then the window's first two: three failures, over the limit of one
    expect(halted).toMatchObject({ state: 'halted', failed: 3, done: 0, inFlight: 0 });
    const failed = Object.entries(halted.results).filter(([, r]) => r.state === 'failed');
    expect(failed.map(([id]) => id).sort()).toEqual(plan.instances.slice(0, 3).sort());
    expect(failed[0]![1].description).toMatch(/told to fail/);
    expect(refused).toEqual({
      type: ROLLOUT_REFUSED,
      message: `The rollout of plan ${plan.planId} to revision r1 is halted: it starts no update until it is resumed or aborted.`,
    });
    expect(resumed).toMatchObject({ state: 'waves', failed: 3 });
    // the last instance fails too: four failures, within the limit raised to four, and the rollout ends
    expect(result).toMatchObject({ state: 'done', total: 4, done: 0, failed: 4 });
    expect(plan.updates).toHaveLength(4);
  });
});

describe('pause, resume and abort', () => {
  test('GIVEN an update in flight WHEN paused THEN it finishes, no other starts, the claim read ahead is taken back; a second pause and a resume of a running rollout are refused without a trace', async () => {
    const plan = planWith(3, { canary: 0, maxConcurrency: 1, soakSeconds: 0, maxFailures: 0 });
    const [first, second] = plan.instances as [string, string];
    hold(first);

    await withWorker(async (taskQueue) => {
      const handle = await startRollout(taskQueue, plan);
      await until(handle, 'the first update in flight and the next read ahead', (p) => p.inFlight === 1);
      await eventually('the next instance claimed', async () => (plan.claims.has(second) ? true : undefined));

      const paused = await handle.executeUpdate(rolloutPauseUpdate);
      expect(paused).toMatchObject({ state: 'paused', inFlight: 1, done: 0 });
      expect(await refusalOf(handle.executeUpdate(rolloutPauseUpdate))).toEqual({
        type: ROLLOUT_REFUSED,
        message: `The rollout of plan ${plan.planId} to revision r1 is already paused.`,
      });

      await release(first);
      await until(handle, 'the update in flight to end', (p) => p.inFlight === 0 && p.done === 1);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(plan.updates.map((u) => u.instanceId)).toEqual([first]);
      expect(await handle.query(rolloutProgressQuery)).toMatchObject({ state: 'paused', done: 1 });
      expect(plan.released).toEqual([second]);

      const resumed = await handle.executeUpdate(rolloutResumeUpdate);
      expect(resumed.state).toBe('waves');
      const again = await refusalOf(handle.executeUpdate(rolloutResumeUpdate));
      expect(again.type).toBe(ROLLOUT_REFUSED);
      expect(again.message).toMatch(
        new RegExp(
          `^The rollout of plan ${plan.planId} to revision r1 (is not paused \\(it is \\w+\\)|is done; there is nothing to resume)\\.$`,
        ),
      );
      expect(await handle.result()).toMatchObject({ state: 'done', total: 3, done: 3 });
      // the pause and the resume accepted; the two refused left nothing
      expect(await acceptedUpdates(handle)).toBe(2);
    });
  });

  test('GIVEN the plan being read, at the start or for a newer revision, WHEN paused meanwhile THEN no update starts until resumed', async () => {
    const plan = planWith(2, { canary: 0, maxConcurrency: 1, soakSeconds: 0 });
    let readDone!: () => void;
    const holdReads = (): void => {
      plan.targetRead = new Promise((resolve) => (readDone = resolve));
    };
    const pauseWhileRead = async (handle: WorkflowHandle, reads: number) => {
      await eventually('the plan being read', async () => (plan.targetReads >= reads ? true : undefined));
      const paused = await handle.executeUpdate(rolloutPauseUpdate);
      expect(paused.state).toBe('paused');
      readDone();
      await new Promise((r) => setTimeout(r, 1_500));
    };
    holdReads();

    const [, second] = plan.instances as [string, string];
    hold(second);

    await withWorker(async (taskQueue) => {
      const handle = await startRollout(taskQueue, plan);
      await pauseWhileRead(handle, 1);
      expect(plan.updates).toEqual([]);
      expect(await handle.query(rolloutProgressQuery)).toMatchObject({ state: 'paused', total: 0 });
      await handle.executeUpdate(rolloutResumeUpdate);
      await until(handle, 'the second update in flight', (p) => p.done === 1 && p.inFlight === 1);

      // the plan goes to r2 while an update of r1 is in flight: once it ends, the plan is read again
      plan.revision = 'r2';
      holdReads();
      await handle.signal(rolloutRevisionSignal, {
        planId: plan.planId,
        revision: 'r2',
        requestedBy: 'plan change',
      });
      await release(second);
      await pauseWhileRead(handle, 2);
      expect(plan.updates).toHaveLength(2);
      expect(await handle.query(rolloutProgressQuery)).toMatchObject({
        revision: 'r2',
        state: 'paused',
        done: 0,
      });

      await handle.executeUpdate(rolloutResumeUpdate);
      expect(await handle.result()).toMatchObject({ revision: 'r2', state: 'done', total: 2, done: 2 });
    });
  });

  test('GIVEN an update in flight WHEN aborted THEN the answer says aborted at once, a second abort is refused, and the rollout ends once the update has', async () => {
    const plan = planWith(3, { canary: 0, maxConcurrency: 1 });
    const [first] = plan.instances as [string];
    hold(first);

    const result = await withWorker(async (taskQueue) => {
      const handle = await startRollout(taskQueue, plan);
      await until(handle, 'the first update in flight', (p) => p.inFlight === 1);
      const aborted = await handle.executeUpdate(rolloutAbortUpdate);
      expect(aborted).toMatchObject({ state: 'aborted', inFlight: 1 });
      expect(await refusalOf(handle.executeUpdate(rolloutAbortUpdate))).toEqual({
        type: ROLLOUT_REFUSED,
        message: `The rollout of plan ${plan.planId} to revision r1 was aborted; there is nothing to abort.`,
      });
      expect((await refusalOf(handle.executeUpdate(rolloutPauseUpdate))).message).toMatch(/was aborted/);
      await release(first);
      return handle.result();
    });
    expect(result).toMatchObject({ state: 'aborted', done: 1, inFlight: 0 });
    expect(plan.updates.map((u) => u.instanceId)).toEqual([first]);
  });
});

describe('a newer revision', () => {
  test('GIVEN a rollout of r1 with an update in flight WHEN the plan goes to r2 and a late r1 is heard THEN the rollout starts over towards r2 and ends there', async () => {
    const plan = planWith(3, { canary: 0, maxConcurrency: 1 });
    const [first] = plan.instances as [string];
    hold(first);

    const result = await withWorker(async (taskQueue) => {
      const handle = await startRollout(taskQueue, plan);
      await until(handle, 'the first update in flight', (p) => p.inFlight === 1);
      plan.revision = 'r2';
      await handle.signal(rolloutRevisionSignal, {
        planId: plan.planId,
        revision: 'r2',
        requestedBy: 'plan change',
      });
      // a worker that heard the first change last: the plan as it is now still decides
      await handle.signal(rolloutRevisionSignal, {
        planId: plan.planId,
        revision: 'r1',
        requestedBy: 'a late worker',
      });
      await release(first);
      return handle.result();
    });

    expect(result).toMatchObject({ revision: 'r2', state: 'done', total: 3, done: 3, failed: 0 });
    for (const id of plan.instances) expect(onRevision(world, id, 'r2')).toBe(true);
    // the first instance updated to r1, then again to r2
    expect(plan.updates.map((u) => u.instanceId)).toEqual([first, ...plan.instances]);
  });
});

describe('continuing as new', () => {
  test('GIVEN a short history limit WHEN the rollout runs THEN it continues as new with no update in flight, and the last run ends with every count carried', async () => {
    const plan = planWith(5, { canary: 1, maxConcurrency: 2, soakSeconds: 0 });
    const { result, firstRun } = await withWorker(async (taskQueue) => {
      const handle = await startRollout(taskQueue, plan, { maxHistoryEvents: 40 });
      const result = await handle.result();
      const firstRun = await temporal.client.workflow
        .getHandle(handle.workflowId, handle.firstExecutionRunId)
        .describe();
      return { result, firstRun };
    });

    expect(firstRun.status.name).toBe('CONTINUED_AS_NEW');
    expect(result).toMatchObject({ state: 'done', total: 5, done: 5, failed: 0, inFlight: 0 });
    expect(Object.values(result.results)).toEqual(Array(5).fill({ state: 'updated' }));
    expect(plan.updates).toHaveLength(5);
    expect(plan.widest()).toBeLessThanOrEqual(2);
  });
});
