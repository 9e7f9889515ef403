/** GET /v2/catalog */
import { checkCatalog, osbCatalog } from '../../osb/catalog.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import type { RouteDeps } from './shared.js';

export function catalogRoutes(router: RouteTable<OsbState>, { catalog, log }: RouteDeps): void {
  // Checked and serialised once per change of a service or plan (their uids and resourceVersions say so).
  let cached: { key: string; json: string } | undefined;

  /**
   * GET /v2/catalog: the services and plans of the SFService and SFPlan resources, but for those
   * that break the spec's catalog rules, which are left out and logged (platforms refuse a whole
   * catalog for one of them). Requests that name them are still served.
   */
  router.get('/catalog', (ctx) => {
    const services = catalog.services();
    const plans = catalog.plans();
    const key = [...services, ...plans]
      .map((o) => `${o.metadata.uid}@${o.metadata.resourceVersion}`)
      .join(',');
    if (cached?.key !== key) {
      const checked = checkCatalog(services, plans);
      for (const { kind, name, reason } of checked.problems) {
        log?.warn('left out of the catalog', { kind, name, reason });
      }
      cached = { key, json: JSON.stringify(osbCatalog(checked.services, checked.plans)) };
    }
    ctx.type = 'application/json';
    ctx.body = cached.json;
  });
}
