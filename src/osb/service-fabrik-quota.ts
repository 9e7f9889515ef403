/**
 * The quota contract of Service Fabrik's quota app, as one way of asking the entitlement service
 * (docs/quotas.md): `GET <url>/v1/account/<subaccount>/quota?planId=...&previousPlanId=...&orgId=...`
 * answered `{"quotaValidStatus": 0 | 1 | 2, "message"?: "..."}`: 0 the quota is valid, 1 it is not
 * sufficient, 2 the tenant is not entitled to the plan. A landscape that runs the quota app for
 * Service Fabrik's broker keeps it.
 *
 * Pure: the request's path and query, and the decision on the answer.
 */
import { badRequest, forbidden, type OsbError } from './errors.js';
import {
  entitlementDecision,
  type EntitlementAnswer,
  type EntitlementFailurePolicy,
  type EntitlementRequest,
} from './quotas.js';

/** The quota app's answers (Service Fabrik's `QUOTA_API_RESPONSE_CODES`). */
export const QUOTA_VALID_STATUS = { valid: 0, notSufficient: 1, notEntitled: 2 } as const;

/** The texts Service Fabrik's broker answers with when the quota app gives no message. */
const REFUSALS = {
  [QUOTA_VALID_STATUS.notSufficient]: 'Quota is not sufficient for this request',
  [QUOTA_VALID_STATUS.notEntitled]: 'Not entitled to create service instance',
} as const;

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;

/**
 * The path and query the quota app is asked at, under its base URL, for `request` (a provision is
 * the HTTP method PUT, a plan change PATCH, as Service Fabrik's broker sends them); `region` when
 * the request came by a region's route.
 *
 * @throws OsbError 400 when the request names neither an organization nor a subaccount, as
 *   Service Fabrik's broker answers.
 */
export function quotaAppPath(request: EntitlementRequest, region?: string): string {
  const subaccountId = text(request.context?.subaccount_id);
  const orgId = text(request.organization_guid) ?? text(request.context?.organization_guid);
  if (!subaccountId && !orgId) throw badRequest('organization_id and subaccountId are undefined');
  const query = new URLSearchParams({ planId: request.plan_id });
  if (request.previous_plan_id) query.set('previousPlanId', request.previous_plan_id);
  query.set('useAPIServerForConsumedQuotaCheck', 'true');
  if (orgId) query.set('orgId', orgId);
  query.set('reqMethod', request.operation === 'provision' ? 'PUT' : 'PATCH');
  query.set('instanceId', request.instance_id);
  if (region) query.set('region', region);
  return `/v1/account/${encodeURIComponent(subaccountId ?? 'undefined')}/quota?${query.toString()}`;
}

/**
 * The decision on the quota app's answer: 0 lets the request go on; 1 and 2 refuse it with 403
 * and the app's message (else Service Fabrik's text); any other answer counts as no answer, which
 * the failure policy decides on.
 */
export function quotaAppDecision(
  answer: EntitlementAnswer,
  policy: EntitlementFailurePolicy,
): { readonly refusal?: OsbError; readonly unanswered?: string } {
  if (answer.kind === 'unreachable') return entitlementDecision(answer, policy);
  const body = (answer.body ?? {}) as { quotaValidStatus?: unknown; message?: unknown };
  const status = typeof body === 'object' ? body.quotaValidStatus : undefined;
  if (status === QUOTA_VALID_STATUS.valid) return {};
  if (status === QUOTA_VALID_STATUS.notSufficient || status === QUOTA_VALID_STATUS.notEntitled) {
    const message = text(body.message)?.slice(0, 500) ?? REFUSALS[status];
    return {
      refusal: forbidden(
        message,
        status === QUOTA_VALID_STATUS.notSufficient ? 'QuotaExceeded' : 'EntitlementRefused',
      ),
    };
  }
  return entitlementDecision(
    { kind: 'unreachable', reason: 'its answer has no quotaValidStatus 0, 1 or 2' },
    policy,
  );
}
