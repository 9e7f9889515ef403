/**
 * The original inter-operator's load test mix, as a platform sends it: provision : bind : GET
 * binding : GET instance = 1 : 25 : 30 : 20, from N clients (each one request at a time), against
 * the design document's PostgreSQL plan. Binds are synchronous (the plan's `asyncBinding` is
 * false): each answers once the operator made the user's Secret. A provision is followed by
 * last_operation, polled every second as platforms do, until it says succeeded; those polls are
 * counted apart. Any error, or an operation that did not end `succeeded`, is reported.
 *
 * The requests of one client go to the brokers in turn, as a load balancer in front of several
 * brokers sends them.
 */
import { randomUUID } from 'node:crypto';
import type { OsbHttp } from './osb-http.js';

export const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
export const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** How often a platform polls last_operation after a provision. */
const PLATFORM_POLL_MS = 1000;
/** The mix: provision : bind : GET binding : GET instance. */
export const MIX = [
  ['provision', 1],
  ['bind', 25],
  ['get binding', 30],
  ['get instance', 20],
] as const;
export type Kind = (typeof MIX)[number][0];
const MIX_TOTAL = MIX.reduce((sum, [, weight]) => sum + weight, 0);

export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

/** Picks a kind of request by the mix's weights. */
function pick(): Kind {
  let r = Math.random() * MIX_TOTAL;
  for (const [kind, weight] of MIX) {
    if (r < weight) return kind;
    r -= weight;
  }
  return 'get instance';
}

type Request = OsbHttp['request'];

/** A landscape the mix runs on: its instances and bindings, and what the mix made. */
export interface MixLandscape {
  readonly instances: string[];
  readonly bindings: [string, string][];
  /** last_operation polls of the provisions so far. */
  polls: number;
  /** Provisions and binds asked for so far, each with its own id. */
  provisions: number;
  binds: number;
}

export interface MixWindow {
  readonly seconds: number;
  readonly requests: number;
  readonly latencies: Record<Kind, number[]>;
  readonly polls: number;
  readonly errors: string[];
}

/** The mix's requests, sent to `brokers` in turn. */
export function mixRequests(brokers: readonly Request[]) {
  let turn = 0;
  const osb: Request = (method, path, body) => brokers[turn++ % brokers.length]!(method, path, body);
  const fail = (what: string, res: { status: number; text: string }) =>
    new Error(`${what} answered ${res.status}: ${res.text.slice(0, 300)}`);
  const landscape: MixLandscape = { instances: [], bindings: [], polls: 0, provisions: 0, binds: 0 };

  const provision = async (id: string) => {
    landscape.provisions += 1;
    const res = await osb('PUT', `/v2/service_instances/${id}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
      organization_guid: 'org',
      space_guid: 'space',
      parameters: { foo: 'bar' },
    });
    if (res.status !== 202) throw fail(`provision of ${id}`, res);
    const operation = encodeURIComponent((JSON.parse(res.text) as { operation: string }).operation);
    for (;;) {
      await new Promise((r) => setTimeout(r, PLATFORM_POLL_MS));
      landscape.polls += 1;
      const last = await osb('GET', `/v2/service_instances/${id}/last_operation?operation=${operation}`);
      if (last.status !== 200) throw fail(`last_operation of ${id}`, last);
      const state = (JSON.parse(last.text) as { state: string }).state;
      if (state === 'succeeded') break;
      if (state !== 'in progress') throw new Error(`the provision of ${id} ended ${state}: ${last.text}`);
    }
    landscape.instances.push(id);
  };
  const bind = async (instanceId: string, bindingId: string) => {
    landscape.binds += 1;
    const res = await osb(
      'PUT',
      `/v2/service_instances/${instanceId}/service_bindings/${bindingId}?accepts_incomplete=true`,
      { service_id: SERVICE_ID, plan_id: PLAN_ID },
    );
    if (res.status !== 201) throw fail(`bind ${bindingId}`, res);
    const body = JSON.parse(res.text) as { credentials?: { password?: string } };
    if (!body.credentials?.password) throw new Error(`bind ${bindingId} answered without credentials`);
    landscape.bindings.push([instanceId, bindingId]);
  };
  const any = <T>(list: readonly T[]) => list[Math.floor(Math.random() * list.length)]!;

  /** `count` tasks run by `clients` clients. */
  const seed = async (clients: number, count: number, task: (i: number) => Promise<void>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < count) await task(next++);
      }),
    );
  };

  return {
    landscape,
    /** Provisions `count` instances and binds each once, so that binds and GETs have targets. */
    async seed(clients: number, count: number): Promise<void> {
      const from = landscape.instances.length;
      await seed(clients, count, () => provision(randomUUID()));
      await seed(clients, count, (i) => bind(landscape.instances[from + i]!, randomUUID()));
    },
    /** Runs the mix from `clients` clients for `seconds`; stops at the first error. */
    async window(clients: number, seconds: number): Promise<MixWindow> {
      const latencies: Record<Kind, number[]> = {
        provision: [],
        bind: [],
        'get binding': [],
        'get instance': [],
      };
      const errors: string[] = [];
      const pollsBefore = landscape.polls;
      const started = performance.now();
      const endAt = started + seconds * 1000;
      let requests = 0;
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (performance.now() < endAt && errors.length === 0) {
            const kind = pick();
            const t0 = performance.now();
            try {
              if (kind === 'provision') await provision(randomUUID());
              else if (kind === 'bind') await bind(any(landscape.instances), randomUUID());
              else if (kind === 'get binding') {
                const [instanceId, bindingId] = any(landscape.bindings);
                const res = await osb(
                  'GET',
                  `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`,
                );
                if (res.status !== 200) throw fail(`GET binding ${bindingId}`, res);
              } else {
                const res = await osb('GET', `/v2/service_instances/${any(landscape.instances)}`);
                if (res.status !== 200) throw fail('GET instance', res);
              }
              latencies[kind].push(performance.now() - t0);
              requests += 1;
            } catch (err) {
              errors.push(`${kind}: ${String(err)}`);
            }
          }
        }),
      );
      return {
        seconds: (performance.now() - started) / 1000,
        requests,
        latencies,
        polls: landscape.polls - pollsBefore,
        errors,
      };
    },
  };
}

/** The window's lines: requests per second, latency by kind. */
export function describeWindow(window: MixWindow): string[] {
  const ms = (v: number) => `${v.toFixed(0)} ms`;
  return [
    `  ${(window.requests / window.seconds).toFixed(1)} requests/s (${window.requests} requests, ${window.errors.length} errors; plus ${window.polls} last_operation polls of the provisions)`,
    ...MIX.map(([kind]) => {
      const values = window.latencies[kind];
      return `  ${kind.padEnd(13)} ${String(values.length).padStart(6)}   p50 ${ms(percentile(values, 50))}   p99 ${ms(percentile(values, 99))}${kind === 'provision' ? ' (to succeeded, polled every second)' : ''}`;
    }),
  ];
}
