/** The OSB catalog (`GET /v2/catalog`) from SFService and SFPlan resources. Pure. */
import type { SFPlan, SFService } from '../resources/types.js';

const defined = <T extends Record<string, unknown>>(obj: T): Partial<T> =>
  Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;

/** One OSB plan object. */
export function osbPlan(plan: SFPlan): Record<string, unknown> {
  const s = plan.spec;
  return defined({
    id: s.id,
    name: s.name,
    description: s.description,
    metadata: s.metadata,
    free: s.free,
    bindable: s.bindable,
    plan_updateable: s.planUpdatable,
    schemas: s.schemas,
    maintenance_info: s.maintenance_info,
    maximum_polling_duration: s.maximum_polling_duration,
  });
}

/** The catalog: services sorted by name, each with its plans sorted by name. */
export function osbCatalog(
  services: readonly SFService[],
  plans: readonly SFPlan[],
): { services: unknown[] } {
  const byName = <T extends { spec: { name: string } }>(a: T, b: T) => a.spec.name.localeCompare(b.spec.name);
  return {
    services: [...services].sort(byName).map((service) => {
      const s = service.spec;
      return defined({
        id: s.id,
        name: s.name,
        description: s.description,
        tags: s.tags,
        requires: s.requires,
        bindable: s.bindable,
        instances_retrievable: s.instancesRetrievable,
        bindings_retrievable: s.bindingsRetrievable,
        allow_context_updates: s.allowContextUpdates,
        metadata: s.metadata,
        dashboard_client: s.dashboardClient
          ? defined({
              id: s.dashboardClient.id,
              secret: s.dashboardClient.secret,
              redirect_uri: s.dashboardClient.redirectURI,
            })
          : undefined,
        plan_updateable: s.planUpdatable,
        plans: plans
          .filter((p) => p.spec.serviceId === s.id)
          .sort(byName)
          .map(osbPlan),
      });
    }),
  };
}
