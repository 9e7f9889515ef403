/**
 * Provision benchmark, in one run on this machine: provision-to-succeeded latency (p50/p99) and
 * throughput for N instances of a plan whose single resource is ready at once; beside it the two
 * limits under us, measured in the same run (the apiserver's raw create throughput for as many
 * objects, and a trivial workflow with as many activities on the same Temporal server, queued as
 * the baseline is defined and local as the provision runs its steps); then the latency of catalog
 * and last_operation at 100 concurrent clients. The latency is also measured for instances placed
 * on a sister cluster (a plan whose clusterSelector picks it), alternating with the master's, so
 * the replication hop is compared in the same run.
 *
 *   npm run build && node dist/bench/provision.js [instances]
 */
import { fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { BROKER_NODE_FLAGS } from '../src/config.js';
import { getRecord, patchRecord, patchRecordStatus } from '../src/kube/custom-objects.js';
import { applyObject } from '../src/kube/objects.js';
import { SFCLUSTER, SFSERVICEINSTANCE, type SFServiceInstance } from '../src/resources/types.js';
import type { ReadJob, ReadReply } from './read-load.js';
import { addCpu, cpuByRole, cpuSince, describeCpu, type CpuByRole } from './cpu.js';
import { startLocalEnvironment } from '../dev/local/environment.js';
import { pool } from './pool.js';
import { startBenchProcesses } from './processes.js';
import { instanceNamespace, instanceWorkflowId, resourceName } from '../src/resources/names.js';
import { EncryptionCodec, parsePayloadKeys } from '../src/temporal/codec.js';

const INSTANCES = Number(process.argv[2] ?? 200);
const CONCURRENCY = 50;
/** Throughput rounds, provisions and trivial workflows alternating. */
const ROUNDS = 2;
/** How often a platform polls last_operation while 50 operations run. */
const UNDER_LOAD_POLL_MS = 500;
const LATENCY_SAMPLES = 30;
/**
 * Concurrent clients of the read benchmarks, and how many reads they time: at 100 clients one
 * pause of the broker (a GC, the machine's other work) delays 100 reads at once, so the p99 of a
 * short window is that one pause; 20000 reads (a few seconds) give the tail a fair sample.
 */
const READ_CLIENTS = 100;
const TIMED_READS = 20_000;
/**
 * Windows of the reads answered from memory, the floor's and the broker's alternating: one stall
 * of the machine decides a window's p99, so each kind is read three times and every window's p99
 * is printed with their median.
 */
const READ_WINDOWS = 3;
/**
 * Reads before each window's timed ones, untimed: the connections, the JIT of the server read and
 * of the load, and the load's young generation growing to its steady size (each growth is a
 * scavenge that would hold every read in flight).
 */
const READ_WARM_UP = 5000;
/** Activities of one provision on the master of a plan that is ready at once: record, schedule, apply, check, record outcome. */
const ACTIVITIES_PER_PROVISION = 5;
const SERVICE = 'bench-service';
const PLAN = 'bench-plan';
/** The same plan, placed on the sister cluster by the label-selector scheduler. */
const PLAN_ON_SISTER = 'bench-plan-on-sister';
const SISTER = 'sister-1';
const auth = `Basic ${Buffer.from('bench:bench').toString('base64')}`;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-bench-'));
  const env = await startLocalEnvironment({ workDir, sisters: 1 });
  const stops: (() => Promise<void>)[] = [() => env.stop()];
  try {
    const ns = env.info.namespace;
    await applyObject(env.master, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE, namespace: ns },
      spec: { id: SERVICE, name: 'bench', description: 'bench', bindable: false },
    });
    const applyPlan = (id: string, clusterSelector?: string) =>
      applyObject(env.master, {
        apiVersion: 'osb.servicefabrik.io/v1alpha1',
        kind: 'SFPlan',
        metadata: { name: id, namespace: ns },
        spec: {
          id,
          name: clusterSelector ? 'ready-at-once-on-a-sister' : 'ready-at-once',
          description: 'one ConfigMap, ready as soon as it exists',
          serviceId: SERVICE,
          manager: { async: true },
          templates: [
            {
              action: 'provision',
              type: 'gotemplate',
              content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n',
            },
            {
              action: 'sources',
              type: 'gotemplate',
              content:
                'cm: {apiVersion: v1, kind: ConfigMap, name: cm, namespace: {{ .instance.metadata.namespace }}}',
            },
            ...(clusterSelector
              ? [{ action: 'clusterSelector', type: 'gotemplate', content: clusterSelector }]
              : []),
            {
              action: 'status',
              type: 'gotemplate',
              content: 'provision: {state: {{ if .cm }}succeeded{{ else }}in progress{{ end }}}\n',
            },
          ],
        },
      });
    await applyPlan(PLAN);
    await applyPlan(PLAN_ON_SISTER, 'bench=sister');
    // The sister as a probed landscape shows it (running), labelled for the plan's selector.
    await patchRecord(env.master, SFCLUSTER, ns, SISTER, { metadata: { labels: { bench: 'sister' } } });
    await patchRecordStatus(env.master, SFCLUSTER, ns, SISTER, { phase: 'running' });

    // ---- the inter-operator as the Helm chart deploys it: broker and worker in their own
    // processes, the broker with its node flags (BROKER_NODE_FLAGS).
    // BENCH_NODE_ARGS: node flags for the broker and worker, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
    const benchNodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    const { osb, payloadKeys, port } = await startBenchProcesses({
      temporalAddress: env.info.temporal.address,
      masterKubeconfig: env.info.clusters[0]!.kubeconfigPath,
      plan: PLAN,
      maxSockets: 200,
      nodeArgs: (role) => [...(role === 'broker' ? BROKER_NODE_FLAGS : []), ...benchNodeArgs],
      env: { INTEROP_PLAN_SCHEDULERS: `${PLAN_ON_SISTER}=label-selector` },
      stops,
    });

    // warm-up: the worker's first workflow tasks, the render threads
    const operations = new Map<string, string>();
    // The bench's own view of the workflows (with the broker's payload key, to read their results).
    const temporalConnection = await Connection.connect({ address: env.info.temporal.address });
    stops.push(() => temporalConnection.close());
    const temporal = new Client({
      connection: temporalConnection,
      dataConverter: { payloadCodecs: [new EncryptionCodec(parsePayloadKeys(payloadKeys))] },
    });
    /**
     * Provisions one instance and returns the milliseconds until last_operation said succeeded.
     * `pollMs` a number: polls last_operation that often (fast when measuring latency, platform-like
     * under load). `'result'`: waits for the workflow's result as the trivial baseline does, then
     * asks last_operation once, so the comparison of throughputs is like for like.
     */
    const provisionOne = async (id: string, pollMs: number | 'result' = 25, plan = PLAN) => {
      const started = performance.now();
      const res = await osb('PUT', `/v2/service_instances/${id}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: plan,
        organization_guid: 'o',
        space_guid: 's',
      });
      if (res.status !== 202) throw new Error(`provision answered ${res.status}: ${res.text}`);
      // Platforms poll with the operation they were given.
      const operation = encodeURIComponent((JSON.parse(res.text) as { operation: string }).operation);
      operations.set(id, operation);
      if (pollMs === 'result') await temporal.workflow.getHandle(instanceWorkflowId(id)).result();
      for (;;) {
        const path = `/v2/service_instances/${id}/last_operation?operation=${operation}`;
        const last = JSON.parse((await osb('GET', path)).text) as { state: string };
        if (last.state === 'succeeded') return performance.now() - started;
        if (last.state === 'failed') throw new Error(`provision of ${id} failed`);
        if (pollMs === 'result')
          throw new Error(`provision of ${id} ended, but last_operation says ${last.state}`);
        await new Promise((r) => setTimeout(r, pollMs));
      }
    };
    for (let i = 0; i < 5; i += 1) {
      await provisionOne(`warm-${i}`);
      await provisionOne(`warm-sister-${i}`, 25, PLAN_ON_SISTER);
    }

    // ---- provision-to-succeeded: one at a time (latency), then CONCURRENCY at a time (throughput)
    const latencies: number[] = [];
    const sisterLatencies: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i += 1) {
      latencies.push(await provisionOne(randomUUID()));
      sisterLatencies.push(await provisionOne(randomUUID(), 25, PLAN_ON_SISTER));
    }
    const onSister = await getRecord<SFServiceInstance>(
      env.master,
      SFSERVICEINSTANCE,
      instanceNamespace('warm-sister-0'),
      resourceName('warm-sister-0'),
    );
    if (onSister?.spec.clusterId !== SISTER)
      throw new Error(`the sister plan's instance is on cluster ${onSister?.spec.clusterId}, not ${SISTER}`);

    // ---- limit 2's worker: a trivial workflow with as many activities, same Temporal server
    const connection = await NativeConnection.connect({ address: env.info.temporal.address });
    const worker = await Worker.create({
      connection,
      taskQueue: 'bench-trivial',
      workflowsPath: fileURLToPath(new URL('./workflows.js', import.meta.url)),
      activities: { nothing: async () => undefined },
    });
    const workerRun = worker.run();
    const clientConnection = await Connection.connect({ address: env.info.temporal.address });
    const client = new Client({ connection: clientConnection });
    const trivial = (workflowId: string, type = 'trivialWorkflow') =>
      client.workflow.execute(type, {
        taskQueue: 'bench-trivial',
        workflowId,
        args: [ACTIVITIES_PER_PROVISION],
      });
    const trivialLocal = (workflowId: string) => trivial(workflowId, 'trivialLocalWorkflow');
    for (let i = 0; i < 5; i += 1) {
      await trivial(`warm-${i}-${randomUUID()}`);
      await trivialLocal(`warm-local-${i}-${randomUUID()}`);
    }

    // ---- throughput: provisions and trivial workflows, CONCURRENCY at a time, in alternating
    // rounds, so that a slow minute of this shared machine weighs on both alike.
    const loaded: number[] = [];
    const ids: string[] = [];
    const provisionRates: number[] = [];
    const trivialRates: number[] = [];
    const trivialLocalRates: number[] = [];
    // CPU time of every process of the run (bench = the load, and the trivial workflow's worker).
    let provisionCpu: CpuByRole = {};
    let trivialCpu: CpuByRole = {};
    let trivialLocalCpu: CpuByRole = {};
    for (let round = 0; round < ROUNDS; round += 1) {
      const roundIds = Array.from({ length: INSTANCES }, () => randomUUID());
      ids.push(...roundIds);
      let before = cpuByRole();
      const provisionSeconds = await pool(INSTANCES, CONCURRENCY, async (i) => {
        await provisionOne(roundIds[i]!, 'result');
      });
      provisionCpu = addCpu(provisionCpu, cpuSince(before));
      provisionRates.push(INSTANCES / provisionSeconds);
      before = cpuByRole();
      const trivialSeconds = await pool(INSTANCES, CONCURRENCY, async (i) => {
        await trivial(`trivial-${round}-${i}-${randomUUID()}`);
      });
      trivialCpu = addCpu(trivialCpu, cpuSince(before));
      trivialRates.push(INSTANCES / trivialSeconds);
      before = cpuByRole();
      const trivialLocalSeconds = await pool(INSTANCES, CONCURRENCY, async (i) => {
        await trivialLocal(`trivial-local-${round}-${i}-${randomUUID()}`);
      });
      trivialLocalCpu = addCpu(trivialLocalCpu, cpuSince(before));
      trivialLocalRates.push(INSTANCES / trivialLocalSeconds);
    }
    worker.shutdown();
    await workerRun;
    // ---- the same load as platforms make it: each polls last_operation every UNDER_LOAD_POLL_MS
    const pollingIds = Array.from({ length: INSTANCES }, () => randomUUID());
    const pollingSeconds = await pool(INSTANCES, CONCURRENCY, async (i) => {
      loaded.push(await provisionOne(pollingIds[i]!, UNDER_LOAD_POLL_MS));
    });
    const pollingRate = INSTANCES / pollingSeconds;
    await clientConnection.close();
    await connection.close();
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    const provisionRate = mean(provisionRates);
    const trivialRate = mean(trivialRates);
    const trivialLocalRate = mean(trivialLocalRates);

    // ---- limit 1: the apiserver creating as many objects
    await env.master.core.createNamespace({ body: { metadata: { name: 'bench-raw' } } });
    const rawSeconds = await pool(INSTANCES, CONCURRENCY, async (i) => {
      await env.master.core.createNamespacedConfigMap({
        namespace: 'bench-raw',
        body: { metadata: { name: `cm-${i}` }, data: { a: 'b' } },
      });
    });
    const rawRate = INSTANCES / rawSeconds;

    // ---- reads at 100 concurrent clients, each on its own kept-alive connection, made by a
    // process of their own (bench/read-load.ts) so that this one's heap does not pause them.
    const readCpu: Record<string, CpuByRole> = {};
    // BENCH_LOAD_NODE_ARGS: node flags for the load, e.g. `--trace-gc` (its pauses count in every read).
    const loader = fork(fileURLToPath(new URL('./read-load.js', import.meta.url)), {
      stdio: 'inherit',
      execArgv: process.env.BENCH_LOAD_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
    });
    stops.push(async () => {
      loader.kill('SIGTERM');
      await new Promise((r) => loader.once('exit', r));
    });
    const readLatency = (p: string, from = port) =>
      new Promise<number[]>((resolve, reject) => {
        let before: CpuByRole = {};
        const onReply = (reply: ReadReply) => {
          if ('warm' in reply) {
            before = cpuByRole();
            return;
          }
          loader.off('message', onReply);
          if ('error' in reply) return reject(new Error(reply.error));
          readCpu[p] = addCpu(readCpu[p] ?? {}, cpuSince(before));
          resolve(reply.samples);
        };
        loader.on('message', onReply);
        const job: ReadJob = {
          port: from,
          path: p,
          headers: { Authorization: auth, 'X-Broker-API-Version': '2.17' },
          clients: READ_CLIENTS,
          warmUp: READ_WARM_UP,
          count: TIMED_READS,
        };
        loader.send(job);
      });
    // The floor: a bare node:http server in its own process, read the same way.
    const floorServer = spawn(
      process.execPath,
      [fileURLToPath(new URL('./floor-server.js', import.meta.url))],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    stops.push(async () => {
      floorServer.kill('SIGTERM');
      await new Promise((r) => floorServer.once('exit', r));
    });
    const floorPort = await new Promise<number>((resolve, reject) => {
      floorServer.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
      floorServer.once('exit', () => reject(new Error('the floor server did not start')));
    });
    const floorPath = '/floor';
    const catalogPath = '/v2/catalog';
    const first = ids[0]!;
    const lastOperationPath = `/v2/service_instances/${first}/last_operation?operation=${operations.get(first)}`;
    const floor: number[][] = [];
    const catalog: number[][] = [];
    const lastOperation: number[][] = [];
    for (let window = 0; window < READ_WINDOWS; window++) {
      floor.push(await readLatency(floorPath, floorPort));
      catalog.push(await readLatency(catalogPath));
      lastOperation.push(await readLatency(lastOperationPath));
    }
    const latestPath = `/v2/service_instances/${first}/last_operation`;
    const lastOperationLatest = await readLatency(latestPath);
    /** CPU per request of the timed reads, by role. */
    const perRead = (p: string, windows = 1) => describeCpu(readCpu[p] ?? {}, TIMED_READS * windows).text;

    const ms = (v: number) => `${v.toFixed(1)} ms`;
    console.log(
      `\nProvision benchmark: ${INSTANCES} instances a round, ${ROUNDS} rounds, ${CONCURRENCY} at a time, one machine (${os.cpus().length} cores)`,
    );
    console.log(
      `  provision-to-succeeded   p50 ${ms(percentile(latencies, 50))}   p99 ${ms(percentile(latencies, 99))}   (one at a time, ${LATENCY_SAMPLES} instances)`,
    );
    console.log(
      `  on the sister            p50 ${ms(percentile(sisterLatencies, 50))}   p99 ${ms(percentile(sisterLatencies, 99))}   (one at a time, alternating with the master's; sister/master p50 ${(percentile(sisterLatencies, 50) / percentile(latencies, 50)).toFixed(2)}, target < 1.5)`,
    );
    console.log(
      `  under load               p50 ${ms(percentile(loaded, 50))}   p99 ${ms(percentile(loaded, 99))}   (${CONCURRENCY} at a time, polling every ${UNDER_LOAD_POLL_MS} ms: mostly queueing)`,
    );
    const rates = (values: number[]) => values.map((v) => v.toFixed(1)).join(', ');
    console.log(
      `  provision throughput     ${provisionRate.toFixed(1)} instances/s   (rounds: ${rates(provisionRates)}; done = the workflow's result, as for the trivial one)`,
    );
    console.log(
      `  the same, polling        ${pollingRate.toFixed(1)} instances/s   (done = last_operation says so, polled every ${UNDER_LOAD_POLL_MS} ms)`,
    );
    console.log(
      `  apiserver raw creates    ${rawRate.toFixed(1)} objects/s        (provision/raw ${(provisionRate / rawRate).toFixed(2)})`,
    );
    console.log(
      `  trivial workflow (${ACTIVITIES_PER_PROVISION} activities) ${trivialRate.toFixed(1)} workflows/s   (rounds: ${rates(trivialRates)}; provision/trivial ${(provisionRate / trivialRate).toFixed(2)})`,
    );
    console.log(
      `  the same, local activities ${trivialLocalRate.toFixed(1)} workflows/s   (rounds: ${rates(trivialLocalRates)}; provision/trivial-local ${(provisionRate / trivialLocalRate).toFixed(2)}; the provision runs its steps as local activities)`,
    );
    const provisionCost = describeCpu(provisionCpu, INSTANCES * ROUNDS);
    const trivialCost = describeCpu(trivialCpu, INSTANCES * ROUNDS);
    const trivialLocalCost = describeCpu(trivialLocalCpu, INSTANCES * ROUNDS);
    console.log(`  CPU per provision        ${provisionCost.total.toFixed(1)} ms   (${provisionCost.text})`);
    console.log(
      `  CPU per trivial workflow ${trivialCost.total.toFixed(1)} ms   (${trivialCost.text}; trivial/provision ${(trivialCost.total / provisionCost.total).toFixed(2)})`,
    );
    console.log(
      `  the same, local          ${trivialLocalCost.total.toFixed(1)} ms   (${trivialLocalCost.text}; trivial-local/provision ${(trivialLocalCost.total / provisionCost.total).toFixed(2)})`,
    );
    /** p50 of all windows; each window's p99 and their median; the p99 of all the windows' reads together. */
    const windowed = (windows: number[][]) => {
      const p99s = windows.map((w) => percentile(w, 99));
      return `p50 ${ms(percentile(windows.flat(), 50))}   p99 ${ms(percentile(p99s, 50))}   (windows: ${p99s.map(ms).join(', ')}; all reads: ${ms(percentile(windows.flat(), 99))})`;
    };
    console.log(
      `  floor, ${READ_CLIENTS} clients       ${windowed(floor)}   (a bare node:http server in its own process, the same body from memory; CPU ms per request: ${perRead(floorPath, READ_WINDOWS)})`,
    );
    console.log(
      `  catalog, ${READ_CLIENTS} clients     ${windowed(catalog)}   (CPU ms per request: ${perRead(catalogPath, READ_WINDOWS)})`,
    );
    console.log(
      `  last_operation, ${READ_CLIENTS} cl.  ${windowed(lastOperation)}   (?operation= of a finished provision, as platforms poll; CPU ms per request: ${perRead(lastOperationPath, READ_WINDOWS)})`,
    );
    console.log(
      `  last_operation, latest   p50 ${ms(percentile(lastOperationLatest, 50))}   p99 ${ms(percentile(lastOperationLatest, 99))}   (no ?operation=: one describe call each; CPU ms per request: ${perRead(latestPath)})`,
    );
  } catch (err) {
    // Said before the cleanup: closing the connections can fail calls still running, and their
    // errors would hide this one.
    console.error('The benchmark failed:', err);
    throw err;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
