/**
 * The quota checks of a provision and of a plan change: the plan's own quota, counted from the
 * instance records in the master, then the entitlement service, when one is configured. Both are
 * checked when the request arrives, as the original broker did: two requests of one tenant that
 * arrive together may both pass a limit of one more instance.
 */
import {
  checkQuota,
  countTenantInstances,
  entitlementDecision,
  quotaPlans,
  tenantOf,
  type EntitlementAnswer,
  type EntitlementFailurePolicy,
  type EntitlementRequest,
  type TenantSource,
} from '../osb/quotas.js';
import { quotaAppDecision, quotaAppPath } from '../osb/service-fabrik-quota.js';
import type { PlatformRoute } from '../osb/platforms.js';
import type { SFPlan } from '../resources/types.js';
import type { Records } from './records.js';

/**
 * How the broker asks the entitlement service: `entitlement`, a POST of an
 * {@link EntitlementRequest} to the URL; `service-fabrik`, the GET of Service Fabrik's quota app
 * under the URL (src/osb/service-fabrik-quota.ts).
 */
export type EntitlementProtocol = 'entitlement' | 'service-fabrik';

/** The entitlement service the broker asks (docs/quotas.md). */
export interface EntitlementService {
  /** Where the broker asks; user and password in it are sent as Basic authentication. */
  readonly url: string;
  /** @default 'entitlement' */
  readonly protocol?: EntitlementProtocol;
  /** How long the broker waits for its answer. */
  readonly timeoutMs: number;
  /** What the broker does when it gets no usable answer. */
  readonly failurePolicy: EntitlementFailurePolicy;
}

/** A request that would add an instance to a plan: a provision, or an update that changes the plan. */
export interface QuotaRequest extends TenantSource {
  readonly operation: 'provision' | 'update';
  readonly instanceId: string;
  readonly serviceId: string;
  /** The plan the instance is to be on. */
  readonly plan: SFPlan;
  /** On a plan change, the plan the instance leaves. */
  readonly previousPlanId?: string;
  /** The platform and region of the path the request came on. */
  readonly platformRoute?: PlatformRoute;
}

export interface QuotaDeps {
  readonly records: Records;
  /** All plans of the catalog, for the plans of a quota group. */
  readonly plans: () => readonly SFPlan[];
  readonly entitlements?: EntitlementService;
  /** Told when the entitlement service gave no usable answer and the policy let the request pass. */
  readonly onUnanswered?: (reason: string) => void;
}

/**
 * The URL to ask without its user and password, and those as a Basic `Authorization` header
 * (fetch refuses a URL that carries credentials).
 */
function withoutCredentials(url: string, path = ''): { url: string; headers: Record<string, string> } {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = '';
  parsed.password = '';
  const base = parsed.toString();
  const joined = path ? `${base.replace(/\/+$/, '')}${path}` : base;
  return {
    url: joined,
    headers:
      user || password
        ? { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` }
        : {},
  };
}

/** Asks the entitlement service; never throws: a failure is an answer of its own. */
async function askEntitlements(
  service: EntitlementService,
  request: { readonly method: 'GET' | 'POST'; readonly path?: string; readonly body?: unknown },
): Promise<EntitlementAnswer> {
  try {
    const target = withoutCredentials(service.url, request.path);
    const res = await fetch(target.url, {
      method: request.method,
      headers: {
        ...target.headers,
        accept: 'application/json',
        ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(service.timeoutMs),
    });
    if (!res.ok) {
      await res.body?.cancel();
      return { kind: 'unreachable', reason: `it answered HTTP ${res.status}` };
    }
    try {
      return { kind: 'answered', body: await res.json() };
    } catch {
      return { kind: 'unreachable', reason: 'its answer is not JSON' };
    }
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    // The URL is not repeated: it may hold credentials.
    return {
      kind: 'unreachable',
      reason: timedOut ? `no answer in ${service.timeoutMs / 1000} s` : 'it could not be reached',
    };
  }
}

/**
 * Checks the quotas a request must fit in.
 *
 * @throws OsbError 403 `QuotaExceeded` or `EntitlementRefused`; 503 when the entitlement service
 *   cannot be asked and its failure policy refuses.
 */
export async function checkQuotas(deps: QuotaDeps, req: QuotaRequest): Promise<void> {
  const quota = req.plan.spec.quota;
  if (quota) {
    const plans = quotaPlans(req.plan, deps.plans());
    const withinGroup = plans.some((p) => p.spec.id === req.previousPlanId);
    const tenant = tenantOf(quota.tenant, req);
    if (tenant && !withinGroup) {
      const used = await deps.records.countInstancesOfPlans(
        plans.map((p) => p.spec.id),
        (record) => countTenantInstances([record], quota, tenant, req.instanceId) === 1,
      );
      checkQuota({ plan: req.plan, quota, plans, tenant, used });
    }
  }
  const service = deps.entitlements;
  if (!service) return;
  const asked: EntitlementRequest = {
    operation: req.operation,
    instance_id: req.instanceId,
    service_id: req.serviceId,
    plan_id: req.plan.spec.id,
    ...(req.previousPlanId ? { previous_plan_id: req.previousPlanId } : {}),
    ...(req.organizationGuid ? { organization_guid: req.organizationGuid } : {}),
    ...(req.spaceGuid ? { space_guid: req.spaceGuid } : {}),
    ...(req.context ? { context: req.context } : {}),
    ...(req.platformRoute ? { platform: req.platformRoute.platform } : {}),
    ...(req.platformRoute?.region ? { region: req.platformRoute.region } : {}),
  };
  const decision =
    service.protocol === 'service-fabrik'
      ? quotaAppDecision(
          await askEntitlements(service, {
            method: 'GET',
            path: quotaAppPath(asked, req.platformRoute?.region),
          }),
          service.failurePolicy,
        )
      : entitlementDecision(
          await askEntitlements(service, { method: 'POST', body: asked }),
          service.failurePolicy,
        );
  if (decision.refusal) throw decision.refusal;
  if (decision.unanswered) deps.onUnanswered?.(decision.unanswered);
}
