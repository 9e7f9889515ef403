/**
 * What the workers still owe a plan, from the plan alone: its revision written when its spec
 * changed, and its rollout started while `status.rolledOutRevision` is behind, whatever happened
 * between the two before (a worker stopped, a start failed).
 */
import { planRevisionWork } from '../../../src/controllers/plan-revision-work.js';
import { planRevision } from '../../../src/resources/names.js';
import type { SFPlan, SFPlanStatus } from '../../../src/resources/types.js';

const spec = (autoUpdateInstances: boolean, maxConnections = 100) =>
  ({
    id: 'plan-1',
    name: 'small',
    description: 'a plan',
    serviceId: 'service-1',
    autoUpdateInstances,
    context: { maxConnections },
    templates: [],
  }) as unknown as SFPlan['spec'];

const plan = (s: SFPlan['spec'], status?: SFPlanStatus, deleting = false): SFPlan => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: {
    name: 'plan-1',
    namespace: 'registry',
    ...(deleting ? { deletionTimestamp: '2024-01-01T00:00:00Z' } : {}),
  },
  spec: s,
  ...(status ? { status } : {}),
});

const auto = spec(true);
const now = planRevision(auto);
const before = planRevision(spec(true, 50));
const manual = spec(false);
const manualNow = planRevision(manual);

test.each([
  [
    'a plan seen for the first time: its revision, rolled out as it is its first',
    plan(auto),
    { record: { specHash: now, rolledOutRevision: now } },
  ],
  [
    'a changed plan that updates its instances: the revision, then its rollout',
    plan(auto, { specHash: before, rolledOutRevision: before }),
    { record: { specHash: now }, rollout: now },
  ],
  [
    'its revision written but its rollout never started (a worker stopped between): the rollout',
    plan(auto, { specHash: now, rolledOutRevision: before }),
    { rollout: now },
  ],
  ['its revision rolled out: nothing', plan(auto, { specHash: now, rolledOutRevision: now }), {}],
  [
    'a status written before rolled-out revisions were kept: the rollout, once its workflow is asked',
    plan(auto, { specHash: now }),
    { rollout: now, askRolloutFirst: true },
  ],
  [
    'a status without a rolled-out revision and a changed spec: the revision, then its rollout',
    plan(auto, { specHash: before }),
    { record: { specHash: now }, rollout: now },
  ],
  [
    'a changed plan that does not update its instances: only the revision',
    plan(manual, { specHash: before, rolledOutRevision: before }),
    { record: { specHash: manualNow } },
  ],
  [
    'a plan that does not update its instances, revision written: nothing',
    plan(manual, { specHash: manualNow, rolledOutRevision: before }),
    {},
  ],
  ['a plan being deleted: nothing', plan(auto, { specHash: before }, true), {}],
])('GIVEN %s', (_name, given, expected) => {
  expect(planRevisionWork(given)).toEqual(expected);
});
