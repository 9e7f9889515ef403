/**
 * Scale out: the original's load mix (bench/mix.ts) against one broker and one worker, then
 * against two brokers and two workers, in the same run on the same servers (the production
 * Temporal server by default), with one of the two workers killed (SIGKILL) halfway through the
 * second window. Each phase has a task queue of its own; after each window the bench asks
 * Temporal's visibility how many provision and bind workflows ran on that queue and how they
 * ended: one workflow per provision and per bind the clients asked for (no operation ran twice,
 * none was lost), each completed. The run fails on any error.
 *
 *   npm run build && node dist/bench/scale-out.js [--clients 20] [--seconds 60] [--instances 20]
 *     [--temporal server|dev] [--ready-after-ms 1000]
 */
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startExampleOperator } from '../examples/operator/operator.js';
import { BROKER_NODE_FLAGS } from '../src/config.js';
import { generatePayloadKey } from '../src/temporal/codec.js';
import { WORKFLOW_TYPES } from '../src/workflows/messages.js';
import { installCatalog } from '../dev/catalog.js';
import { startLocalEnvironment, type LocalEnvironment } from '../dev/local/environment.js';
import { freePort } from '../dev/local/processes.js';
import type { TemporalKind } from '../dev/settings.js';
import { cpuByRole, cpuSince, describeCpu } from './cpu.js';
import { describeWindow, mixRequests, PLAN_ID, type MixWindow } from './mix.js';
import { osbHttp, type OsbHttp } from './osb-http.js';
import { runBench, spawnRole, untilCatalogHolds } from './processes.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '60' },
    instances: { type: 'string', default: '20' },
    temporal: { type: 'string', default: 'server' },
    'ready-after-ms': { type: 'string', default: '1000' },
  },
});
const CLIENTS = Number(args.clients);
const SECONDS = Number(args.seconds);
const INSTANCES = Number(args.instances);
const TEMPORAL = args.temporal as TemporalKind;
const READY_AFTER_MS = Number(args['ready-after-ms']);

interface Phase {
  readonly brokers: number;
  readonly workers: number;
  readonly killWorkerHalfway: boolean;
}

interface PhaseResult {
  readonly window: MixWindow;
  readonly cpuText: string;
  readonly cpuPerRequest: number;
  readonly ran: { provisions: number; binds: number; notCompleted: number };
  readonly asked: { provisions: number; binds: number };
}

/** Workflows of `type` on `taskQueue` (with `extra` conditions) as visibility counts them. */
async function countWorkflows(client: Client, taskQueue: string, extra = ''): Promise<number> {
  const { count } = await client.workflowService.countWorkflowExecutions({
    namespace: 'default',
    query: `TaskQueue = '${taskQueue}'${extra}`,
  });
  return Number(count);
}

