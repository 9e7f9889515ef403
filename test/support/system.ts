/**
 * The inter-operator itself, for end-to-end tests: `node dist/src/main.js` as a child process
 * (broker and worker, or each alone) against the real servers of the run, with the example
 * catalog installed and the example operator reconciling on every cluster.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installCatalog as installCatalogInto } from '../../dev/catalog.js';
import { startExampleOperator } from '../../examples/operator/operator.js';
import { BROKER_NODE_FLAGS } from '../../src/config.js';
import { freePort } from '../../dev/local/processes.js';
import type { KubeObject } from '../../src/resources/types.js';
import { generatePayloadKey } from '../../src/temporal/codec.js';
import { clusters, environment, unique } from './env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export const CREDENTIALS = { username: 'broker', password: 'test-password-not-secret' };

/** Installs the example catalogs (SFService + SFPlan YAML of each folder) into the broker's namespace. */
export function installCatalog(...folders: string[]): Promise<KubeObject[]> {
  return installCatalogInto(clusters()[0]!, environment().namespace, folders);
}

export interface SystemProcess {
  readonly url: string;
  /** The operations port: /metrics, /livez, /readyz. */
  readonly metricsUrl: string;
  readonly logFile: string;
  /** SIGKILL: the process dies without any cleanup. */
  kill(): Promise<void>;
  /** SIGTERM, without waiting for the process to end (`stop` waits). */
  terminate(): void;
  stop(): Promise<void>;
}

export interface SystemSettings {
  readonly taskQueue: string;
  readonly payloadKeys: string;
  readonly port: number;
  readonly extraEnv?: Record<string, string>;
}

export async function systemSettings(extraEnv?: Record<string, string>): Promise<SystemSettings> {
  return {
    taskQueue: unique('tq'),
    payloadKeys: generatePayloadKey(),
    port: await freePort(),
    ...(extraEnv ? { extraEnv } : {}),
  };
}

/** Starts `main.js <role>` and waits until it serves (broker) or polls (worker). */
export async function startProcess(
  role: 'all' | 'broker' | 'worker',
  settings: SystemSettings,
): Promise<SystemProcess> {
  // A port chosen free a while ago may have been taken since by a process of another test file
  // (each chooses its own ports): the process is started again on fresh ones.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startProcessOnce(role, settings);
    } catch (err) {
      if (attempt >= 3 || !(err instanceof PortTaken)) throw err;
      const extraEnv = { ...settings.extraEnv };
      delete extraEnv.INTEROP_METRICS_PORT;
      settings = { ...settings, port: await freePort(), extraEnv };
    }
  }
}

/** A process that could not listen: one of its ports was taken meanwhile. */
class PortTaken extends Error {}

async function startProcessOnce(
  role: 'all' | 'broker' | 'worker',
  settings: SystemSettings,
): Promise<SystemProcess> {
  const env = environment();
  const logFile = path.join(env.workDir, `${role}-${settings.taskQueue}-${Date.now()}.log`);
  const log = createWriteStream(logFile);
  const flags = role === 'worker' ? [] : BROKER_NODE_FLAGS;
  // Each process its own operations port (a broker and a worker of one test share their settings).
  // A free port chosen now may be the OSB port chosen before and not yet taken: never the same one.
  let metricsPort = settings.extraEnv?.INTEROP_METRICS_PORT;
  while (!metricsPort || metricsPort === String(settings.port)) metricsPort = String(await freePort());
  const child: ChildProcess = spawn(
    process.execPath,
    [...flags, path.join(root, 'dist', 'src', 'main.js'), role],
    {
      env: {
        ...process.env,
        INTEROP_TEMPORAL_ADDRESS: env.temporal.address,
        INTEROP_TEMPORAL_NAMESPACE: env.temporal.namespace,
        INTEROP_TASK_QUEUE: settings.taskQueue,
        INTEROP_PAYLOAD_KEYS: settings.payloadKeys,
        INTEROP_MASTER_KUBECONFIG: env.clusters[0]!.kubeconfigPath,
        INTEROP_NAMESPACE: env.namespace,
        INTEROP_BROKER_USERNAME: CREDENTIALS.username,
        INTEROP_BROKER_PASSWORD: CREDENTIALS.password,
        INTEROP_PORT: String(settings.port),
        INTEROP_SYNC_TIMEOUT_SECONDS: '60',
        // Tests stop their processes at once; the drain is tested on its own.
        INTEROP_SHUTDOWN_DELAY_SECONDS: '0',
        // The shared registry is not probed: a test that needs the cluster health workflow turns it
        // on for its own registry namespace.
        INTEROP_CLUSTER_PROBE_SECONDS: '0',
        // Nor is it looked through for secrets due for rotation, for the same reason.
        INTEROP_SECRET_ROTATION_CHECK_SECONDS: '0',
        // Nor are the references of its instances followed (a change would be rolled out by any test's
        // worker, on its own task queue with its own keys): a test of references turns it on for a
        // registry of its own.
        INTEROP_FOLLOW_REFERENCES: 'false',
        INTEROP_METRICS_PORT: metricsPort,
        ...settings.extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${settings.port}`;
  const ready = role === 'worker' ? /worker polling/ : /broker listening/;
  const deadline = Date.now() + 90_000;
  for (;;) {
    const text = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    if (ready.test(text)) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      const message = `${role} did not start (log ${logFile}):\n${text.slice(-3000)}`;
      throw text.includes('EADDRINUSE') ? new PortTaken(message) : new Error(message);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    logFile,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    terminate: () => {
      if (child.exitCode === null) child.kill('SIGTERM');
    },
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * The example operator on every cluster of the run, keeping its backups on the master in
 * `example-operator-backups`; its log lines go to `logFile` when given.
 */
export function startOperator(readyAfterMs = 500, logFile?: string) {
  const backupStore = { cluster: clusters()[0]!, namespace: 'example-operator-backups' };
  const options = { clusters: clusters(), readyAfterMs, resyncMs: 200, backupStore };
  if (!logFile) return startExampleOperator(options);
  const out = createWriteStream(logFile, { flags: 'a' });
  const log = (line: string) => out.write(`${new Date().toISOString()} ${line}\n`);
  return startExampleOperator({ ...options, log }).then((operator) => ({
    stop: async () => {
      await operator.stop();
      await new Promise((resolve) => out.end(resolve));
    },
  }));
}
