/**
 * The OSB request rules that depend on the catalog: which service and plan a request names,
 * whether it must run asynchronously, which plan changes, context updates and maintenance versions
 * are allowed, what an update needs of its instance, and what a binding (and its rotation) needs. Pure: each rule
 * returns, or throws the OsbError the spec asks for.
 */
import type { MaintenanceInfo, SFPlan, SFService, SFServiceBinding } from '../resources/types.js';
import { hasExpired } from './binding-lifetime.js';
import { canonicalJson } from './canonical-json.js';
import type { CatalogLookup } from './catalog.js';
import {
  asyncRequired,
  badRequest,
  concurrencyError,
  forbidden,
  maintenanceInfoConflict,
  notFound,
  planChangeNotSupported,
  requiresApp,
  OsbError,
} from './errors.js';
import { validateParameters } from './schemas.js';
import type { InstanceView, UpdateRequest } from './service-broker.js';
import { FEATURES, supports, type ApiVersion } from './version.js';

export type { CatalogLookup } from './catalog.js';

/**
 * The service a request names.
 *
 * @throws OsbError 400 when the catalog has no service with this id.
 */
export function resolveService(catalog: CatalogLookup, serviceId: string): SFService {
  const service = catalog.service(serviceId);
  if (!service) throw badRequest(`service_id ${serviceId} is not a service of this broker's catalog.`);
  return service;
}

/**
 * The service and plan a request names.
 *
 * @throws OsbError 400 when either id is not in the catalog, or when the plan belongs to another
 *   service.
 */
export function resolvePlan(
  catalog: CatalogLookup,
  serviceId: string,
  planId: string,
): { service: SFService; plan: SFPlan } {
  const service = resolveService(catalog, serviceId);
  const plan = catalog.plan(planId);
  if (!plan) throw badRequest(`plan_id ${planId} is not a plan of this broker's catalog.`);
  if (plan.spec.serviceId !== service.spec.id) {
    throw badRequest(
      `plan_id ${planId} (plan ${plan.spec.name}) does not belong to service_id ${serviceId} (service ${service.spec.name}).`,
    );
  }
  return { service, plan };
}

/**
 * Whether the plan is deprecated: its OSB metadata says `state: deprecated` (`spec.metadata.state`,
 * as in the original broker's catalog).
 */
export function isDeprecated(plan: SFPlan): boolean {
  return plan.spec.metadata?.state === 'deprecated';
}

/**
 * A plan takes new instances (a provision, or an instance moving to it) unless it is deprecated or
 * it, or its service, is being deleted. Its existing instances keep working either way: they are
 * updated, bound and deprovisioned as before, and may move to another plan.
 *
 * @throws OsbError 403 `PlanNotAvailable` saying why.
 */
export function checkPlanOpen(service: SFService, plan: SFPlan): void {
  const refuse = (why: string) =>
    forbidden(
      `Plan ${plan.spec.name} of service ${service.spec.name} ${why}; it takes no new instances, while its existing instances keep working and can move to another plan.`,
      'PlanNotAvailable',
    );
  if (service.metadata.deletionTimestamp) throw refuse('belongs to a service being removed from the catalog');
  if (plan.metadata.deletionTimestamp) throw refuse('is being removed from the catalog');
  if (isDeprecated(plan)) throw refuse('is deprecated');
}

/**
 * Provision, update and deprovision of a plan with `manager.async` answer 202 only, so the platform
 * must accept an incomplete answer.
 *
 * @throws OsbError 422 `AsyncRequired` when it does not.
 */
export function requireAsyncSupport(plan: SFPlan, acceptsIncomplete: boolean): void {
  if (plan.spec.manager?.async === true && !acceptsIncomplete) {
    throw asyncRequired(
      `Plan ${plan.spec.name} runs provision, update and deprovision asynchronously; send accepts_incomplete=true.`,
    );
  }
}