/** Visibility is eventually consistent: the count once two reads a second apart agree. */
async function settledCount(client: Client, taskQueue: string, extra: string): Promise<number> {
  let last = -1;
  for (;;) {
    const now = await countWorkflows(client, taskQueue, extra);
    if (now === last) return now;
    last = now;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function runPhase(env: LocalEnvironment, temporal: Client, phase: Phase): Promise<PhaseResult> {
  const taskQueue = `scale-out-${phase.brokers}-${phase.workers}-${Date.now()}`;
  const payloadKeys = generatePayloadKey();
  const stops: (() => Promise<void>)[] = [];
  const settings = {
    temporalAddress: env.info.temporal.address,
    masterKubeconfig: env.info.clusters[0]!.kubeconfigPath,
    payloadKeys,
    env: { INTEROP_NAMESPACE: env.info.namespace, INTEROP_TASK_QUEUE: taskQueue },
  };
  try {
    const workers: ChildProcess[] = [];
    for (let i = 0; i < phase.workers; i++)
      workers.push(await spawnRole('worker', { ...settings, port: await freePort() }, stops));
    const clients: OsbHttp[] = [];
    for (let i = 0; i < phase.brokers; i++) {
      const port = await freePort();
      await spawnRole('broker', { ...settings, port, nodeArgs: BROKER_NODE_FLAGS }, stops);
      const client = osbHttp(port, 'bench:bench', CLIENTS + 10);
      stops.push(async () => client.close());
      clients.push(client);
      await untilCatalogHolds(client.request, PLAN_ID);
    }
    const mix = mixRequests(clients.map((c) => c.request));
    await mix.seed(CLIENTS, INSTANCES);
    const before = cpuByRole();
    const killer = phase.killWorkerHalfway
      ? setTimeout(() => workers[0]!.kill('SIGKILL'), (SECONDS * 1000) / 2)
      : undefined;
    const window = await mix.window(CLIENTS, SECONDS);
    clearTimeout(killer);
    const cpu = cpuSince(before);
    const cost = describeCpu(cpu, window.requests);
    const provisions = await settledCount(
      temporal,
      taskQueue,
      ` AND WorkflowType = '${WORKFLOW_TYPES.provision}'`,
    );
    const binds = await settledCount(temporal, taskQueue, ` AND WorkflowType = '${WORKFLOW_TYPES.bind}'`);
    // The queue also holds the landscape's cluster health workflow, which runs as long as the workers.
    const notCompleted = await settledCount(
      temporal,
      taskQueue,
      ` AND WorkflowType IN ('${WORKFLOW_TYPES.provision}', '${WORKFLOW_TYPES.bind}') AND ExecutionStatus != 'Completed'`,
    );
    return {
      window,
      cpuText: cost.text,
      cpuPerRequest: cost.total,
      ran: { provisions, binds, notCompleted },
      asked: { provisions: mix.landscape.provisions, binds: mix.landscape.binds },
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

await runBench(async (workDir, stops) => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const env = await startLocalEnvironment({ workDir, sisters: 0, temporalKind: TEMPORAL });
  stops.push(() => env.stop());
  await installCatalog(env.master, env.info.namespace, ['examples/postgresql']);
  const operator = await startExampleOperator({ clusters: env.clusters, readyAfterMs: READY_AFTER_MS });
  stops.push(() => operator.stop());
  const connection = await Connection.connect({ address: env.info.temporal.address });
  stops.push(() => connection.close());
  const temporal = new Client({ connection, namespace: env.info.temporal.namespace });

  const phases: [string, Phase][] = [
    ['1 broker, 1 worker', { brokers: 1, workers: 1, killWorkerHalfway: false }],
    ['2 brokers, 2 workers, one worker killed halfway', { brokers: 2, workers: 2, killWorkerHalfway: true }],
  ];
  const results: PhaseResult[] = [];
  console.log(
    `Scale out: the load mix, ${CLIENTS} clients, ${SECONDS} s a window, ${INSTANCES} instances seeded a phase, Temporal: ${TEMPORAL}, operator ready ${READY_AFTER_MS} ms after a change, ${os.cpus().length} cores`,
  );
  for (const [name, phase] of phases) {
    const result = await runPhase(env, temporal, phase);
    results.push(result);
    console.log(`\n${name}`);
    for (const line of describeWindow(result.window)) console.log(line);
    console.log(`  CPU per request ${result.cpuPerRequest.toFixed(1)} ms   (${result.cpuText})`);
    console.log(
      `  workflows on the phase's queue: ${result.ran.provisions} provisions for ${result.asked.provisions} asked, ${result.ran.binds} binds for ${result.asked.binds} asked, ${result.ran.notCompleted} not completed`,
    );
    if (result.window.errors.length > 0)
      throw new Error(`${result.window.errors.length} errors, the first: ${result.window.errors[0]}`);
    if (
      result.ran.provisions !== result.asked.provisions ||
      result.ran.binds !== result.asked.binds ||
      result.ran.notCompleted !== 0
    )
      throw new Error('the workflows that ran are not one completed workflow per operation asked for');
  }
  const rate = (r: PhaseResult) => r.window.requests / r.window.seconds;
  console.log(`\nthroughput of 2 + 2 against 1 + 1: ${(rate(results[1]!) / rate(results[0]!)).toFixed(2)}`);
});
