/**
 * Plan changes reaching running instances, on the real servers: a landscape of its own whose plans
 * (copies of the design document's, with `autoUpdateInstances`) have instances provisioned through
 * the OSB API. Changing a plan's spec records its new revision and signals its rollout workflow,
 * which updates every instance through the ordinary update workflow: a canary first, then no more
 * than the maximum concurrency at once, each update starting as another ends when there is no
 * soak. Pause, resume and abort through the admin API, which answers with the rollout's state or
 * why its state refuses the command; a change that makes updates fail halts the rollout, and the
 * command line watching it exits 1; two changes in a row end on the newest, whatever order their
 * signals come in; an instance busy with a binding is updated after it.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { rolloutWorkflowId, type RolloutProgress } from '../../src/admin/contract.js';
import { startRollout } from '../../src/broker/plan-revisions.js';
import { patchRecordStatus } from '../../src/kube/custom-objects.js';
import { rolloutRequest } from '../../src/activities/rollouts.js';
import { ANNOTATIONS, LABELS, instanceWorkflowId, resourceName } from '../../src/resources/names.js';
import { parseClaims } from '../../src/resources/operation-claims.js';
import { MEMO_KEY, ROLLOUT_MESSAGES, WORKFLOW_TYPES, startingStatus } from '../../src/workflows/messages.js';
import { SFPLAN, SFSERVICEBINDING, type SFPlan } from '../../src/resources/types.js';
import { clusters, environment, eventually, unique } from '../support/env.js';
import { payloadCodec } from '../../src/temporal/connection.js';
import { parsePayloadKeys } from '../../src/temporal/codec.js';
import { osbClient, provisionBody, type OsbClient } from '../support/osb.js';
import { ADMIN, callAdmin, runBuiltCli, type AdminResponse } from '../support/admin.js';
import { DESIGN_SERVICE_ID, installDesignPlan, planHelpers } from '../support/plans.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

describe('plan changes reach running instances', () => {
  const [master] = clusters();
  const registry = unique('rollout');
  let design: SFPlan;
  let landscape: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  let temporal: { client: Client; close(): Promise<void> };
  let settings: SystemSettings;

  beforeAll(async () => {
    design = await installDesignPlan(master!, registry);
    operator = await startOperator();
    settings = await systemSettings({
      INTEROP_NAMESPACE: registry,
      INTEROP_ADMIN_USERNAME: ADMIN.username,
      INTEROP_ADMIN_PASSWORD: ADMIN.password,
    });
    landscape = await startProcess('all', settings);
    osb = osbClient(landscape.url);
    // A client that reads the rollouts' encrypted progress, as the landscape's own does.
    const { temporal: server } = environment();
    const connection = await Connection.connect({ address: server.address });
    temporal = {
      client: new Client({
        connection,
        namespace: server.namespace,
        dataConverter: {
          payloadCodecs: [payloadCodec({ payloadKeys: parsePayloadKeys(settings.payloadKeys) })],
        },
      }),
      close: () => connection.close(),
    };
  }, 120_000);

  afterAll(async () => {
    await landscape?.stop();
    await operator?.stop();
    await temporal?.close();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  const { readPlan, planCopy, provisionMany, changePlan, recordOf, postgresqlOf } = planHelpers({
    master: master!,
    registry,
    osb: () => osb,
    design: () => design,
  });

  /**
   * GIVEN `count` instances of a copy of the design document's plan, updating its instances itself,
   * with these rollout settings (no canary, one at a time, no soak, no failure tolerated unless said).
   */
  async function instancesOfNewPlan(
    name: string,
    count: number,
    rollout: Partial<NonNullable<SFPlan['spec']['rollout']>> = {},
  ): Promise<{ planId: string; instances: string[] }> {
    const planId = await planCopy(name, {
      autoUpdateInstances: true,
      rollout: { canary: 0, maxConcurrency: 1, soakSeconds: 0, maxFailures: 0, ...rollout },
    });
    return { planId, instances: await provisionMany(planId, count) };
  }

  /** A change of the plan's context: its instances' `max_connections`; returns the new revision. */
  const changeMaxConnections = (planId: string, maxConnections: number) =>
    changePlan(planId, { context: { ...design.spec.context, maxConnections } });

  /** The plan's templates changed so that the example operator fails its update (a team named `fail`). */
  async function failingTemplates(planId: string): Promise<SFPlan['spec']['templates']> {
    const plan = (await readPlan(planId))!;
    return plan.spec.templates.map((t) =>
      t.action === 'provision'
        ? { ...t, content: t.content!.replace('teamId: {{ $namePrefix }}', 'teamId: fail') }
        : t,
    );
  }

  const maxConnectionsOf = async (instanceId: string): Promise<string | undefined> =>
    (await postgresqlOf(instanceId)).spec.postgresql.parameters.max_connections;

  const rollout = (planId: string) => temporal.client.workflow.getHandle(rolloutWorkflowId(registry, planId));
  const progressOf = (planId: string) => rollout(planId).query<RolloutProgress>(ROLLOUT_MESSAGES.progress);

  /** Waits until the plan's rollout works on `revision` and, if given, `enough` holds of its progress. */
  const untilRolloutOf = (planId: string, revision: string, enough = (_p: RolloutProgress) => true) =>
    eventually(`the rollout of ${revision}`, async () => {
      const p = await progressOf(planId).catch(() => undefined);
      return p?.revision === revision && enough(p) ? p : undefined;
    });

  /** Pauses, resumes or aborts the plan's rollout through the admin API. */
  const steer = (planId: string, command: 'pause' | 'resume' | 'abort'): Promise<AdminResponse> =>
    callAdmin(landscape.url, 'POST', `/admin/plans/${planId}/rollout/${command}`);

  /** Aborts the plan's rollout (the API answers 200, aborted) and returns how it ended. */
  async function abortRollout(planId: string): Promise<RolloutProgress> {
    const aborted = await steer(planId, 'abort');
    expect([aborted.status, aborted.body.state]).toEqual([200, 'aborted']);
    return (await rollout(planId).result()) as RolloutProgress;
  }

  /** Waits until the rollout of `revision` reaches `state`. */
  const untilRollout = (
    planId: string,
    revision: string,
    states: RolloutProgress['state'][],
    timeoutMs = 120_000,
  ) =>
    eventually(
      `the rollout of ${revision} to be ${states.join(' or ')}`,
      async () => {
        const progress = await progressOf(planId);
        return progress.revision === revision && states.includes(progress.state) ? progress : undefined;
      },
      timeoutMs,
    );

  /** The update workflows of the plan's instances: their start and close times. */
  async function updatesOf(planId: string): Promise<{ instanceId: string; start: number; end: number }[]> {
    const runs: { instanceId: string; start: number; end: number }[] = [];
    for await (const run of temporal.client.workflow.list({
      query: `WorkflowType = 'updateWorkflow' AND OsbPlanId = '${planId}'`,
    })) {
      runs.push({
        instanceId: run.workflowId.replace(/^instance\//, ''),
        start: run.startTime.getTime(),
        end: run.closeTime?.getTime() ?? Number.POSITIVE_INFINITY,
      });
    }
    return runs.sort((a, b) => a.start - b.start);
  }

  /** The most updates that ran at the same time. */
  function widest(runs: readonly { start: number; end: number }[]): number {
    const edges = runs.flatMap((r) => [
      { at: r.start, d: 1 },
      { at: r.end, d: -1 },
    ]);
    edges.sort((a, b) => a.at - b.at || a.d - b.d);
    let now = 0;
    let most = 0;
    for (const e of edges) most = Math.max(most, (now += e.d));
    return most;
  }

  test('30 instances: a canary, then no more than the maximum at once, each update starting as another ends; every instance on the new revision', async () => {
    const { planId, instances } = await instancesOfNewPlan('rolled-out', 30, {
      canary: 2,
      maxConcurrency: 5,
    });
    const before = (await readPlan(planId))!.status!.specHash!;
    for (const id of instances)
      expect((await recordOf(id))?.metadata.labels?.[LABELS.planRevision]).toBe(before);

    const revision = await changeMaxConnections(planId, 250);
    expect(revision).not.toBe(before);
    const done = await untilRollout(planId, revision, ['done'], 240_000);
    expect(done).toMatchObject({ total: 30, done: 30, failed: 0, inFlight: 0, requestedBy: 'plan change' });
    expect((await readPlan(planId))?.status?.specHash).toBe(revision);

    // a platform's identical repeat of a provision is answered as before the rollout: 200
    const repeated = await osb(
      'PUT',
      `/v2/service_instances/${instances[0]}?accepts_incomplete=true`,
      provisionBody(DESIGN_SERVICE_ID, planId, { foo: 'bar' }),
    );
    expect([repeated.status, repeated.body.error]).toEqual([200, undefined]);

    // every instance is on the new revision, and the operator's resource shows the change
    for (const id of instances) {
      const record = await recordOf(id);
      expect(record?.metadata.labels?.[LABELS.planRevision]).toBe(revision);
      expect(record?.status).toMatchObject({
        planRevision: revision,
        state: 'succeeded',
        operation: 'update',
      });
      expect(await maxConnectionsOf(id)).toBe('250');
    }
    // the canary ended before any other update began; never more than five at once
    const runs = await updatesOf(planId);
    expect(runs).toHaveLength(30);
    const canaryEnd = Math.max(...runs.slice(0, 2).map((r) => r.end));
    for (const r of runs.slice(2)) expect(r.start).toBeGreaterThanOrEqual(canaryEnd);
    expect(widest(runs.slice(0, 2))).toBeLessThanOrEqual(2);
    expect(widest(runs)).toBeLessThanOrEqual(5);
    expect(widest(runs)).toBeGreaterThan(1);
    // with no soak, no wave waits for its slowest update: an update of a later wave (the next five
    // started) begins while one of an earlier wave still runs
    const afterCanary = runs.slice(2);
    const waveOf = (k: number) => Math.floor(k / 5);
    const overlapping = afterCanary.filter((later, k) =>
      afterCanary.some((earlier, i) => waveOf(i) < waveOf(k) && later.start < earlier.end),
    );
    expect(overlapping).not.toHaveLength(0);
  }, 400_000);

  test('pause holds new updates until resumed; abort lets the ones in flight finish and says so', async () => {
    const { planId, instances } = await instancesOfNewPlan('paused', 6);
    const revision = await changeMaxConnections(planId, 150);
    await untilRolloutOf(planId, revision, (p) => p.done >= 2);
    const pausing = await steer(planId, 'pause');
    expect([pausing.status, pausing.body]).toMatchObject([200, { planId, revision, state: 'paused' }]);
    // a second pause is refused, with why
    const again = await steer(planId, 'pause');
    expect([again.status, again.body]).toEqual([
      409,
      {
        error: 'Conflict',
        description: `The rollout of plan ${planId} to revision ${revision} is already paused.`,
      },
    ]);
    const paused = await untilRollout(planId, revision, ['paused']);
    // what was in flight when it paused finishes; then nothing new starts
    await eventually('the update in flight to finish', async () =>
      (await progressOf(planId)).inFlight === 0 ? true : undefined,
    );
    const started = (await updatesOf(planId)).length;
    await new Promise((r) => setTimeout(r, 4_000));
    expect((await updatesOf(planId)).length).toBe(started);
    expect((await progressOf(planId)).state).toBe('paused');
    expect(paused.done).toBeLessThan(instances.length);
    // The next instance, read ahead and claimed while the last update ran, is free again: binds
    // of the instances the rollout has not updated are not held up by a paused rollout.
    await eventually(
      'no claim left on the instances not updated',
      async () => {
        for (const id of instances) {
          const record = await recordOf(id);
          const claims = parseClaims(record?.metadata.annotations?.[ANNOTATIONS.operationClaims]);
          if (record?.metadata.labels?.[LABELS.planRevision] !== revision && claims.instance)
            return undefined;
        }
        return true;
      },
      15_000,
    );

    const resumed = await steer(planId, 'resume');
    expect([resumed.status, resumed.body.state]).toEqual([200, expect.not.stringMatching(/paused/)]);
    const resumedAgain = await steer(planId, 'resume');
    expect([resumedAgain.status, resumedAgain.body.error]).toEqual([409, 'Conflict']);
    expect(resumedAgain.body.description).toMatch(/is not paused|is done; there is nothing to resume/);
    const done = await untilRollout(planId, revision, ['done']);
    expect(done).toMatchObject({ total: 6, done: 6, failed: 0 });
    // a rollout that ended refuses every command, saying how it ended
    const ended = await steer(planId, 'pause');
    expect([ended.status, ended.body]).toEqual([
      409,
      {
        error: 'Conflict',
        description: `The rollout of plan ${planId} to revision ${revision} is done; there is nothing to pause.`,
      },
    ]);

    // abort: a new revision; after the first update, no new one starts
    const next = await changeMaxConnections(planId, 175);
    await untilRolloutOf(planId, next, (p) => p.done >= 1);
    const aborted = await abortRollout(planId);
    expect(aborted).toMatchObject({ revision: next, state: 'aborted', inFlight: 0 });
    expect(aborted.done).toBeLessThan(6);
    const updatedToNext = [];
    for (const id of instances)
      if ((await recordOf(id))?.metadata.labels?.[LABELS.planRevision] === next) updatedToNext.push(id);
    expect(updatedToNext).toHaveLength(aborted.done);
    const abortedAgain = await steer(planId, 'abort');
    expect([abortedAgain.status, abortedAgain.body.description]).toEqual([
      409,
      `The rollout of plan ${planId} to revision ${next} was aborted; there is nothing to abort.`,
    ]);
  }, 300_000);

  test('a change that makes updates fail halts the rollout at the limit, naming the instances; they stay usable', async () => {
    const { planId, instances } = await instancesOfNewPlan('failing', 5, {
      canary: 1,
      maxConcurrency: 2,
      maxFailures: 1,
    });
    const revision = await changePlan(planId, { templates: await failingTemplates(planId) });
    const halted = await untilRollout(planId, revision, ['halted']);
    // the canary failed (tolerated), then the first wave's two: three failures, over the limit of one
    expect(halted).toMatchObject({ failed: 3, done: 0, inFlight: 0 });
    const failed = Object.entries(halted.results).filter(([, r]) => r.state === 'failed');
    expect(failed).toHaveLength(3);
    for (const [id, result] of failed) {
      expect(instances).toContain(id);
      expect(result.description).toMatch(/told to fail/);
      const record = await recordOf(id);
      expect(record?.status).toMatchObject({ state: 'failed', operation: 'update', instanceUsable: true });
    }
    // nothing more starts while it is halted, and a halted rollout is not paused: resume or abort it
    expect(await updatesOf(planId)).toHaveLength(3);
    const pausing = await steer(planId, 'pause');
    expect([pausing.status, pausing.body.description]).toEqual([
      409,
      `The rollout of plan ${planId} to revision ${revision} is halted: it starts no update until it is resumed or aborted.`,
    ]);
    expect((await abortRollout(planId)).state).toBe('aborted');
  }, 300_000);

  test('`rollout watch` on the command line follows a rollout that halts, names the failed instance and exits 1', async () => {
    // GIVEN a rollout that tolerates no failure, of a change that makes updates fail
    const { planId, instances } = await instancesOfNewPlan('watched', 2);
    const revision = await changePlan(planId, { templates: await failingTemplates(planId) });
    await untilRolloutOf(planId, revision);
    // WHEN an operator watches it from the command line, through the admin API
    const watched = await runBuiltCli(landscape.url, 'rollout', 'watch', planId, '--interval', '0.2');
    // THEN the command ends once the rollout halted, with status 1, naming the instance and why
    const halted = await progressOf(planId);
    expect(halted).toMatchObject({ revision, state: 'halted', total: 2, done: 0, failed: 1, inFlight: 0 });
    const failed = Object.keys(halted.results).filter((id) => halted.results[id]!.state === 'failed');
    expect(failed).toHaveLength(1);
    expect(instances).toContain(failed[0]);
    expect(watched).toMatchObject({ status: 1, stderr: '' });
    expect(watched.stdout).toMatch(/^halted \(wave 1\): 0\/2 done, 1 failed, 0 in flight$/m);
    expect(watched.stdout).toMatch(new RegExp(`^failed: ${failed[0]}: .*told to fail`, 'm'));
    expect(watched.stdout).not.toContain(instances.find((id) => id !== failed[0])!);
    expect((await abortRollout(planId)).state).toBe('aborted');
  }, 300_000);

  test('two changes in a row: one rollout, ending on the newest revision', async () => {
    const { planId, instances } = await instancesOfNewPlan('changed-twice', 4, {
      canary: 1,
      maxConcurrency: 2,
      soakSeconds: 1,
    });
    const first = await changeMaxConnections(planId, 120);
    const newest = await changeMaxConnections(planId, 130);
    // The first change heard last (each worker hears each change, in any order): still the newest.
    await untilRolloutOf(planId, newest);
    await startRollout(
      temporal.client,
      { namespace: registry, taskQueue: settings.taskQueue },
      { planId, revision: first, requestedBy: 'a late worker' },
    );
    const done = await untilRollout(planId, newest, ['done']);
    expect(done).toMatchObject({ total: 4, done: 4 });
    for (const id of instances) {
      expect((await recordOf(id))?.metadata.labels?.[LABELS.planRevision]).toBe(newest);
      expect(await maxConnectionsOf(id)).toBe('130');
    }
    // one rollout workflow id throughout; at most one run of it at any time is Temporal's own guarantee
    const runs = [];
    for await (const run of temporal.client.workflow.list({
      query: `WorkflowId = '${rolloutWorkflowId(registry, planId)}'`,
    }))
      runs.push(run);
    expect(runs.length).toBeGreaterThanOrEqual(1);
    expect(runs.filter((r) => r.status.name === 'RUNNING')).toHaveLength(0);
  }, 300_000);

  test('an instance busy with a binding when its turn comes is updated after it, not skipped', async () => {
    const {
      planId,
      instances: [busy, free],
    } = await instancesOfNewPlan('busy', 2, { maxConcurrency: 2 });
    const bindingId = randomUUID();
    const bound = await osb('PUT', `/v2/service_instances/${busy}/service_bindings/${bindingId}`, {
      service_id: DESIGN_SERVICE_ID,
      plan_id: planId,
    });
    expect(bound.status).toBe(201);
    // The binding's record says a bind is running, as it does while one runs.
    const binding = { namespace: `sf-${busy}`, name: resourceName(bindingId) };
    await patchRecordStatus(master!, SFSERVICEBINDING, binding.namespace, binding.name, {
      state: 'in progress',
      operation: 'bind',
    });
    const revision = await changeMaxConnections(planId, 140);
    const waiting = await eventually('the busy instance to wait', async () => {
      const p = await progressOf(planId).catch(() => undefined);
      return p?.revision === revision &&
        p.results[busy!]?.state === 'waiting' &&
        p.results[free!]?.state === 'updated'
        ? p
        : undefined;
    });
    expect(waiting.results[busy!]?.description).toMatch(new RegExp(`bind of binding ${bindingId}`));
    await patchRecordStatus(master!, SFSERVICEBINDING, binding.namespace, binding.name, {
      state: 'succeeded',
      operation: 'bind',
    });
    const done = await untilRollout(planId, revision, ['done']);
    expect(done).toMatchObject({ total: 2, done: 2, failed: 0 });
    expect(await maxConnectionsOf(busy!)).toBe('140');
  }, 300_000);

  test('a rollout’s update never undoes a platform’s update that ended after the rollout read the record', async () => {
    const planId = await planCopy('read-ahead', {});
    const [instanceId] = await provisionMany(planId, 1);
    // The rollout reads the record (here: now), and the platform's update comes and ends before
    // the rollout's update starts.
    const read = (await recordOf(instanceId!))!;
    const plan = (await readPlan(planId))!;
    const stale = rolloutRequest(read, plan, plan.status!.specHash!, 600);
    const path = `/v2/service_instances/${instanceId}`;
    const updated = await osb('PATCH', `${path}?accepts_incomplete=true`, {
      service_id: DESIGN_SERVICE_ID,
      plan_id: planId,
      parameters: { tier: 'gold' },
    });
    expect(updated.status).toBe(202);
    await eventually('the platform’s update to end', async () => {
      const last = await osb('GET', `${path}/last_operation`);
      return last.body.state === 'succeeded' ? true : undefined;
    });
    const platforms = (await recordOf(instanceId!))!;
    expect(platforms.spec.parameters).toEqual({ tier: 'gold' });

    const status = await temporal.client.workflow.execute(WORKFLOW_TYPES.update, {
      workflowId: instanceWorkflowId(instanceId!),
      taskQueue: settings.taskQueue,
      args: [stale],
      memo: { [MEMO_KEY]: startingStatus('update', stale) },
    });
    expect(status).toMatchObject({ operation: 'update', state: 'succeeded' });
    const after = (await recordOf(instanceId!))!;
    expect(after.spec.parameters).toEqual({ tier: 'gold' });
    // AND what the platform's repeat of its update is compared with is still the platform's
    expect(after.metadata.annotations?.[ANNOTATIONS.requestHash]).toBe(
      platforms.metadata.annotations?.[ANNOTATIONS.requestHash],
    );
  }, 180_000);

  test('a revision recorded whose rollout never started (the workers stopped between) is rolled out by the next worker to start', async () => {
    // GIVEN instances of a plan that updates them, and no worker running
    const { planId, instances } = await instancesOfNewPlan('crash-window', 2);
    await landscape.stop();
    // AND a change of the plan whose revision was recorded, as a worker records it before it
    // starts the rollout, and then nothing more: the worker stopped in between
    const revision = await changeMaxConnections(planId, 160);
    await patchRecordStatus(master!, SFPLAN, registry, planId, { specHash: revision });
    // WHEN a worker starts
    landscape = await startProcess('all', settings);
    osb = osbClient(landscape.url);
    // THEN the rollout of that revision starts and brings every instance to it
    const done = await untilRollout(planId, revision, ['done'], 90_000);
    expect(done).toMatchObject({ total: 2, done: 2, failed: 0, requestedBy: 'plan change' });
    for (const id of instances) {
      expect((await recordOf(id))?.metadata.labels?.[LABELS.planRevision]).toBe(revision);
      expect(await maxConnectionsOf(id)).toBe('160');
    }
    // AND the plan says it was rolled out, so the next worker to start leaves it
    await eventually('the revision written as rolled out', async () =>
      (await readPlan(planId))?.status?.rolledOutRevision === revision ? true : undefined,
    );
  }, 300_000);
});
