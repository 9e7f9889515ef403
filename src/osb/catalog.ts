/**
 * The OSB catalog (`GET /v2/catalog`) from SFService and SFPlan resources, and the lookup of the
 * service and plan a request names. Pure: plain objects in, plain JSON out, in a stable order.
 */
import type { PlanSchemas, SFPlan, SFService } from '../resources/types.js';
import { bindingLifetimeProblem } from './binding-lifetime.js';
import { compileSchema, parameterSchema, SCHEMA_ACTIONS, SchemaError, withDeclaredDraft } from './schemas.js';

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
  binding_rotatable?: boolean;
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

/**
 * One OSB plan object; fields the SFPlan leaves unset are omitted. `binding_rotatable` is `true`
 * for a plan with `bindingRotatable` whose bindings can be made (its `bindable`, else its service's,
 * `serviceBindable`), and absent otherwise.
 */
export function osbPlan(plan: SFPlan, serviceBindable = false): OsbPlan {
  const s = plan.spec;
  const rotatable = s.bindingRotatable === true && (s.bindable ?? serviceBindable);
  return defined({
    id: s.id,
    name: s.name,
    description: s.description,
    metadata: s.metadata,
    free: s.free,
    bindable: s.bindable,
    plan_updateable: s.planUpdatable,
    binding_rotatable: rotatable ? true : undefined,
    schemas: s.schemas ? declaredDrafts(s.schemas) : undefined,
    maintenance_info: s.maintenance_info
      ? defined({ version: s.maintenance_info.version, description: s.maintenance_info.description })
      : undefined,
    maximum_polling_duration: s.maximum_polling_duration,
  }) as OsbPlan;
}

/** The plan's schemas, each parameter schema with its `$schema` (the spec requires one). */
function declaredDrafts(schemas: PlanSchemas): Record<string, unknown> {
  const declared = (parameters?: Record<string, unknown>) =>
    parameters ? { parameters: withDeclaredDraft(parameters) } : undefined;
  const withParameters = <T extends { parameters?: Record<string, unknown> }>(action?: T) =>
    action ? { ...action, ...declared(action.parameters) } : undefined;
  const instance = schemas.service_instance;
  const binding = schemas.service_binding;
  return defined({
    ...schemas,
    service_instance: instance
      ? defined({
          ...instance,
          create: withParameters(instance.create),
          update: withParameters(instance.update),
        })
      : undefined,
    service_binding: binding ? defined({ ...binding, create: withParameters(binding.create) }) : undefined,
  });
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
    plans: plans.map((plan) => osbPlan(plan, s.bindable)),
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

/** A service or plan left out of the catalog, and why. */
export interface CatalogProblem {
  readonly kind: 'SFService' | 'SFPlan';
  /** The resource's `metadata.name`. */
  readonly name: string;
  readonly reason: string;
}

/** The values of `requires` the OSB spec defines. */
const REQUIRES = new Set(['syslog_drain', 'route_forwarding', 'volume_mount']);
/** SemVer 2.0.0, as semver.org gives it. */
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;
/** Largest parameter schema the spec allows. */
const MAX_SCHEMA_BYTES = 64 * 1024;

const blank = (value: unknown): boolean => typeof value !== 'string' || value.trim() === '';

/** The first `$ref` in `schema` that points outside it, if any. */
function externalRef(schema: unknown): string | undefined {
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const found = externalRef(item);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (!schema || typeof schema !== 'object') return undefined;
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' && typeof value === 'string' && !value.startsWith('#')) return value;
    const found = externalRef(value);
    if (found !== undefined) return found;
  }
  return undefined;
}

function serviceProblem(service: SFService): string | undefined {
  const s = service.spec;
  if (blank(s.id) || blank(s.name) || blank(s.description))
    return 'it needs a non-empty id, name and description';
  if (typeof s.bindable !== 'boolean') return 'bindable must be true or false';
  const unknown = (s.requires ?? []).find((r) => !REQUIRES.has(r));
  if (unknown !== undefined) {
    return `requires ${JSON.stringify(unknown)}, which is not one of syslog_drain, route_forwarding, volume_mount`;
  }
  return undefined;
}

