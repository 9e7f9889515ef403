/**
 * Counts and times each OSB request by the route pattern it matched, its method and its status;
 * registered first, so it sees the answer the error handler settled on. The route is the pattern
 * (`/v2/service_instances/:instance_id`), never the ids in the path, so that the metrics keep one
 * series per route however many instances there are; a path no route serves is `unknown`.
 */
import type { Context, Next } from 'koa';
import { UNKNOWN_ROUTE, type OsbRequestRecorder } from '../metrics/recorders.js';
import { isOsbPath } from './middleware.js';

/** Methods kept as they are in the label; any other is `other`, so a client cannot add series. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE']);

export function requestMetrics(
  recorder: OsbRequestRecorder,
  routes: { pattern(method: string, path: string): string | undefined },
) {
  return (ctx: Context, next: Next): Promise<void> => {
    if (!isOsbPath(ctx.path)) return next();
    const started = performance.now();
    const record = () => {
      const method = KNOWN_METHODS.has(ctx.method) ? ctx.method : 'other';
      const route = routes.pattern(method, ctx.path) ?? UNKNOWN_ROUTE;
      recorder.request(route, method, ctx.status, (performance.now() - started) / 1000);
    };
    return next().finally(record);
  };
}
