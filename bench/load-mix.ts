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
import { describeWindow, mixRequests, PLAN_ID } from './mix.js';
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

    const mix = mixRequests([osb]);
    const setupStarted = performance.now();
    await mix.seed(CLIENTS, INSTANCES);
    console.log(
      `setup: ${INSTANCES} instances and ${INSTANCES} bindings in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`,
    );

    const before = cpuByRole();
    const window = await mix.window(CLIENTS, SECONDS);
    const cpu = cpuSince(before);
    if (window.errors.length > 0)
      throw new Error(`${window.errors.length} errors, the first: ${window.errors[0]}`);
    console.log(
      `\nLoad mix (provision : bind : GET binding : GET instance = 1 : 25 : 30 : 20), ${CLIENTS} clients, ${window.seconds.toFixed(0)} s, operator ready ${READY_AFTER_MS} ms after a change, ${os.cpus().length} cores; every operation succeeded`,
    );
    for (const line of describeWindow(window)) console.log(line);
    const cost = describeCpu(cpu, window.requests);
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
