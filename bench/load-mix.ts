/**
 * The original inter-operator's load test mix, as a platform sends it: provision : bind : GET
 * binding : GET instance = 1 : 25 : 30 : 20, from N clients (each one request at a time) for a
 * while, against the design document's PostgreSQL plan and the example operator (ready
 * `--ready-after-ms` after a change, 1000 as in `make run`). Binds are synchronous (the plan's
 * `asyncBinding` is false): each answers once the operator made the user's Secret. A provision is
 * followed by last_operation, polled every second as platforms do, until it says succeeded; those
 * polls are counted apart. The run fails on any error or operation that did not end `succeeded`.
 *
 * Before the timed window: `--instances` instances provisioned and one binding on each, so the
 * binds and GETs have targets. Prints requests per second (the mix's own requests), latency by
 * kind, and CPU per request of each process.
 *
 *   npm run build && node dist/bench/load-mix.js [--clients 20] [--seconds 60] [--instances 40]
 *     [--ready-after-ms 1000]
 *
 * BENCH_WORKER_ENV: extra `NAME=value` settings of the worker, space separated (e.g. to compare
 * poll intervals).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startExampleOperator } from '../examples/operator/operator.js';
import { BROKER_NODE_FLAGS } from '../src/config.js';
import { generatePayloadKey } from '../src/temporal/codec.js';
import { installCatalog } from '../dev/catalog.js';
import { startLocalEnvironment } from '../dev/local/environment.js';
import { freePort } from '../dev/local/processes.js';
import { cpuByRole, cpuSince, describeCpu } from './cpu.js';
import { osbHttp } from './osb-http.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '60' },
    instances: { type: 'string', default: '40' },
    'ready-after-ms': { type: 'string', default: '1000' },
  },
});
const CLIENTS = Number(args.clients);
const SECONDS = Number(args.seconds);
const INSTANCES = Number(args.instances);
const READY_AFTER_MS = Number(args['ready-after-ms']);
/** How often a platform polls last_operation after a provision. */
const PLATFORM_POLL_MS = 1000;
const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** The mix: provision : bind : GET binding : GET instance. */
const MIX = [
  ['provision', 1],
  ['bind', 25],
  ['get binding', 30],
  ['get instance', 20],
] as const;
type Kind = (typeof MIX)[number][0];
const MIX_TOTAL = MIX.reduce((sum, [, weight]) => sum + weight, 0);

