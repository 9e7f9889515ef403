/** What the OSB routes share: their dependencies and small helpers over the koa context. */
import type { Logger } from '../../log.js';
import { catalogLookup, type CatalogLookup } from '../../osb/catalog.js';
import type { Reply } from '../../osb/responses.js';
import type { CatalogSource, ServiceBroker } from '../../osb/service-broker.js';
import type { OsbState } from '../middleware.js';
import type { RouteContext } from '../router.js';

/** The services the routes call. */
export interface RouteDeps {
  readonly broker: ServiceBroker;
  readonly catalog: CatalogSource;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
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

/** Sets the status and the JSON body. */
export function send(ctx: OsbContext, reply: Reply): void {
  ctx.status = reply.status;
  ctx.body = reply.body;
}
