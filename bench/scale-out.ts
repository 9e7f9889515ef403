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
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
import { osbHttp } from './osb-http.js';

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
  const children: ChildProcess[] = [];
  const start = async (role: 'worker' | 'broker') => {
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        ...(role === 'broker' ? BROKER_NODE_FLAGS : []),
        fileURLToPath(new URL('../src/main.js', import.meta.url)),
        role,
      ],
      {
        env: {
          ...process.env,
          INTEROP_TEMPORAL_ADDRESS: env.info.temporal.address,
          INTEROP_MASTER_KUBECONFIG: env.info.clusters[0]!.kubeconfigPath,
          INTEROP_NAMESPACE: env.info.namespace,
          INTEROP_TASK_QUEUE: taskQueue,
          INTEROP_PAYLOAD_KEYS: payloadKeys,
          INTEROP_BROKER_USERNAME: 'bench',
          INTEROP_BROKER_PASSWORD: 'bench',
          INTEROP_PORT: String(port),
          INTEROP_METRICS_PORT: String(await freePort()),
          INTEROP_LOG_LEVEL: 'warn',
          INTEROP_SHUTDOWN_DELAY_SECONDS: '0',
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    children.push(child);
    return { port, child };
  };
  const stopAll = async () => {
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  };
  const clients: ReturnType<typeof osbHttp>[] = [];
  try {
    const workers: ChildProcess[] = [];
    for (let i = 0; i < phase.workers; i++) workers.push((await start('worker')).child);
    for (let i = 0; i < phase.brokers; i++) {
      const { port } = await start('broker');
      const client = osbHttp(port, 'bench:bench', CLIENTS + 10);
      clients.push(client);
      for (;;) {
        const res = await client.request('GET', '/v2/catalog').catch(() => undefined);
        if (res?.status === 200 && res.text.includes(PLAN_ID)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
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
    const notCompleted = await settledCount(temporal, taskQueue, ` AND ExecutionStatus != 'Completed'`);
    return {
      window,
      cpuText: cost.text,
      cpuPerRequest: cost.total,
      ran: { provisions, binds, notCompleted },
      asked: { provisions: mix.landscape.provisions, binds: mix.landscape.binds },
    };
  } finally {
    for (const client of clients) client.close();
    await stopAll();
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-bench-'));
  const env = await startLocalEnvironment({ workDir, sisters: 0, temporalKind: TEMPORAL });
  const stops: (() => Promise<void>)[] = [() => env.stop()];
  try {
    await installCatalog(env.master, env.info.namespace, ['examples/postgresql']);
    const operator = await startExampleOperator({ clusters: env.clusters, readyAfterMs: READY_AFTER_MS });
    stops.push(() => operator.stop());
    const connection = await Connection.connect({ address: env.info.temporal.address });
    stops.push(() => connection.close());
    const temporal = new Client({ connection, namespace: env.info.temporal.namespace });

    const phases: [string, Phase][] = [
      ['1 broker, 1 worker', { brokers: 1, workers: 1, killWorkerHalfway: false }],
      [
        '2 brokers, 2 workers, one worker killed halfway',
        { brokers: 2, workers: 2, killWorkerHalfway: true },
      ],
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
  } catch (err) {
    console.error('The benchmark failed:', err);
    throw err;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