/**
 * Whether a bind or unbind may be answered asynchronously, which is what the service layer gets as
 * `acceptsIncomplete`.
 *
 * - Before 2.14 bindings are synchronous only: the answer is `false` whatever the query says, and
 *   the service layer must finish within the request (spec §9.6: finish in sync mode rather than
 *   fail a platform that cannot poll bindings).
 * - From 2.14, a plan with `manager.asyncBinding` needs `accepts_incomplete=true`.
 *
 * @throws OsbError 422 `AsyncRequired` for an async-binding plan at 2.14+ without accepts_incomplete.
 */
export function bindingAcceptsIncomplete(
  plan: SFPlan,
  acceptsIncomplete: boolean,
  version: ApiVersion,
): boolean {
  if (!supports(version, FEATURES.asyncBindings)) return false;
  if (plan.spec.manager?.asyncBinding === true && !acceptsIncomplete) {
    throw asyncRequired(
      `Plan ${plan.spec.name} creates and deletes bindings asynchronously; send accepts_incomplete=true.`,
    );
  }
  return acceptsIncomplete;
}

/**
 * A requested `maintenance_info.version` must be the plan's current one. A request without a
 * version (`maintenance_info: {}` included) is not a conflict.
 *
 * @throws OsbError 422 `MaintenanceInfoConflict` when the versions differ or the plan has none.
 */
export function checkMaintenanceInfo(plan: SFPlan, requested: MaintenanceInfo | undefined): void {
  const version = requested?.version;
  if (version === undefined || version === '') return;
  const current = plan.spec.maintenance_info?.version;
  if (current === version) return;
  throw maintenanceInfoConflict(
    current === undefined
      ? `Plan ${plan.spec.name} has no maintenance_info; maintenance_info.version ${version} cannot be applied.`
      : `maintenance_info.version ${version} is not the current version ${current} of plan ${plan.spec.name}; fetch the catalog again.`,
  );
}

/**
 * Whether an instance may move from plan `from` (its current plan; `undefined` when that plan has
 * left the catalog) to plan `to`. The current plan's `planUpdatable` (`plan_updateable`) overrides
 * the service's; the target plan's `update_predecessors`, when set, lists the plans it accepts
 * instances from.
 *
 * @throws OsbError 400 `PlanChangeNotSupported` with the reason.
 */
export function checkPlanChange(service: SFService, from: SFPlan | undefined, to: SFPlan): void {
  if (from?.spec.id === to.spec.id) return;
  const updatable = from?.spec.planUpdatable ?? service.spec.planUpdatable ?? false;
  if (!updatable) {
    throw planChangeNotSupported(
      from
        ? `Plan ${from.spec.name} does not allow changing the plan of its instances (plan_updateable is false).`
        : `Service ${service.spec.name} does not allow changing the plan of its instances (plan_updateable is false).`,
    );
  }
  const predecessors = to.spec.update_predecessors;
  if (predecessors && !(from && predecessors.includes(from.spec.id))) {
    throw planChangeNotSupported(
      `Instances of plan ${from?.spec.name ?? 'unknown'} cannot be updated to plan ${to.spec.name}; it accepts instances of ${
        predecessors.length > 0 ? predecessors.join(', ') : 'no other plan'
      } only.`,
    );
  }
}

/** What an update request asks to change, as far as the context-update rule cares. */
export interface UpdateChanges {
  /** The request names a plan other than the instance's. */
  readonly planChange: boolean;
  readonly parameters: boolean;
  readonly maintenanceInfo: boolean;
  readonly context: boolean;
}

/**
 * An update that changes only the context needs `allow_context_updates` on the service.
 *
 * @throws OsbError 400 `ContextUpdateNotSupported` when the service does not allow it.
 */
