/** What the OSB routes share: their dependencies and small helpers over the koa context. */
import type { Logger } from '../../log.js';
import { badRequest } from '../../osb/errors.js';
import { catalogLookup, type CatalogLookup } from '../../osb/catalog.js';
import {
  parseAcceptsIncomplete,
  requiredQuery,
  requiredString,
  type JsonObject,
} from '../../osb/requests.js';
import { platformRoute, type PlatformRoute } from '../../osb/platforms.js';
import type { Reply } from '../../osb/responses.js';
import { resolvePlan } from '../../osb/rules.js';
import type { CatalogSource, ServiceBroker } from '../../osb/service-broker.js';
import type { SFPlan, SFService } from '../../resources/types.js';
import { readJsonBody } from '../body.js';
import type { OsbState } from '../middleware.js';
import type { RouteContext } from '../router.js';

/** The services the routes call. */
export interface RouteDeps {
  readonly broker: ServiceBroker;
  readonly catalog: CatalogSource;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
  /**
   * Whether bind answers carry the binding's `metadata` (`expires_at`, `renew_before`), as Service
   * Fabrik's `send_binding_metadata`; `GET` binding answers it either way. @default true
   */
  readonly sendBindingMetadata?: boolean;
  /** Where the routes say what the platform is not told (resources left out of the catalog). @default nowhere */
  readonly log?: Logger;
}

/** The koa context of an OSB route. */
export type OsbContext = RouteContext<OsbState>;

/** The lookup over the catalog as it is now (the source may change between requests). */
export const lookup = (catalog: CatalogSource): CatalogLookup =>
  catalogLookup(catalog.services(), catalog.plans());

/** A decoded path parameter; the router only matches non-empty segments. */
export function param(ctx: OsbContext, name: 'instance_id' | 'binding_id'): string {
  const value = ctx.params[name];
  if (value === undefined) throw new Error(`The route has no :${name} parameter.`);
  return value;
}

/**
 * Longest instance or binding id, in UTF-8 bytes, that an operation may be started for: the ids
 * name the operation's workflow (`binding/<instance id>/<binding id>`), which Temporal keeps to
 * 1,000 bytes. OSB ids are GUIDs in practice; reads of longer ids still answer (nothing is there).
 */
export const MAX_OPERATION_ID_BYTES = 255;

/**
 * A path id an operation is started for (provision, update, deprovision, bind, unbind).
 *
 * @throws OsbError 400 when it is longer than {@link MAX_OPERATION_ID_BYTES}.
 */
export function operationParam(ctx: OsbContext, name: 'instance_id' | 'binding_id'): string {
  const value = param(ctx, name);
  if (Buffer.byteLength(value) > MAX_OPERATION_ID_BYTES)
    throw badRequest(`${name} is longer than the broker accepts (${MAX_OPERATION_ID_BYTES} bytes of UTF-8).`);
  return value;
}

/**
 * The platform and region of the path the request came on (`/cf/region/eu10/v2/...`); undefined
 * for `/v2/...`.
 *
 * @throws OsbError 400 when the region is not a valid label value.
 */
export function platformOf(ctx: OsbContext): PlatformRoute | undefined {
  return platformRoute(ctx.params.platform, ctx.params.region);
}

/** Sets the status and the JSON body. */
export function send(ctx: OsbContext, reply: Reply): void {
  ctx.status = reply.status;
  ctx.body = reply.body;
}

/** What a request names first: whether it accepts an incomplete answer, and its service and plan. */
export interface PlanRequest {
  /** `accepts_incomplete` as the query says it. */
  readonly acceptsIncomplete: boolean;
  readonly serviceId: string;
  readonly planId: string;
  readonly service: SFService;
  readonly plan: SFPlan;
}

/**
 * The start of a provision or a bind, in the order the spec's clients expect: `accepts_incomplete`,
 * the JSON body, its `service_id` and `plan_id`, and the catalog's service and plan.
 *
 * @throws OsbError 400 for any of them missing or wrong; 413 for a body over the limit.
 */
export async function readPlanBody(
  ctx: OsbContext,
  deps: RouteDeps,
): Promise<PlanRequest & { readonly body: JsonObject }> {
  const acceptsIncomplete = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
  const body = await readJsonBody(ctx, deps.maxBodyBytes);
  const serviceId = requiredString(body.service_id, 'service_id');
  const planId = requiredString(body.plan_id, 'plan_id');
  return {
    acceptsIncomplete,
    body,
    serviceId,
    planId,
    ...resolvePlan(lookup(deps.catalog), serviceId, planId),
  };
}

/**
 * The start of a deprovision or an unbind: `accepts_incomplete`, the `service_id` and `plan_id`
 * of the query, and the catalog's service and plan.
 *
 * @throws OsbError 400 for any of them missing or wrong.
 */
export function readPlanQuery(ctx: OsbContext, deps: RouteDeps): PlanRequest {
  const acceptsIncomplete = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
  const serviceId = requiredQuery(ctx.query.service_id, 'service_id');
  const planId = requiredQuery(ctx.query.plan_id, 'plan_id');
  return { acceptsIncomplete, serviceId, planId, ...resolvePlan(lookup(deps.catalog), serviceId, planId) };
}
