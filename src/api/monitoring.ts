/**
 * The operations port of a process (broker, worker, or both): Prometheus metrics and the
 * Kubernetes probes, apart from the OSB API so that neither its credentials nor its load balancer
 * see them.
 *
 * - GET /metrics: the Prometheus text; with tokens configured, only for `Authorization: Bearer
 *   <token>` with one of them (401 otherwise).
 * - GET /livez: 200 while the process answers at all.
 * - GET /readyz: 200 when the process should get work, 503 otherwise (starting, draining).
 */
import { hash, timingSafeEqual } from 'node:crypto';
import Koa from 'koa';
import { silentLogger, type Logger } from '../log.js';

/** Metrics as exposed to Prometheus. */
export interface Exposition {
  readonly contentType: string;
  readonly text: string;
}

export interface MonitoringOptions {
  /** The current metrics, read on every scrape. */
  readonly metrics: () => Promise<Exposition>;
  /** Whether the process should get work now; read on every probe. */
  readonly ready: () => boolean;
  /**
   * The bearer tokens /metrics accepts, read on every scrape (several while one is rotated); open
   * when unset. Empty tokens never match.
   */
  readonly tokens?: () => readonly string[];
  /** Where a scrape that failed is logged. @default a logger that drops everything */
  readonly log?: Logger;
}

/** SHA-256 of a text, as bytes: digests all have one length, as `timingSafeEqual` needs. */
const digest = (text: string): Buffer => hash('sha256', text, 'buffer');

/**
 * Whether an `Authorization` header carries one of `tokens`, compared in constant time: every
 * token is compared, whatever the others gave.
 */
export function bearerMatches(header: string, tokens: string | readonly string[]): boolean {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  const given = digest(match?.[1] ?? '');
  let matched = 0;
  for (const token of typeof tokens === 'string' ? [tokens] : tokens)
    matched |= Number(token !== '') & Number(timingSafeEqual(given, digest(token)));
  return matched === 1 && match !== null;
}

/** The operations port as a Koa app: serve it with `app.listen()`, or test it with supertest. */
export function createMonitoringApp(options: MonitoringOptions): Koa {
  const log = options.log ?? silentLogger;
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      return;
    }
    switch (ctx.path) {
      case '/livez':
        ctx.body = { status: 'ok' };
        return;
      case '/readyz': {
        const ready = options.ready();
        ctx.status = ready ? 200 : 503;
        ctx.body = { status: ready ? 'ready' : 'not ready' };
        return;
      }
      case '/metrics': {
        if (options.tokens && !bearerMatches(ctx.get('Authorization'), options.tokens())) {
          ctx.status = 401;
          ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
          ctx.body = { error: 'Unauthorized', description: 'The metrics need a bearer token.' };
          return;
        }
        try {
          const { contentType, text } = await options.metrics();
          ctx.type = contentType;
          ctx.body = text;
        } catch (err) {
          log.error('metrics scrape failed', { error: err instanceof Error ? err.message : String(err) });
          ctx.status = 500;
          ctx.body = { error: 'InternalError', description: 'The metrics could not be collected.' };
        }
        return;
      }
      default:
        ctx.status = 404;
        ctx.body = { error: 'NotFound', description: `There is no route ${ctx.path}.` };
    }
  });
  return app;
}
