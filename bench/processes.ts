/**
 * The inter-operator as the Helm chart deploys it, for the benchmarks: the worker and the broker
 * each in its own process (`main.js worker`, `main.js broker`), against the bench's servers, with
 * their output on the bench's. Resolves once the broker's catalog holds the bench's plan, with an
 * OSB client of it (bench/osb-http.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../dev/local/processes.js';
import { generatePayloadKey } from '../src/temporal/codec.js';
import { osbHttp, type OsbHttp } from './osb-http.js';

export interface BenchProcessesOptions {
  readonly temporalAddress: string;
  readonly masterKubeconfig: string;
  /** The plan the broker's catalog must hold before the bench starts. */
  readonly plan: string;
  /** The OSB client's connections at most. */
  readonly maxSockets: number;
  /** Node flags of each role's process. @default none */
  readonly nodeArgs?: (role: Role) => readonly string[];
  /** More settings of both processes. */
  readonly env?: Readonly<Record<string, string>>;
  /** More settings of one role's process. */
  readonly roleEnv?: (role: Role) => Readonly<Record<string, string>>;
  /** Where the processes' and the client's stops are pushed, for the bench to run at its end. */
  readonly stops: (() => Promise<void>)[];
}

export interface BenchProcesses {
  /** The OSB client's request (Basic auth `bench:bench`). */
  readonly osb: OsbHttp['request'];
  /** The processes' INTEROP_PAYLOAD_KEYS, for a client that reads the workflows' payloads. */
  readonly payloadKeys: string;
  /** The broker's port. */
  readonly port: number;
  readonly processes: Readonly<Record<Role, ChildProcess>>;
}

export type Role = 'worker' | 'broker';

/** What a process of the inter-operator needs to reach the bench's servers. */
export interface RoleSettings {
  readonly temporalAddress: string;
  readonly masterKubeconfig: string;
  readonly payloadKeys: string;
  /** The broker's port. */
  readonly port: number;
  /** Node flags. @default none */
  readonly nodeArgs?: readonly string[];
  /** More settings. */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Starts `main.js <role>` against the bench's servers, its output on the bench's; its stop (SIGTERM,
 * then the exit waited for) is pushed to `stops`.
 */
export async function spawnRole(
  role: Role,
  settings: RoleSettings,
  stops: (() => Promise<void>)[],
): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [...(settings.nodeArgs ?? []), fileURLToPath(new URL('../src/main.js', import.meta.url)), role],
    {
      env: {
        ...process.env,
        INTEROP_TEMPORAL_ADDRESS: settings.temporalAddress,
        INTEROP_MASTER_KUBECONFIG: settings.masterKubeconfig,
        INTEROP_PAYLOAD_KEYS: settings.payloadKeys,
        INTEROP_BROKER_USERNAME: 'bench',
        INTEROP_BROKER_PASSWORD: 'bench',
        INTEROP_PORT: String(settings.port),
        // Each process its own operations port (/metrics, /livez, /readyz).
        INTEROP_METRICS_PORT: String(await freePort()),
        INTEROP_LOG_LEVEL: 'warn',
        INTEROP_SHUTDOWN_DELAY_SECONDS: '0',
        ...settings.env,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  stops.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  });
  return child;
}

/** Resolves once the broker answering `request` has `plan` in its catalog. */
export async function untilCatalogHolds(request: OsbHttp['request'], plan: string): Promise<void> {
  for (;;) {
    const res = await request('GET', '/v2/catalog').catch(() => undefined);
    if (res?.status === 200 && res.text.includes(plan)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function startBenchProcesses(options: BenchProcessesOptions): Promise<BenchProcesses> {
  const port = await freePort();
  const payloadKeys = generatePayloadKey();
  const processes = {} as Record<Role, ChildProcess>;
  for (const role of ['worker', 'broker'] as const) {
    processes[role] = await spawnRole(
      role,
      {
        temporalAddress: options.temporalAddress,
        masterKubeconfig: options.masterKubeconfig,
        payloadKeys,
        port,
        nodeArgs: options.nodeArgs?.(role) ?? [],
        env: { ...options.env, ...options.roleEnv?.(role) },
      },
      options.stops,
    );
  }
  const client = osbHttp(port, 'bench:bench', options.maxSockets);
  options.stops.push(async () => client.close());
  await untilCatalogHolds(client.request, options.plan);
  return { osb: client.request, payloadKeys, port, processes };
}

/**
 * Runs a benchmark's body with a work folder and a list of stops, run in reverse at the end; a
 * failure is said before the cleanup (closing connections can fail calls still running, and their
 * errors would hide it).
 */
export async function runBench(body: (workDir: string, stops: (() => Promise<void>)[]) => Promise<void>) {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-bench-'));
  const stops: (() => Promise<void>)[] = [];
  try {
    await body(workDir, stops);
  } catch (err) {
    console.error('The benchmark failed:', err);
    throw err;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}
