/**
 * The OSB request rules that depend on the catalog: which plan a request names, whether it must
 * run asynchronously, what plan changes and maintenance versions are allowed. Pure: each rule
 * throws the OsbError the spec asks for, or returns.
 */
import type { MaintenanceInfo, SFPlan, SFService } from '../resources/types.js';
import { asyncRequired, badRequest, maintenanceInfoConflict } from './errors.js';

export interface CatalogLookup {
  plan(planId: string): SFPlan | undefined;
  service(serviceId: string): SFService | undefined;
}

/** The service and plan a request names; 400 when unknown or when the plan is not the service's. */
export function resolvePlan(
  catalog: CatalogLookup,
  serviceId: string,
  planId: string,
): { service: SFService; plan: SFPlan } {
  const service = catalog.service(serviceId);
  if (!service) throw badRequest(`Unknown service_id ${serviceId}: it is not in the catalog.`);
  const plan = catalog.plan(planId);
  if (!plan) throw badRequest(`Unknown plan_id ${planId}: it is not in the catalog.`);
  if (plan.spec.serviceId !== service.spec.id) {
    throw badRequest(`Plan ${planId} does not belong to service ${serviceId}.`);
  }
  return { service, plan };
}

/** 422 AsyncRequired when the plan runs instance operations asynchronously and the platform can't wait. */
export function requireAsyncSupport(plan: SFPlan, acceptsIncomplete: boolean): void {
  if (plan.spec.manager?.async && !acceptsIncomplete) throw asyncRequired();
}

/** 422 MaintenanceInfoConflict when the request's maintenance version is not the plan's. */
export function checkMaintenanceInfo(plan: SFPlan, requested: MaintenanceInfo | undefined): void {
  const version = requested?.version;
  if (!version) return; // `{}` counts as not provided
  const current = plan.spec.maintenance_info?.version;
  if (current !== version) {
    throw maintenanceInfoConflict(
      current
        ? `The maintenance_info.version ${version} does not match the plan's current version ${current}.`
        : `The plan has no maintenance_info; maintenance_info.version ${version} cannot be applied.`,
    );
  }
}

/** Whether an instance may move from plan `from` to plan `to` (400 with the reason when not). */
export function checkPlanChange(service: SFService, from: SFPlan, to: SFPlan): void {
  if (from.spec.id === to.spec.id) return;
  const updatable = from.spec.planUpdatable ?? service.spec.planUpdatable ?? false;
  if (!updatable)
    throw badRequest(`Plan ${from.spec.name} does not allow changing the plan of its instances.`);
  const predecessors = to.spec.update_predecessors;
  if (predecessors && !predecessors.includes(from.spec.id)) {
    throw badRequest(`Instances of plan ${from.spec.name} cannot be updated to plan ${to.spec.name}.`);
  }
}

/** Whether the plan's instances can be bound (the plan's setting overrides the service's). */
export function checkBindable(service: SFService, plan: SFPlan): void {
  if (!(plan.spec.bindable ?? service.spec.bindable))
    throw badRequest(`Plan ${plan.spec.name} is not bindable.`);
}
