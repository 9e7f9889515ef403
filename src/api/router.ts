/**
 * The routes of the API: a method and a path pattern (`/v2/service_instances/:instance_id`) to a
 * handler, as one Koa middleware. Matching is find-my-way's radix tree, one lookup a request, with
 * no middleware composed per request.
 *
 * Paths match only as written: case-sensitively and with the fixed segments not percent-encoded
 * (find-my-way would take `/%762/catalog` for `/v2/catalog`), because the auth middleware decides
 * by the path as sent which requests are OSB requests; with or without a trailing slash.
 * Parameters are percent-decoded and never empty. A path that exists
 * with other methods answers 405 with `Allow` (OPTIONS: 200 with `Allow`), a method no route could
 * take 501, an unknown path goes on (404); these leave the body empty for the error handler to
 * write the OSB error.
 */
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { Middleware, ParameterizedContext } from 'koa';

/**
 * The Koa context of a route: the state the middleware before it left, the path parameters and
 * the route's pattern (for the access log and the request's span).
 */
export type RouteContext<S> = ParameterizedContext<S> & {
  params: Readonly<Record<string, string>>;
  routePath?: string;
};

export type RouteHandler<S> = (ctx: RouteContext<S>) => unknown;

/** Where routes are added: `get` also answers HEAD. */
export interface RouteTable<S> {
  get(path: string, handler: RouteHandler<S>): void;
  put(path: string, handler: RouteHandler<S>): void;
  patch(path: string, handler: RouteHandler<S>): void;
  post(path: string, handler: RouteHandler<S>): void;
  delete(path: string, handler: RouteHandler<S>): void;
}

/** Methods a route may use; any other is 501 wherever it is sent. */
const METHODS: readonly HTTPMethod[] = ['HEAD', 'OPTIONS', 'GET', 'PUT', 'PATCH', 'POST', 'DELETE'];

/** Longest path parameter matched (find-my-way's default is 100); OSB ids have no limit of their own. */
const MAX_PARAMETER_LENGTH = 4096;

export class Routes<S> implements RouteTable<S> {
  private readonly tree = FindMyWay({
    caseSensitive: true,
    ignoreTrailingSlash: true,
    maxParamLength: MAX_PARAMETER_LENGTH,
  });
  private readonly served: { method: HTTPMethod; path: string }[] = [];

  get(path: string, handler: RouteHandler<S>): void {
    this.add(['GET', 'HEAD'], path, handler);
  }

  put(path: string, handler: RouteHandler<S>): void {
    this.add(['PUT'], path, handler);
  }

  patch(path: string, handler: RouteHandler<S>): void {
    this.add(['PATCH'], path, handler);
  }

  post(path: string, handler: RouteHandler<S>): void {
    this.add(['POST'], path, handler);
  }

  delete(path: string, handler: RouteHandler<S>): void {
    this.add(['DELETE'], path, handler);
  }

  /** The same table with every path under `prefix`. */
  under(prefix: string): RouteTable<S> {
    return {
      get: (path, handler) => this.get(prefix + path, handler),
      put: (path, handler) => this.put(prefix + path, handler),
      patch: (path, handler) => this.patch(prefix + path, handler),
      post: (path, handler) => this.post(prefix + path, handler),
      delete: (path, handler) => this.delete(prefix + path, handler),
    };
  }

  /** Every route as `METHOD /path/:param`, in the order added (HEAD left out: it comes with GET). */
  list(): string[] {
    return this.served.filter((r) => r.method !== 'HEAD').map((r) => `${r.method} ${r.path}`);
  }

  /**
   * The pattern of the route that serves `path` with `method` (`/v2/service_instances/:instance_id`),
   * else of one that serves it with another method; undefined when no route has this path.
   */
  pattern(method: string, path: string): string | undefined {
    const found = this.find(method, path) ?? METHODS.map((m) => this.find(m, path)).find(Boolean);
    return found?.path;
  }

  /** The middleware that runs the matching route's handler. */
  middleware(): Middleware<S> {
    return (ctx, next) => {
      const found = this.find(ctx.method, ctx.path);
      if (found) {
        (ctx as RouteContext<S>).params = found.params;
        (ctx as RouteContext<S>).routePath = found.path;
        return found.handler(ctx as RouteContext<S>);
      }
      if (!METHODS.includes(ctx.method as HTTPMethod)) {
        ctx.status = 501;
        return;
      }
      const allowed = METHODS.filter((method) => this.find(method, ctx.path));
      if (allowed.length === 0) return next();
      ctx.set('Allow', allowed.join(', '));
      if (ctx.method === 'OPTIONS') ctx.body = '';
      else ctx.status = 405;
    };
  }

  /**
   * A parameter may carry a pattern its value must match, find-my-way's way
   * (`/:platform(^(?:cf|k8s|sm)$)/v2`, without a capturing group); the route is shown without it (`/:platform/v2`).
   */
  private add(methods: HTTPMethod[], path: string, handler: RouteHandler<S>): void {
    const shown = path.replace(/(:[A-Za-z_]+)\([^/]*\)/g, '$1');
    const route: Route<S> = { handler, path: shown, segments: shown.split('/') };
    this.tree.on(methods, path, () => undefined, route);
    for (const method of methods) this.served.push({ method, path: shown });
  }

  private find(
    method: string,
    path: string,
  ): { handler: RouteHandler<S>; path: string; params: Record<string, string> } | undefined {
    const found = this.tree.find(method as HTTPMethod, path);
    if (!found) return undefined;
    const route = found.store as Route<S>;
    if (!writtenAsIs(route.segments, path)) return undefined;
    const params = found.params as Record<string, string>;
    for (const key in params) if (params[key] === '') return undefined;
    return { handler: route.handler, path: route.path, params };
  }
}

interface Route<S> {
  readonly handler: RouteHandler<S>;
  /** The pattern as added, e.g. `/v2/service_instances/:instance_id`. */
  readonly path: string;
  /** The pattern split at `/`: fixed segments, and `:name` for parameters. */
  readonly segments: readonly string[];
}

/** Whether `path` (as sent, one trailing slash allowed) has the route's fixed segments as they are written. */
function writtenAsIs(segments: readonly string[], path: string): boolean {
  const sent = path.split('/');
  if (sent.length === segments.length + 1 && sent.at(-1) === '') sent.pop();
  if (sent.length !== segments.length) return false;
  return segments.every((segment, i) => segment.startsWith(':') || segment === sent[i]);
}
