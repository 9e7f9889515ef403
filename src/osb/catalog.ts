/**
 * The OSB catalog (`GET /v2/catalog`) from SFService and SFPlan resources, and the lookup of the
 * service and plan a request names. Pure: plain objects in, plain JSON out, in a stable order.
 */
import type { SFPlan, SFService } from '../resources/types.js';

/** A JSON object without the keys whose value is `undefined`, in the order they were written. */
function defined<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Code-point order, so the catalog does not depend on the process's locale. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byNameThenId = <T extends { spec: { name: string; id: string } }>(a: T, b: T): number =>
  compare(a.spec.name, b.spec.name) || compare(a.spec.id, b.spec.id);

/** An OSB plan object (`services[].plans[]`). */
export interface OsbPlan {
  id: string;
  name: string;
  description: string;
  metadata?: Record<string, unknown>;
  free?: boolean;
  bindable?: boolean;
  plan_updateable?: boolean;
  schemas?: Record<string, unknown>;
  maintenance_info?: { version: string; description?: string };
  maximum_polling_duration?: number;
}

/** An OSB service offering object (`services[]`). */
export interface OsbService {
  id: string;
  name: string;
  description: string;
  tags?: string[];
  requires?: string[];
  bindable: boolean;
  instances_retrievable?: boolean;
  bindings_retrievable?: boolean;
  allow_context_updates?: boolean;
  metadata?: Record<string, unknown>;
  dashboard_client?: { id?: string; secret?: string; redirect_uri?: string };
  plan_updateable?: boolean;
  plans: OsbPlan[];
}

/** The body of `GET /v2/catalog`. */
export interface OsbCatalog {
  services: OsbService[];
}

/** One OSB plan object; fields the SFPlan leaves unset are omitted. */
export function osbPlan(plan: SFPlan): OsbPlan {
  const s = plan.spec;
  return defined({
    id: s.id,
    name: s.name,
    description: s.description,
    metadata: s.metadata,
    free: s.free,
    bindable: s.bindable,
    plan_updateable: s.planUpdatable,
    schemas: s.schemas as Record<string, unknown> | undefined,
    maintenance_info: s.maintenance_info
      ? defined({ version: s.maintenance_info.version, description: s.maintenance_info.description })
      : undefined,
    maximum_polling_duration: s.maximum_polling_duration,
  }) as OsbPlan;
}

/** One OSB service offering object with the given plans; fields left unset are omitted. */
export function osbService(service: SFService, plans: readonly SFPlan[]): OsbService {
  const s = service.spec;
  const client = s.dashboardClient
    ? defined({
        id: s.dashboardClient.id,
        secret: s.dashboardClient.secret,
        redirect_uri: s.dashboardClient.redirectURI,
      })
    : undefined;
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
    dashboard_client: client && Object.keys(client).length > 0 ? client : undefined,
    plan_updateable: s.planUpdatable,
    plans: plans.map(osbPlan),
  }) as OsbService;
}

/**
 * The catalog: services sorted by name (then id), each with the plans whose `spec.serviceId` is its
 * id, sorted by name (then id). A service without plans is left out, because the spec requires at
 * least one plan per offering and platforms reject a catalog that breaks this; plans of unknown
 * services are left out too.
 */
export function osbCatalog(services: readonly SFService[], plans: readonly SFPlan[]): OsbCatalog {
  const plansOf = new Map<string, SFPlan[]>();
  for (const plan of plans) {
    const list = plansOf.get(plan.spec.serviceId) ?? [];
    list.push(plan);
    plansOf.set(plan.spec.serviceId, list);
  }
  return {
    services: [...services].sort(byNameThenId).flatMap((service) => {
      const own = plansOf.get(service.spec.id);
      return own && own.length > 0 ? [osbService(service, [...own].sort(byNameThenId))] : [];
    }),
  };
}

/** The service and plan of an OSB id, as a request needs them. */
export interface CatalogLookup {
  service(serviceId: string): SFService | undefined;
  plan(planId: string): SFPlan | undefined;
}

/**
 * A lookup by OSB id over one snapshot of the catalog. When two resources claim the same id, the
 * first in catalog order (name, then id) wins, so the answer does not depend on list order.
 */
export function catalogLookup(services: readonly SFService[], plans: readonly SFPlan[]): CatalogLookup {
  const serviceById = new Map<string, SFService>();
  for (const s of [...services].sort(byNameThenId))
    if (!serviceById.has(s.spec.id)) serviceById.set(s.spec.id, s);
  const planById = new Map<string, SFPlan>();
  for (const p of [...plans].sort(byNameThenId)) if (!planById.has(p.spec.id)) planById.set(p.spec.id, p);
  return {
    service: (serviceId) => serviceById.get(serviceId),
    plan: (planId) => planById.get(planId),
  };
}
