/**
 * The inter-operator as the Helm chart deploys it, for the benchmarks: the worker and the broker
 * each in its own process (`main.js worker`, `main.js broker`), against the bench's servers, with
 * their output on the bench's. Resolves once the broker's catalog holds the bench's plan, with an
 * OSB client of it (bench/osb-http.ts).
 */
import { spawn } from 'node:child_process';
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
  readonly nodeArgs?: (role: 'worker' | 'broker') => readonly string[];
  /** More settings of both processes. */
  readonly env?: Readonly<Record<string, string>>;
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
}

export async function startBenchProcesses(options: BenchProcessesOptions): Promise<BenchProcesses> {
  const port = await freePort();
  const payloadKeys = generatePayloadKey();
  for (const role of ['worker', 'broker'] as const) {
    const child = spawn(
      process.execPath,
      [...(options.nodeArgs?.(role) ?? []), fileURLToPath(new URL('../src/main.js', import.meta.url)), role],
      {
        env: {
          ...process.env,
          INTEROP_TEMPORAL_ADDRESS: options.temporalAddress,
          INTEROP_MASTER_KUBECONFIG: options.masterKubeconfig,
          INTEROP_PAYLOAD_KEYS: payloadKeys,
          INTEROP_BROKER_USERNAME: 'bench',
          INTEROP_BROKER_PASSWORD: 'bench',
          INTEROP_PORT: String(port),
          // Each process its own operations port (/metrics, /livez, /readyz).
          INTEROP_METRICS_PORT: String(await freePort()),
          INTEROP_LOG_LEVEL: 'warn',
          INTEROP_SHUTDOWN_DELAY_SECONDS: '0',
          ...options.env,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    options.stops.push(async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    });
  }
  const client = osbHttp(port, 'bench:bench', options.maxSockets);
  options.stops.push(async () => client.close());
  const osb = client.request;
  for (;;) {
    const res = await osb('GET', '/v2/catalog').catch(() => undefined);
    if (res?.status === 200 && res.text.includes(options.plan)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return { osb, payloadKeys, port };
}