export function checkContextUpdate(service: SFService, changes: UpdateChanges): void {
  const contextOnly =
    changes.context && !changes.planChange && !changes.parameters && !changes.maintenanceInfo;
  if (contextOnly && service.spec.allowContextUpdates !== true) {
    throw new OsbError(
      400,
      `Service ${service.spec.name} does not allow updates that change only the context (allow_context_updates is false).`,
      'ContextUpdateNotSupported',
    );
  }
}

/**
 * Whether `request` may update `instance` (as the broker has it now), and the plan the update runs
 * on: the plan the request names, else the instance's own. The rules, in the order they are
 * checked:
 *
 * - 404 when there is no instance;
 * - 400 when the request names another service than the instance's;
 * - 422 `ConcurrencyError` while the instance is being provisioned or deprovisioned (a running
 *   update may be this very request again, which the broker answers as a repeat);
 * - 400 when the request names no plan and the instance's plan has left the catalog;
 * - 422 `AsyncRequired` when that plan runs asynchronously and the request does not accept it;
 * - the plan change ({@link checkPlanChange}), the plan it moves to taking new instances
 *   ({@link checkPlanOpen}), the context update ({@link checkContextUpdate}),
 *   `maintenance_info` ({@link checkMaintenanceInfo}) and the parameters against the plan's
 *   update schema.
 *
 * The service and the named plan must be in the catalog (see {@link resolvePlan}).
 *
 * @throws OsbError as listed.
 */
export function checkUpdate(
  catalog: CatalogLookup,
  instance: InstanceView | undefined,
  request: UpdateRequest,
): SFPlan {
  const service = resolveService(catalog, request.serviceId);
  const target =
    request.planId === undefined ? undefined : resolvePlan(catalog, request.serviceId, request.planId).plan;
  if (!instance) throw notFound('The service instance does not exist.');
  if (instance.serviceId !== request.serviceId) {
    throw badRequest(
      `The service instance belongs to service_id ${instance.serviceId}, not ${request.serviceId}.`,
    );
  }
  const running = instance.operation?.state === 'in progress' ? instance.operation.type : undefined;
  if (running === 'provision' || running === 'deprovision') {
    throw concurrencyError(`The service instance is being ${running}ed; update it when that has finished.`);
  }
  const current = catalog.plan(instance.planId);
  const plan = target ?? current;
  if (!plan) {
    throw badRequest(
      `The plan ${instance.planId} of the service instance is no longer in the catalog; name a plan_id to move it to.`,
    );
  }
  requireAsyncSupport(plan, request.acceptsIncomplete);
  const planChange = plan.spec.id !== instance.planId;
  if (planChange) {
    checkPlanChange(service, current, plan);
    checkPlanOpen(service, plan);
  }
  checkContextUpdate(service, {
    planChange,
    parameters: request.parameters !== undefined,
    maintenanceInfo: request.maintenanceInfo !== undefined,
    // Platforms send the context with every update: only one that differs from the recorded
    // context changes it.
    context:
      request.context !== undefined &&
      canonicalJson(request.context) !== canonicalJson(instance.context ?? {}),
  });
  checkMaintenanceInfo(plan, request.maintenanceInfo);
  validateParameters(plan, 'service_instance.update', request.parameters);
  return plan;
}

/**
 * Instances of the plan can be bound: the plan's `bindable` overrides the service's.
 *
 * @throws OsbError 400 when the plan is not bindable.
 */
export function checkBindable(service: SFService, plan: SFPlan): void {
  if (!(plan.spec.bindable ?? service.spec.bindable)) {
    throw badRequest(`Plan ${plan.spec.name} of service ${service.spec.name} is not bindable.`);
  }
}

/**
 * A plan whose `manager.requiresApp` is true binds applications only, so the bind request must name
 * one (`bind_resource.app_guid`, or the deprecated `app_guid`).
 *
 * @throws OsbError 422 `RequiresApp` when it names none.
 */
export function checkRequiresApp(plan: SFPlan, appGuid: string | undefined): void {
  if (plan.spec.manager?.requiresApp === true && !appGuid) throw requiresApp();
}

