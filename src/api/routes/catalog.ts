/** GET /v2/catalog */
import { osbCatalog } from '../../osb/catalog.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import type { RouteDeps } from './shared.js';

export function catalogRoutes(router: RouteTable<OsbState>, { catalog }: RouteDeps): void {
  // Serialised once per change of a service or plan (their uids and resourceVersions say so).
  let cached: { key: string; json: string } | undefined;

  /** GET /v2/catalog: the services and plans of the SFService and SFPlan resources. */
  router.get('/catalog', (ctx) => {
    const services = catalog.services();
    const plans = catalog.plans();
    const key = [...services, ...plans]
      .map((o) => `${o.metadata.uid}@${o.metadata.resourceVersion}`)
      .join(',');
    if (cached?.key !== key) cached = { key, json: JSON.stringify(osbCatalog(services, plans)) };
    ctx.type = 'application/json';
    ctx.body = cached.json;
  });
}