function planProblem(plan: SFPlan): string | undefined {
  const s = plan.spec;
  if (blank(s.id) || blank(s.name) || blank(s.description))
    return 'it needs a non-empty id, name and description';
  for (const template of s.templates ?? []) {
    // As in the original: a chart renders the objects of a provision or a bind, nothing else.
    if (String(template.type).toLowerCase() !== 'helm') continue;
    if (template.action !== 'provision' && template.action !== 'bind')
      return `its ${template.action} template is of type helm, which only provision and bind templates may be`;
    if (blank(template.url))
      return `its ${template.action} template is of type helm and has no url (its chart)`;
  }
  const version = s.maintenance_info?.version;
  if (version !== undefined && !SEMVER.test(version)) {
    return `maintenance_info.version ${JSON.stringify(version)} is not a SemVer 2.0 version`;
  }
  const lifetime = bindingLifetimeProblem(plan);
  if (lifetime !== undefined) return lifetime;
  for (const action of SCHEMA_ACTIONS) {
    const schema = parameterSchema(plan, action);
    if (!schema) continue;
    const where = `the ${action} parameter schema`;
    const bytes = Buffer.byteLength(JSON.stringify(schema));
    if (bytes > MAX_SCHEMA_BYTES)
      return `${where} has ${bytes} bytes; at most ${MAX_SCHEMA_BYTES} are allowed`;
    const ref = externalRef(schema);
    if (ref !== undefined)
      return `${where} refers outside itself ($ref ${JSON.stringify(ref.slice(0, 100))})`;
    try {
      compileSchema(schema);
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
      return `${where} cannot be used: ${err.message}`;
    }
  }
  return undefined;
}

/**
 * The services and plans a catalog may show, by the spec's rules for a catalog, and the problems
 * of the rest, which are left out (platforms refuse a whole catalog that breaks one rule, so one
 * bad resource must not take the others with it):
 *
 * - a service needs a non-empty id, name and description, a boolean `bindable`, and only the
 *   `requires` values the spec defines; a plan a non-empty id, name and description, a SemVer
 *   `maintenance_info.version`, parameter schemas of at most 64 kB that refer to nothing
 *   outside themselves and compile, `helm` templates only for provision and bind, with a url,
 *   and a `bindingLifetime` of valid durations whose `renewBefore` is shorter than `expiresAfter`;
 * - ids are unique among all services and plans, service names among services, plan names within
 *   their service: of resources that collide, the first in catalog order (name, then id) stays;
 * - a plan needs its service in the catalog, and a service at least one plan.
 *
 * A service or plan being deleted (held by its finalizer while instances remain) is no longer
 * offered; it is left out silently, without a problem, as it breaks no rule.
 */
export function checkCatalog(
  services: readonly SFService[],
  plans: readonly SFPlan[],
): { services: SFService[]; plans: SFPlan[]; problems: CatalogProblem[] } {
  const problems: CatalogProblem[] = [];
  const offered = (o: SFService | SFPlan) => !o.metadata.deletionTimestamp;
  const ids = new Map<string, string>();
  const leaveOut = (kind: CatalogProblem['kind'], o: SFService | SFPlan, reason: string) => {
    problems.push({ kind, name: o.metadata.name, reason });
  };
  const serviceNames = new Map<string, string>();
  const keptServices = new Map<string, SFService>();
  for (const service of services.filter(offered).sort(byNameThenId)) {
    const problem = serviceProblem(service);
    const { id, name } = service.spec;
    if (problem) leaveOut('SFService', service, problem);
    else if (ids.has(id)) leaveOut('SFService', service, `its id ${id} is taken by ${ids.get(id)}`);
    else if (serviceNames.has(name)) {
      leaveOut('SFService', service, `its name ${name} is taken by ${serviceNames.get(name)}`);
    } else {
      ids.set(id, `SFService ${service.metadata.name}`);
      serviceNames.set(name, `SFService ${service.metadata.name}`);
      keptServices.set(id, service);
    }
  }
  const planNames = new Map<string, string>();
  const keptPlans: SFPlan[] = [];
  for (const plan of plans.filter(offered).sort(byNameThenId)) {
    const problem = planProblem(plan);
    const { id, name, serviceId } = plan.spec;
    const nameKey = `${serviceId}/${name}`;
    if (problem) leaveOut('SFPlan', plan, problem);
    else if (!keptServices.has(serviceId)) {
      leaveOut('SFPlan', plan, `its service ${serviceId} is not in the catalog`);
    } else if (ids.has(id)) leaveOut('SFPlan', plan, `its id ${id} is taken by ${ids.get(id)}`);
    else if (planNames.has(nameKey)) {
      leaveOut('SFPlan', plan, `its name ${name} is taken in its service by ${planNames.get(nameKey)}`);
    } else {
      ids.set(id, `SFPlan ${plan.metadata.name}`);
      planNames.set(nameKey, `SFPlan ${plan.metadata.name}`);
      keptPlans.push(plan);
    }
  }
  const withPlans = new Set(keptPlans.map((p) => p.spec.serviceId));
  const kept = [...keptServices.values()].filter((service) => {
    if (withPlans.has(service.spec.id)) return true;
    leaveOut('SFService', service, 'it has no plan in the catalog');
    return false;
  });
  return { services: kept, plans: keptPlans, problems };
}
