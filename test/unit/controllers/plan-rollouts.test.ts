/**
 * The reconcile of plans' revisions and rollouts with its writes and the rollout's start given as
 * functions, so these cases run without servers; the real ones are exercised by
 * test/integration/rollouts.test.ts.
 */
import { planRollouts } from '../../../src/controllers/plan-rollouts.js';
import { planRevision } from '../../../src/resources/names.js';
import type { SFPlan, SFPlanStatus } from '../../../src/resources/types.js';

const spec = (maxConnections: number) =>
  ({
    id: 'plan-1',
    name: 'small',
    description: 'a plan',
    serviceId: 'service-1',
    autoUpdateInstances: true,
    context: { maxConnections },
    templates: [],
  }) as unknown as SFPlan['spec'];

const plan = (maxConnections: number, status: SFPlanStatus, generation = 2): SFPlan => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: { name: 'plan-1', namespace: 'registry', uid: 'u1', generation },
  spec: spec(maxConnections),
  status,
});

const v1 = planRevision(spec(100));
const v2 = planRevision(spec(200));

function setUp(failures: { start?: number } = {}, latest?: string) {
  const steps: string[] = [];
  const errors: string[] = [];
  let startFailures = failures.start ?? 0;
  const rollouts = planRollouts({
    writeStatus: async (_plan, status) => {
      steps.push(`write ${JSON.stringify(status)}`);
      return true;
    },
    startRollout: async (_plan, revision) => {
      if (startFailures-- > 0) {
        steps.push(`start ${revision} failed`);
        throw new Error('Temporal is unavailable');
      }
      steps.push(`start ${revision}`);
    },
    latestRollout: async () => {
      steps.push('ask the rollout');
      return latest;
    },
    onError: (_err, what) => errors.push(what),
    retryMs: 20,
  });
  return { rollouts, steps, errors };
}

test('GIVEN a changed plan WHEN heard THEN its revision is written, its rollout started, and only then written as rolled out', async () => {
  const { rollouts, steps } = setUp();
  rollouts.heard(plan(200, { specHash: v1, rolledOutRevision: v1 }));
  await rollouts.idle();
  expect(steps).toEqual([`write {"specHash":"${v2}"}`, `start ${v2}`, `write {"rolledOutRevision":"${v2}"}`]);
  rollouts.stop();
});

test('GIVEN a start that fails WHEN the plan is heard THEN nothing is written as rolled out and the start is tried again', async () => {
  const { rollouts, steps, errors } = setUp({ start: 1 });
  rollouts.heard(plan(200, { specHash: v1, rolledOutRevision: v1 }));
  await rollouts.idle();
  expect(steps).toEqual([`write {"specHash":"${v2}"}`, `start ${v2} failed`]);
  expect(errors).toEqual(['reconciling the revision of plan plan-1']);
  await new Promise((resolve) => setTimeout(resolve, 60));
  await rollouts.idle();
  // The retry works on the object heard, with what this worker wrote laid over it.
  expect(steps.slice(2)).toEqual([`start ${v2}`, `write {"rolledOutRevision":"${v2}"}`]);
  rollouts.stop();
});

test('GIVEN a revision written whose rollout never started WHEN the plan is heard (a worker starting) THEN the rollout starts', async () => {
  const { rollouts, steps } = setUp();
  rollouts.heard(plan(200, { specHash: v2, rolledOutRevision: v1 }));
  await rollouts.idle();
  expect(steps).toEqual([`start ${v2}`, `write {"rolledOutRevision":"${v2}"}`]);
  rollouts.stop();
});

test('GIVEN the events of its own writes, heard before they show WHEN reconciled THEN the rollout is not told again', async () => {
  const { rollouts, steps } = setUp();
  rollouts.heard(plan(200, { specHash: v1, rolledOutRevision: v1 }));
  // the watch brings the object of the first write while the rollout starts
  rollouts.heard(plan(200, { specHash: v2, rolledOutRevision: v1 }));
  await rollouts.idle();
  expect(steps.filter((s) => s.startsWith('start'))).toEqual([`start ${v2}`]);
  rollouts.stop();
});

test('GIVEN a status from before rolled-out revisions were kept WHEN its rollout already worked on the revision THEN it is only written as rolled out', async () => {
  const { rollouts, steps } = setUp({}, v2);
  rollouts.heard(plan(200, { specHash: v2 }));
  await rollouts.idle();
  expect(steps).toEqual(['ask the rollout', `write {"rolledOutRevision":"${v2}"}`]);
  rollouts.stop();
});

test('GIVEN a status from before rolled-out revisions were kept WHEN its rollout worked on another revision, or none THEN the rollout starts', async () => {
  const { rollouts, steps } = setUp({}, v1);
  rollouts.heard(plan(200, { specHash: v2 }));
  await rollouts.idle();
  expect(steps).toEqual(['ask the rollout', `start ${v2}`, `write {"rolledOutRevision":"${v2}"}`]);
  rollouts.stop();
});

test('GIVEN a plan whose status it cannot write (gone) WHEN heard THEN no rollout starts', async () => {
  const steps: string[] = [];
  const rollouts = planRollouts({
    writeStatus: async () => false,
    startRollout: async () => void steps.push('start'),
    latestRollout: async () => undefined,
  });
  rollouts.heard(plan(200, { specHash: v1, rolledOutRevision: v1 }));
  await rollouts.idle();
  expect(steps).toEqual([]);
  rollouts.stop();
});
