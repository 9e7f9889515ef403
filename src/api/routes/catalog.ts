/** GET /v2/catalog (and /<platform>/v2/catalog, /<platform>/region/<region>/v2/catalog) */
import { checkCatalog, osbCatalog } from '../../osb/catalog.js';
import { catalogForPlatform } from '../../osb/platforms.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import { platformOf, type RouteDeps } from './shared.js';

export function catalogRoutes(router: RouteTable<OsbState>, { catalog, log }: RouteDeps): void {
  // Checked and serialised once per change of a service or plan (their uids and resourceVersions
  // say so), for each platform.
  const cached = new Map<string, { key: string; json: string }>();
  let logged: string | undefined;

  /**
   * GET /v2/catalog: the services and plans of the SFService and SFPlan resources, but for those
   * that break the spec's catalog rules, which are left out and logged (platforms refuse a whole
   * catalog for one of them). Requests that name them are still served. Under a platform's prefix,
   * only the services and plans offered on it (`supported_platform`).
   */
  router.get('/catalog', (ctx) => {
    const platform = platformOf(ctx)?.platform;
    const services = catalog.services();
    const plans = catalog.plans();
    const key = [...services, ...plans]
      .map((o) => `${o.metadata.uid}@${o.metadata.resourceVersion}`)
      .join(',');
    const slot = platform ?? '';
    let entry = cached.get(slot);
    if (entry?.key !== key) {
      const checked = checkCatalog(services, plans);
      // Once per change, whichever platform asks first.
      if (logged !== key) {
        logged = key;
        for (const { kind, name, reason } of checked.problems) {
          log?.warn('left out of the catalog', { kind, name, reason });
        }
      }
      const shown = catalogForPlatform(checked.services, checked.plans, platform);
      entry = { key, json: JSON.stringify(osbCatalog(shown.services, shown.plans)) };
      cached.set(slot, entry);
    }
    ctx.type = 'application/json';
    ctx.body = entry.json;
  });
}
