/**
 * Which revision an admin's rollout start rolls out: the plan's recorded revision, and only once it
 * is the revision of the plan's spec. Refused starts never reach Temporal.
 */
import type { ClusterClient } from '../../../src/kube/clients.js';
import type { Client } from '@temporalio/client';
import { TemporalRollouts } from '../../../src/broker/rollouts.js';
import type { CatalogCache } from '../../../src/kube/catalog-cache.js';
import { OsbError } from '../../../src/osb/errors.js';
import { planRevision } from '../../../src/resources/names.js';
import type { SFPlan } from '../../../src/resources/types.js';

const PLAN_ID = 'a-plan';

function rolloutsOf(plan: SFPlan): TemporalRollouts {
  const catalog = { plan: (id: string) => (id === PLAN_ID ? plan : undefined) } as unknown as CatalogCache;
  // Any use of the client fails the test: the starts below are refused before it.
  const client = new Proxy(
    {},
    {
      get: () => {
        throw new Error('Temporal was called');
      },
    },
  ) as unknown as Client;
  // The master is read only by a drain, which these tests do not start.
  const master = client as unknown as ClusterClient;
  return new TemporalRollouts({ client, taskQueue: 'q', catalog, namespace: 'ns', master });
}

const planWith = (spec: Record<string, unknown>, specHash?: string): SFPlan =>
  ({
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFPlan',
    metadata: { name: PLAN_ID, namespace: 'ns' },
    spec: { id: PLAN_ID, name: 'small', serviceId: 's', templates: [], ...spec },
    ...(specHash ? { status: { specHash } } : {}),
  }) as unknown as SFPlan;

async function refusal(rollouts: TemporalRollouts): Promise<OsbError> {
  const err = await rollouts.start(PLAN_ID, {}, 'alice').then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OsbError);
  return err as OsbError;
}

describe('starting a plan’s rollout', () => {
  test('a plan whose change the workers have not recorded yet: 409, naming both revisions', async () => {
    const before = planWith({ context: { maxConnections: 100 } });
    const recorded = planRevision(before.spec);
    const changed = planWith({ context: { maxConnections: 101 } }, recorded);
    const err = await refusal(rolloutsOf(changed));
    expect(err.status).toBe(409);
    expect(err.description).toBe(
      `The plan ${PLAN_ID} changed (revision ${planRevision(changed.spec)}) and the workers have not recorded it yet (status.specHash ${recorded}); try again in a moment.`,
    );
  });

  test('a plan without a recorded revision: 409', async () => {
    const err = await refusal(rolloutsOf(planWith({})));
    expect(err.status).toBe(409);
    expect(err.description).toMatch(/has no revision yet/);
  });

  test('a plan not in the catalog: 404', async () => {
    const rollouts = rolloutsOf(planWith({}));
    const err = await rollouts.start('another-plan', {}, 'alice').then(
      () => undefined,
      (e: unknown) => e as OsbError,
    );
    expect(err?.status).toBe(404);
  });
});
