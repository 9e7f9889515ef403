/**
 * Quotas: how many instances of a plan (or of a group of plans) one tenant may hold, the tenant
 * being the subaccount, organization or space the request's context names. Pure: the broker counts
 * the records and asks the entitlement service; the decisions are here.
 */
import type { PlanQuota, QuotaTenant, SFPlan, SFServiceInstance } from '../resources/types.js';
import { forbidden, unavailable, type OsbError } from './errors.js';

/** What names an instance's tenant: the request's fields, or a record's spec. */
export interface TenantSource {
  readonly organizationGuid?: string;
  readonly spaceGuid?: string;
  readonly context?: Record<string, unknown>;
}

/** A tenant: which kind, and its id. */
export interface Tenant {
  readonly kind: QuotaTenant;
  readonly id: string;
}

/** Code-point order, so a description does not depend on the process's locale. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/**
 * The tenant of `source` the quota counts per: `subaccount` is the context's `subaccount_id`;
 * `organization` its `organization_guid`, else the request's `organization_guid`; `space` its
 * `space_guid`, else the request's `space_guid`. Without a kind, the subaccount when the context
 * names one, else the organization. Undefined when the source names none.
 */
export function tenantOf(kind: QuotaTenant | undefined, source: TenantSource): Tenant | undefined {
  const context = source.context ?? {};
  const ids: Record<QuotaTenant, string | undefined> = {
    subaccount: text(context.subaccount_id),
    organization: text(context.organization_guid) ?? text(source.organizationGuid),
    space: text(context.space_guid) ?? text(source.spaceGuid),
  };
  const chosen = kind ?? (ids.subaccount ? 'subaccount' : 'organization');
  const id = ids[chosen];
  return id === undefined ? undefined : { kind: chosen, id };
}

/**
 * The plans whose instances count against `plan`'s quota: the plans of its service in the same
 * quota group (by name, then id), or the plan alone when it names no group.
 */
export function quotaPlans(plan: SFPlan, plans: readonly SFPlan[]): SFPlan[] {
  const group = plan.spec.quota?.group;
  if (group === undefined) return [plan];
  const members = plans.filter(
    (p) => p.spec.serviceId === plan.spec.serviceId && p.spec.quota?.group === group,
  );
  const all = members.some((p) => p.spec.id === plan.spec.id) ? members : [plan, ...members];
  return all.sort((a, b) => compare(a.spec.name, b.spec.name) || compare(a.spec.id, b.spec.id));
}

/**
 * The instances among `records` that count against a quota for `tenant`: those of the same
 * tenant (by the quota's kind), but for `instanceId` itself (an instance that changes plan within
 * the group, or a provision asked again) and records being deleted.
 */
export function countTenantInstances(
  records: readonly SFServiceInstance[],
  quota: PlanQuota,
  tenant: Tenant,
  instanceId: string,
): number {
  return records.filter((record) => {
    if (record.metadata.deletionTimestamp) return false;
    if ((record.spec.instanceId ?? record.metadata.name) === instanceId) return false;
    const theirs = tenantOf(quota.tenant, record.spec);
    return theirs?.kind === tenant.kind && theirs.id === tenant.id;
  }).length;
}

/** What the quota check decided on: the limit, the tenant and how many instances it holds. */
export interface QuotaUse {
  readonly plan: SFPlan;
  readonly quota: PlanQuota;
  readonly plans: readonly SFPlan[];
  readonly tenant: Tenant;
  /** Instances the tenant holds already, the one asked for excluded. */
  readonly used: number;
}

const TENANT_NAMES: Record<QuotaTenant, string> = {
  subaccount: 'subaccount',
  organization: 'organization',
  space: 'space',
};

/**
 * One more instance must fit in the quota.
 *
 * @throws OsbError 403 `QuotaExceeded` naming the limit, the tenant and what it holds.
 */
export function checkQuota({ plan, quota, plans, tenant, used }: QuotaUse): void {
  if (used < quota.instances) return;
  const counted =
    quota.group === undefined
      ? `plan ${plan.spec.name}`
      : `quota group ${quota.group} (plans ${plans.map((p) => p.spec.name).join(', ')})`;
  throw forbidden(
    `The quota of ${counted} is ${quota.instances} instance${quota.instances === 1 ? '' : 's'} per ${
      TENANT_NAMES[tenant.kind]
    }; ${TENANT_NAMES[tenant.kind]} ${tenant.id} holds ${used}.`,
    'QuotaExceeded',
  );
}

/** What the broker asks the entitlement service (the JSON body of its POST). */
export interface EntitlementRequest {
  readonly operation: 'provision' | 'update';
  readonly instance_id: string;
  readonly service_id: string;
  readonly plan_id: string;
  /** On a plan change, the plan the instance leaves. */
  readonly previous_plan_id?: string;
  readonly organization_guid?: string;
  readonly space_guid?: string;
  readonly context?: Record<string, unknown>;
  /** The platform of the path the request came on (`cf`, `k8s`, `sm`); absent for `/v2`. */
  readonly platform?: string;
  /** The region of a `/<platform>/region/<region>/v2` path. */
  readonly region?: string;
}

/** What the entitlement service answered, or why it could not be asked. */
export type EntitlementAnswer =
  | { readonly kind: 'answered'; readonly body: unknown }
  | { readonly kind: 'unreachable'; readonly reason: string };

/** What the broker does when the entitlement service cannot be asked or answers nonsense. */
export type EntitlementFailurePolicy = 'refuse' | 'allow';

/**
 * The decision on the entitlement service's answer. It allows with `{"allowed": true}` and refuses
 * with `{"allowed": false, "description": "..."}`; any other answer counts as no answer, which
 * the failure policy decides on.
 *
 * @returns undefined when the request may go on; else the OsbError to answer with: 403
 *   `EntitlementRefused` with the service's description, or 503 when it could not be asked and the
 *   policy is `refuse`. With `allow`, the caller logs `unanswered`.
 */
export function entitlementDecision(
  answer: EntitlementAnswer,
  policy: EntitlementFailurePolicy,
): { readonly refusal?: OsbError; readonly unanswered?: string } {
  let reason: string;
  if (answer.kind === 'answered') {
    const body = answer.body as { allowed?: unknown; description?: unknown } | null;
    if (body && typeof body === 'object' && body.allowed === true) return {};
    if (body && typeof body === 'object' && body.allowed === false) {
      const why = typeof body.description === 'string' && body.description !== '' ? body.description : '';
      return {
        refusal: forbidden(
          `The entitlement service refuses this instance${why ? `: ${why.slice(0, 500)}` : '.'}`,
          'EntitlementRefused',
        ),
      };
    }
    reason = 'its answer has no boolean "allowed"';
  } else {
    reason = answer.reason;
  }
  if (policy === 'allow') return { unanswered: reason };
  return {
    refusal: unavailable(
      `The entitlement service could not be asked (${reason}); new instances and plan changes are refused until it answers.`,
    ),
  };
}
