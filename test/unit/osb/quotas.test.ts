/** Quotas and the entitlement service's answers: the pure decisions, table-driven. */
import {
  checkQuota,
  countTenantInstances,
  entitlementDecision,
  quotaPlans,
  tenantOf,
} from '../../../src/osb/quotas.js';
import type { PlanQuota, SFPlan, SFServiceInstance } from '../../../src/resources/types.js';
import { osbError } from '../../support/osb-error.js';

const plan = (id: string, quota?: PlanQuota, serviceId = 's-1'): SFPlan => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: { name: id },
  spec: {
    id,
    name: `${id}-name`,
    description: 'd',
    serviceId,
    templates: [],
    ...(quota ? { quota } : {}),
  },
});
const record = (
  instanceId: string,
  spec: Partial<SFServiceInstance['spec']>,
  deleting = false,
): SFServiceInstance => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFServiceInstance',
  metadata: { name: instanceId, ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { instanceId, serviceId: 's-1', planId: 'p-1', ...spec },
});

describe('the tenant a quota counts per', () => {
  test.each([
    [
      'subaccount',
      { context: { subaccount_id: 'sa-1', organization_guid: 'o-1' } },
      { kind: 'subaccount', id: 'sa-1' },
    ],
    ['organization', { context: { organization_guid: 'o-1' } }, { kind: 'organization', id: 'o-1' }],
    ['organization', { organizationGuid: 'o-2' }, { kind: 'organization', id: 'o-2' }],
    ['space', { context: { space_guid: 'sp-1' }, spaceGuid: 'sp-2' }, { kind: 'space', id: 'sp-1' }],
    ['space', { spaceGuid: 'sp-2' }, { kind: 'space', id: 'sp-2' }],
    [
      undefined,
      { context: { subaccount_id: 'sa-1' }, organizationGuid: 'o-1' },
      { kind: 'subaccount', id: 'sa-1' },
    ],
    [undefined, { organizationGuid: 'o-1' }, { kind: 'organization', id: 'o-1' }],
    ['subaccount', { organizationGuid: 'o-1' }, undefined],
    [undefined, { context: { namespace: 'default' } }, undefined],
  ] as const)('GIVEN kind %s and %j THEN %j', (kind, source, expected) => {
    expect(tenantOf(kind, source)).toEqual(expected);
  });
});

describe('the plans of a quota', () => {
  const small = plan('small', { instances: 2, group: 'g' });
  const large = plan('large', { instances: 1, group: 'g' });
  const alone = plan('alone', { instances: 1 });
  const elsewhere = plan('elsewhere', { instances: 1, group: 'g' }, 's-2');

  test('GIVEN a plan without a group THEN the plan alone', () => {
    expect(quotaPlans(alone, [small, large, alone, elsewhere])).toEqual([alone]);
  });

  test('GIVEN a group THEN the plans of the same service in it, by name', () => {
    expect(quotaPlans(small, [small, large, alone, elsewhere])).toEqual([large, small]);
  });

  test('GIVEN a plan missing from the list THEN it counts with its group', () => {
    expect(quotaPlans(small, [large])).toEqual([large, small]);
  });
});

describe('the instances a tenant holds', () => {
  const quota: PlanQuota = { instances: 2, tenant: 'organization' };
  const records = [
    record('a', { organizationGuid: 'o-1' }),
    record('b', { context: { organization_guid: 'o-1' } }),
    record('c', { organizationGuid: 'o-2' }),
    record('d', { organizationGuid: 'o-1' }, true),
    record('e', {}),
  ];

  test('GIVEN records of several tenants THEN those of the tenant, but for records being deleted', () => {
    expect(countTenantInstances(records, quota, { kind: 'organization', id: 'o-1' }, 'new')).toBe(2);
  });

  test('GIVEN the instance asked for among them THEN it does not count', () => {
    expect(countTenantInstances(records, quota, { kind: 'organization', id: 'o-1' }, 'a')).toBe(1);
  });
});

describe('checkQuota', () => {
  const tenant = { kind: 'subaccount', id: 'sa-1' } as const;

  test('GIVEN room for one more THEN it passes', () => {
    const p = plan('p-1', { instances: 2 });
    expect(checkQuota({ plan: p, quota: p.spec.quota!, plans: [p], tenant, used: 1 })).toBeUndefined();
  });

  test('GIVEN the limit reached THEN 403 QuotaExceeded naming the plan, the limit and the tenant', () => {
    const p = plan('p-1', { instances: 2 });
    const err = osbError(() => checkQuota({ plan: p, quota: p.spec.quota!, plans: [p], tenant, used: 2 }));
    expect([err.status, err.toBody()]).toEqual([
      403,
      {
        error: 'QuotaExceeded',
        description: 'The quota of plan p-1-name is 2 instances per subaccount; subaccount sa-1 holds 2.',
      },
    ]);
  });

  test('GIVEN a group at its limit THEN the description names the group and its plans', () => {
    const p = plan('p-1', { instances: 1, group: 'small' });
    const q = plan('p-2', { instances: 3, group: 'small' });
    const err = osbError(() => checkQuota({ plan: p, quota: p.spec.quota!, plans: [p, q], tenant, used: 1 }));
    expect(err.description).toBe(
      'The quota of quota group small (plans p-1-name, p-2-name) is 1 instance per subaccount; subaccount sa-1 holds 1.',
    );
  });

  test('GIVEN a limit of 0 THEN the first instance is refused', () => {
    const p = plan('p-1', { instances: 0 });
    const err = osbError(() => checkQuota({ plan: p, quota: p.spec.quota!, plans: [p], tenant, used: 0 }));
    expect(err.status).toBe(403);
  });
});

describe('the entitlement service answer', () => {
  test.each([
    ['allowed', { kind: 'answered', body: { allowed: true } }, 'refuse', {}],
    ['allowed under allow', { kind: 'answered', body: { allowed: true } }, 'allow', {}],
    [
      'no answer, allowed by the policy',
      { kind: 'unreachable', reason: 'no answer in 1 s' },
      'allow',
      { unanswered: 'no answer in 1 s' },
    ],
    [
      'nonsense, allowed by the policy',
      { kind: 'answered', body: { allowed: 'yes' } },
      'allow',
      { unanswered: 'its answer has no boolean "allowed"' },
    ],
  ] as const)('GIVEN %s THEN it passes', (_, answer, policy, expected) => {
    expect(entitlementDecision(answer, policy)).toEqual(expected);
  });

  test('GIVEN a refusal THEN 403 EntitlementRefused with its description, whatever the policy', () => {
    for (const policy of ['refuse', 'allow'] as const) {
      const { refusal } = entitlementDecision(
        {
          kind: 'answered',
          body: { allowed: false, description: 'subaccount sa-1 is not entitled to plan small' },
        },
        policy,
      );
      expect(refusal && [refusal.status, refusal.toBody()]).toEqual([
        403,
        {
          error: 'EntitlementRefused',
          description:
            'The entitlement service refuses this instance: subaccount sa-1 is not entitled to plan small',
        },
      ]);
    }
  });

  test.each([
    [{ kind: 'unreachable', reason: 'it could not be reached' }, 'it could not be reached'],
    [{ kind: 'answered', body: null }, 'its answer has no boolean "allowed"'],
  ] as const)('GIVEN %j under refuse THEN 503 saying why', (answer, reason) => {
    const { refusal } = entitlementDecision(answer, 'refuse');
    expect(refusal?.status).toBe(503);
    expect(refusal?.description).toContain(reason);
  });
});
