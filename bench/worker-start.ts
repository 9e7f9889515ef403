/**
 * A worker's start: from the process's spawn to its first poll of the task queue, and its resident
 * memory at rest after that, on the same servers in the same run, rounds taken in turn:
 * - `main.js worker`: the product's worker, which loads the workflow bundle `npm run build` wrote;
 * - `prebuilt bundle`: a bare SDK worker (no activities of ours, no catalog) loading that bundle;
 * - `bundled at start`: the same bare worker given the workflows' path, so that it bundles them
 *   with webpack before it polls (what every worker did before the build made the bundle).
 * The two bare workers differ only in where their workflow code comes from.
 *
 *   npm run build && node dist/bench/worker-start.js [--rounds 3] [--rest-seconds 5]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startLocalEnvironment } from '../dev/local/environment.js';
import { freePort } from '../dev/local/processes.js';
import { generatePayloadKey } from '../src/temporal/codec.js';
import { runBench } from './processes.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'rest-seconds': { type: 'string', default: '5' },
  },
});
const ROUNDS = Number(args.rounds);
const REST_MS = Number(args['rest-seconds']) * 1000;

type Variant = 'main.js worker' | 'prebuilt bundle' | 'bundled at start';
const VARIANTS: readonly Variant[] = ['main.js worker', 'prebuilt bundle', 'bundled at start'];

interface Sample {
  readonly startSeconds: number;
  readonly restRssMb: number;
}

/** Resident memory of a process, in MB, from /proc. */
function rssMb(pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return line ? Number(line[1]) / 1024 : NaN;
}

/** Spawns one variant, times it to its ready line, waits at rest, reads its RSS, stops it. */
async function sample(variant: Variant, env: Record<string, string>): Promise<Sample> {
  const argv =
    variant === 'main.js worker'
      ? [fileURLToPath(new URL('../src/main.js', import.meta.url)), 'worker']
      : [
          fileURLToPath(new URL('./worker-start-child.js', import.meta.url)),
          variant === 'prebuilt bundle' ? 'prebuilt' : 'at-start',
        ];
  const ready = variant === 'main.js worker' ? /worker polling/ : /^polling$/m;
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, argv, {
    env: { ...process.env, ...env, INTEROP_METRICS_PORT: String(await freePort()) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const startSeconds = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${variant} did not poll in 120 s:\n${output}`)),
        120_000,
      );
      const look = (chunk: Buffer) => {
        output += chunk.toString();
        if (ready.test(output)) {
          clearTimeout(timer);
          resolve(Number(process.hrtime.bigint() - started) / 1e9);
        }
      };
      child.stdout.on('data', look);
      child.stderr.on('data', look);
      child.once('exit', (code) => reject(new Error(`${variant} exited (${code}):\n${output}`)));
    });
    await new Promise((r) => setTimeout(r, REST_MS));
    return { startSeconds, restRssMb: rssMb(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

await runBench(async (workDir, stops) => {
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  stops.push(() => env.stop());
  const settings = {
    INTEROP_TEMPORAL_ADDRESS: env.info.temporal.address,
    INTEROP_TEMPORAL_NAMESPACE: env.info.temporal.namespace,
    INTEROP_MASTER_KUBECONFIG: env.info.clusters[0]!.kubeconfigPath,
    INTEROP_NAMESPACE: env.info.namespace,
    INTEROP_PAYLOAD_KEYS: generatePayloadKey(),
    INTEROP_TASK_QUEUE: 'bench-worker-start',
    INTEROP_LOG_LEVEL: 'info',
    INTEROP_SHUTDOWN_DELAY_SECONDS: '0',
    INTEROP_CLUSTER_PROBE_SECONDS: '0',
    INTEROP_SECRET_ROTATION_CHECK_SECONDS: '0',
  };
  const samples = new Map<Variant, Sample[]>(VARIANTS.map((v) => [v, []]));
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const variant of VARIANTS) {
      const s = await sample(variant, settings);
      samples.get(variant)!.push(s);
      console.log(
        `round ${round} ${variant}: first poll after ${s.startSeconds.toFixed(2)} s, ${s.restRssMb.toFixed(0)} MB at rest`,
      );
    }
  }
  const atStart = median(samples.get('bundled at start')!.map((s) => s.startSeconds));
  console.log(`\nmedians of ${ROUNDS} rounds:`);
  for (const variant of VARIANTS) {
    const start = median(samples.get(variant)!.map((s) => s.startSeconds));
    const rss = median(samples.get(variant)!.map((s) => s.restRssMb));
    console.log(
      `  ${variant.padEnd(17)} first poll ${start.toFixed(2)} s (${(start / atStart).toFixed(2)} of bundled at start), ${rss.toFixed(0)} MB at rest`,
    );
  }
});