/**
 * Binding rotation (`predecessor_binding_id`) needs a plan with `bindingRotatable` (the catalog's
 * `binding_rotatable`). Decided from the request alone; what the predecessor must be is
 * {@link checkPredecessorBinding}'s.
 *
 * @throws OsbError 400 `BindingRotationNotSupported` when the request asks for a rotation on
 *   another plan.
 */
export function checkBindingRotation(plan: SFPlan, predecessorBindingId: string | undefined): void {
  if (predecessorBindingId !== undefined && plan.spec.bindingRotatable !== true) {
    throw new OsbError(
      400,
      `Plan ${plan.spec.name} is not binding_rotatable; predecessor_binding_id cannot be used.`,
      'BindingRotationNotSupported',
    );
  }
}

/**
 * The binding a rotation names must be one that works now, of the same instance (OSB 2.17: a
 * non-expired binding of the same service instance; both stay valid until each is unbound):
 *
 * - it exists, and belongs to the instance the new binding is for;
 * - it is not being deleted (an unbind running or its record being deleted);
 * - its bind succeeded (not failed, not still running);
 * - it has not expired (its recorded `expiresAt` is after `now`; a binding without one never
 *   expires).
 *
 * A binding that was rotated before may be rotated again (a retried rotation, whose first
 * successor failed, names it once more), and a successor may itself be rotated later: each
 * successor records its own predecessor.
 *
 * @param found the binding record found under that id: of this instance if there is one, else
 *   of another instance; undefined when there is none.
 * @throws OsbError 400 `InvalidPredecessorBinding` saying which rule it breaks.
 */
export function checkPredecessorBinding(
  instanceId: string,
  predecessorBindingId: string,
  found: SFServiceBinding | undefined,
  now: Date,
): asserts found is SFServiceBinding {
  const refuse = (why: string) =>
    new OsbError(400, `predecessor_binding_id ${predecessorBindingId} ${why}`, 'InvalidPredecessorBinding');
  if (!found) throw refuse('names no binding of this service instance.');
  if (found.spec.instanceId !== instanceId) {
    throw refuse(
      'names a binding of another service instance; only a binding of the same service instance can be rotated.',
    );
  }
  const status = found.status;
  if (found.metadata.deletionTimestamp || status?.operation === 'unbind') {
    throw refuse(
      status?.state === 'failed' && !found.metadata.deletionTimestamp
        ? 'names a binding whose unbind failed; rotate a binding that is in use.'
        : 'names a binding that is being deleted; rotate a binding that is in use.',
    );
  }
  if (status?.state === 'failed')
    throw refuse('names a binding whose bind failed; it has nothing to rotate.');
  if (status?.state !== 'succeeded') {
    throw refuse('names a binding that is still being created; rotate it once its bind has succeeded.');
  }
  if (hasExpired(found.spec, now)) {
    throw refuse(
      `names a binding that expired at ${found.spec.expiresAt}; an expired binding cannot be rotated.`,
    );
  }
}

/**
 * Refuses a `GET` of an instance or a binding of a service that does not declare it may be fetched
 * (`instances_retrievable` / `bindings_retrievable`, false when absent, as the spec has it). The
 * spec names no answer for it; 400, as Service Fabrik's broker answers, tells the platform nothing
 * of whether the instance or binding exists (a 404 would say it is gone).
 *
 * @throws OsbError 400 naming the service and the flag.
 */
export function checkRetrievable(service: SFService | undefined, what: 'instance' | 'binding'): void {
  const retrievable =
    what === 'instance' ? service?.spec.instancesRetrievable : service?.spec.bindingsRetrievable;
  if (retrievable === true) return;
  const flag = what === 'instance' ? 'instances_retrievable' : 'bindings_retrievable';
  throw badRequest(
    `${service ? `Service ${service.spec.name}` : 'The service of this ' + what} does not support fetching its ${what}s (${flag} is not true).`,
  );
}
