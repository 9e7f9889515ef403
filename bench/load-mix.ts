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
import os from 'node:os';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startExampleOperator } from '../examples/operator/operator.js';
import { BROKER_NODE_FLAGS } from '../src/config.js';
import { installCatalog } from '../dev/catalog.js';
import { startLocalEnvironment } from '../dev/local/environment.js';
import { freePort } from '../dev/local/processes.js';
import { cpuByRole, cpuSince, describeCpu } from './cpu.js';
import { describeWindow, mixRequests, PLAN_ID } from './mix.js';
import { runBench, startBenchProcesses } from './processes.js';
import { apiserverCounters, describeApiserver } from './apiserver-figures.js';
import { describeWorker, threadTicks, workerCounters } from './worker-figures.js';

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

await runBench(async (workDir, stops) => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  stops.push(() => env.stop());
  await installCatalog(env.master, env.info.namespace, ['examples/postgresql']);
  const operator = await startExampleOperator({ clusters: env.clusters, readyAfterMs: READY_AFTER_MS });
  stops.push(() => operator.stop());

  // The inter-operator as the Helm chart deploys it: broker and worker in their own processes.
  const workerEnv = Object.fromEntries(
    (process.env.BENCH_WORKER_ENV ?? '')
      .split(' ')
      .filter(Boolean)
      .map((pair) => pair.split('=', 2) as [string, string]),
  );
  const benchNodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const workerMetricsPort = await freePort();
  const { osb, processes } = await startBenchProcesses({
    temporalAddress: env.info.temporal.address,
    masterKubeconfig: env.info.clusters[0]!.kubeconfigPath,
    plan: PLAN_ID,
    maxSockets: CLIENTS + 10,
    nodeArgs: (role) => [...(role === 'broker' ? BROKER_NODE_FLAGS : []), ...benchNodeArgs],
    env: { INTEROP_NAMESPACE: env.info.namespace },
    roleEnv: (role) =>
      role === 'worker' ? { INTEROP_METRICS_PORT: String(workerMetricsPort), ...workerEnv } : {},
    stops,
  });

  const mix = mixRequests([osb]);
  const setupStarted = performance.now();
  await mix.seed(CLIENTS, INSTANCES);
  console.log(
    `setup: ${INSTANCES} instances and ${INSTANCES} bindings in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`,
  );

  const workerPid = processes.worker.pid!;
  const worker = async () => ({
    counters: await workerCounters(workerMetricsPort),
    threads: threadTicks(workerPid),
  });
  const workerBefore = await worker();
  const apiserverBefore = await apiserverCounters(env.master.kubeConfig);
  const before = cpuByRole();
  const window = await mix.window(CLIENTS, SECONDS);
  const cpu = cpuSince(before);
  const workerAfter = await worker();
  const apiserverAfter = await apiserverCounters(env.master.kubeConfig);
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
  const operations = window.latencies.provision.length + window.latencies.bind.length;
  for (const line of describeWorker(workerPid, workerBefore, workerAfter, operations, 'operation'))
    console.log(line);
  for (const line of describeApiserver(apiserverBefore, apiserverAfter, operations, 'operation'))
    console.log(line);
  console.log(
    `  (an operation: one of the window's ${window.latencies.provision.length} provisions and ${window.latencies.bind.length} binds)`,
  );
});