const percentile = (values: number[], p: number) => {
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

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-bench-'));
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  const stops: (() => Promise<void>)[] = [() => env.stop()];
  try {
    await installCatalog(env.master, env.info.namespace, ['examples/postgresql']);
    const operator = await startExampleOperator({ clusters: env.clusters, readyAfterMs: READY_AFTER_MS });
    stops.push(() => operator.stop());

    // The inter-operator as the Helm chart deploys it: broker and worker in their own processes.
    const port = await freePort();
    const payloadKeys = generatePayloadKey();
    const workerEnv = Object.fromEntries(
      (process.env.BENCH_WORKER_ENV ?? '')
        .split(' ')
        .filter(Boolean)
        .map((pair) => pair.split('=', 2) as [string, string]),
    );
    for (const role of ['worker', 'broker']) {
      const child = spawn(
        process.execPath,
        [
          ...(role === 'broker' ? BROKER_NODE_FLAGS : []),
          ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
          fileURLToPath(new URL('../src/main.js', import.meta.url)),
          role,
        ],
        {
          env: {
            ...process.env,
            INTEROP_TEMPORAL_ADDRESS: env.info.temporal.address,
            INTEROP_MASTER_KUBECONFIG: env.info.clusters[0]!.kubeconfigPath,
            INTEROP_NAMESPACE: env.info.namespace,
            INTEROP_PAYLOAD_KEYS: payloadKeys,
            INTEROP_BROKER_USERNAME: 'bench',
            INTEROP_BROKER_PASSWORD: 'bench',
            INTEROP_PORT: String(port),
            INTEROP_METRICS_PORT: String(await freePort()),
            INTEROP_LOG_LEVEL: 'warn',
            INTEROP_SHUTDOWN_DELAY_SECONDS: '0',
            ...(role === 'worker' ? workerEnv : {}),
          },
          stdio: ['ignore', 'inherit', 'inherit'],
        },
      );
      stops.push(async () => {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      });
    }
    const client = osbHttp(port, 'bench:bench', CLIENTS + 10);
    stops.push(async () => client.close());
    const osb = client.request;
    for (;;) {
      try {
        const res = await osb('GET', '/v2/catalog');
        if (res.status === 200 && res.text.includes(PLAN_ID)) break;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }

    const instances: string[] = [];
    const bindings: [string, string][] = [];
    let polls = 0;
    const fail = (what: string, res: { status: number; text: string }) =>
      new Error(`${what} answered ${res.status}: ${res.text.slice(0, 300)}`);

    const provision = async (id: string) => {
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
        polls += 1;
        const last = await osb('GET', `/v2/service_instances/${id}/last_operation?operation=${operation}`);
        if (last.status !== 200) throw fail(`last_operation of ${id}`, last);
        const state = (JSON.parse(last.text) as { state: string }).state;
        if (state === 'succeeded') break;
        if (state !== 'in progress') throw new Error(`the provision of ${id} ended ${state}: ${last.text}`);
      }
      instances.push(id);
    };
    const bind = async (instanceId: string, bindingId: string) => {
      const res = await osb(
        'PUT',
        `/v2/service_instances/${instanceId}/service_bindings/${bindingId}?accepts_incomplete=true`,
        { service_id: SERVICE_ID, plan_id: PLAN_ID },
      );
      if (res.status !== 201) throw fail(`bind ${bindingId}`, res);
      const body = JSON.parse(res.text) as { credentials?: { password?: string } };
      if (!body.credentials?.password) throw new Error(`bind ${bindingId} answered without credentials`);
      bindings.push([instanceId, bindingId]);
    };
    const any = <T>(list: readonly T[]) => list[Math.floor(Math.random() * list.length)]!;

    // ---- the landscape before the window: instances, one binding each
    const setupStarted = performance.now();
    const seed = async (count: number, task: (i: number) => Promise<void>) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (next < count) await task(next++);
        }),
      );
    };
    await seed(INSTANCES, () => provision(randomUUID()));
    await seed(INSTANCES, (i) => bind(instances[i]!, randomUUID()));
    console.log(
      `setup: ${INSTANCES} instances and ${INSTANCES} bindings in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`,
    );

    // ---- the timed window
    const latencies: Record<Kind, number[]> = {
      provision: [],
      bind: [],
      'get binding': [],
      'get instance': [],
    };
    const errors: string[] = [];
    const pollsBefore = polls;
    const before = cpuByRole();
    const started = performance.now();
    const endAt = started + SECONDS * 1000;
    let requests = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < endAt && errors.length === 0) {
          const kind = pick();
          const t0 = performance.now();
          try {
            if (kind === 'provision') await provision(randomUUID());
            else if (kind === 'bind') await bind(any(instances), randomUUID());
            else if (kind === 'get binding') {
              const [instanceId, bindingId] = any(bindings);
              const res = await osb(
                'GET',
                `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`,
              );
              if (res.status !== 200) throw fail(`GET binding ${bindingId}`, res);
            } else {
              const res = await osb('GET', `/v2/service_instances/${any(instances)}`);
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
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSince(before);
    if (errors.length > 0) throw new Error(`${errors.length} errors, the first: ${errors[0]}`);

    const ms = (v: number) => `${v.toFixed(0)} ms`;
    console.log(
      `\nLoad mix (provision : bind : GET binding : GET instance = 1 : 25 : 30 : 20), ${CLIENTS} clients, ${seconds.toFixed(0)} s, operator ready ${READY_AFTER_MS} ms after a change, ${os.cpus().length} cores`,
    );
    console.log(
      `  ${(requests / seconds).toFixed(1)} requests/s (${requests} requests, 0 errors, every operation succeeded; plus ${polls - pollsBefore} last_operation polls of the provisions)`,
    );
    for (const [kind] of MIX) {
      const values = latencies[kind];
      console.log(
        `  ${kind.padEnd(13)} ${String(values.length).padStart(6)}   p50 ${ms(percentile(values, 50))}   p99 ${ms(percentile(values, 99))}${kind === 'provision' ? ' (to succeeded, polled every second)' : ''}`,
      );
    }
    const cost = describeCpu(cpu, requests);
    console.log(
      `  CPU per request ${cost.total.toFixed(1)} ms   (${cost.text}; bench includes the example operator)`,
    );
  } catch (err) {
    console.error('The benchmark failed:', err);
    throw err;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
