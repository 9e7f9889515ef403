/** Service Fabrik's quota app contract: the path the broker asks and the decision on the answer. */
import { quotaAppDecision, quotaAppPath } from '../../../src/osb/service-fabrik-quota.js';
import type { EntitlementRequest } from '../../../src/osb/quotas.js';

const provision: EntitlementRequest = {
  operation: 'provision',
  instance_id: 'i-1',
  service_id: 's-1',
  plan_id: 'p-small',
  organization_guid: 'org-1',
  space_guid: 'space-1',
  context: { platform: 'cloudfoundry', subaccount_id: 'sa 1', organization_guid: 'org-1' },
};

const queryOf = (path: string) => Object.fromEntries(new URL(path, 'http://quota.app').searchParams);

describe('the quota app request', () => {
  test('GIVEN a provision THEN GET /v1/account/<subaccount>/quota with the plan, the organization and PUT', () => {
    const path = quotaAppPath(provision);
    expect(path.split('?')[0]).toBe('/v1/account/sa%201/quota');
    expect(queryOf(path)).toEqual({
      planId: 'p-small',
      useAPIServerForConsumedQuotaCheck: 'true',
      orgId: 'org-1',
      reqMethod: 'PUT',
      instanceId: 'i-1',
    });
  });

  test('GIVEN a plan change by a region route THEN PATCH, the previous plan and the region', () => {
    const path = quotaAppPath({ ...provision, operation: 'update', previous_plan_id: 'p-tiny' }, 'eu10');
    expect(queryOf(path)).toMatchObject({ reqMethod: 'PATCH', previousPlanId: 'p-tiny', region: 'eu10' });
  });

  test('GIVEN only an organization in the context THEN it is the orgId, the subaccount is undefined as Service Fabrik sends it', () => {
    const path = quotaAppPath({
      ...provision,
      organization_guid: undefined,
      context: { organization_guid: 'org-2' },
    } as EntitlementRequest);
    expect(path.split('?')[0]).toBe('/v1/account/undefined/quota');
    expect(queryOf(path).orgId).toBe('org-2');
  });

  test('GIVEN neither an organization nor a subaccount THEN 400 as Service Fabrik answers', () => {
    expect(() =>
      quotaAppPath({ operation: 'provision', instance_id: 'i', service_id: 's', plan_id: 'p', context: {} }),
    ).toThrow(
      expect.objectContaining({ status: 400, description: 'organization_id and subaccountId are undefined' }),
    );
  });
});

describe('the quota app answer', () => {
  const answered = (body: unknown) => ({ kind: 'answered', body }) as const;

  test('GIVEN quotaValidStatus 0 THEN the request goes on, whatever the policy', () => {
    expect(quotaAppDecision(answered({ quotaValidStatus: 0 }), 'refuse')).toEqual({});
    expect(quotaAppDecision(answered({ quotaValidStatus: 0 }), 'allow')).toEqual({});
  });

  test.each([
    [1, undefined, 'QuotaExceeded', 'Quota is not sufficient for this request'],
    [2, undefined, 'EntitlementRefused', 'Not entitled to create service instance'],
    [1, 'Quota of subaccount sa-1 exhausted', 'QuotaExceeded', 'Quota of subaccount sa-1 exhausted'],
  ])('GIVEN quotaValidStatus %s with message %j THEN 403 %s: %s', (status, message, error, description) => {
    for (const policy of ['refuse', 'allow'] as const) {
      const { refusal } = quotaAppDecision(answered({ quotaValidStatus: status, message }), policy);
      expect(refusal && [refusal.status, refusal.toBody()]).toEqual([403, { error, description }]);
    }
  });

  test.each([[{ quotaValidStatus: 3 }], [{ quotaValidStatus: '0' }], [null], [[]]])(
    'GIVEN %j THEN no answer: refuse says 503 why, allow lets it pass and says why',
    (body) => {
      const refused = quotaAppDecision(answered(body), 'refuse').refusal;
      expect(refused?.status).toBe(503);
      expect(refused?.description).toContain('its answer has no quotaValidStatus 0, 1 or 2');
      expect(quotaAppDecision(answered(body), 'allow')).toEqual({
        unanswered: 'its answer has no quotaValidStatus 0, 1 or 2',
      });
    },
  );
});
