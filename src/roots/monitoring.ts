/**
 * The operations port of a process: one Prometheus registry of its own, the worker's recorders
 * when it runs a worker, the readiness of what it runs, and the HTTP server of src/api/monitoring.ts.
 *
 * The Temporal SDK keeps its own metrics (task queue polls, schedule-to-start latency, sticky
 * cache...) in its native runtime, which exports them only by its own Prometheus server (or by
 * OTLP). That server listens on a loopback port picked at start, and /metrics appends its text
 * to ours, so that Prometheus scrapes one port with one token for everything.
 */
import type { Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import type { TelemetryOptions } from '@temporalio/worker';
import type { Registry } from 'prom-client';
import { createMonitoringApp, type Exposition } from '../api/monitoring.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { processRegistry, recordStateMetrics, workerMetrics } from '../metrics/prometheus.js';
import type { RecordStateRecorder } from '../metrics/recorders.js';
import { closeServer, listen } from './broker.js';
import { secretReader, withOverlap } from './secret-files.js';

/** How long /metrics waits for the SDK's metrics before it answers with ours alone. */
const SDK_SCRAPE_TIMEOUT_MS = 5_000;

export interface Monitoring {
  readonly registry: Registry;
  /** The worker's recorders; undefined in a broker alone. */
  readonly worker?: ReturnType<typeof workerMetrics>;
  /** Where the worker reports the state of every record, when asked to (Service Fabrik's metrics). */
  readonly recordStates?: RecordStateRecorder;
  /** For Runtime.install: where the SDK exports its metrics; undefined in a broker alone. */
  readonly telemetryOptions?: TelemetryOptions;
  /** Adds what must hold for the process to be ready; it is ready once it has some and all hold. */
  readiness(check: () => boolean): void;
  /** Serves the operations port. */
  listen(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

/** A port free on the loopback interface now (the SDK's exporter takes it right after). */
async function freeLoopbackPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Sets up the metrics of a process in `role`; call before Runtime.install and before the roots. A
 * token read from a file is re-read when it changes, the one before accepted for `overlapMs`.
 */
export async function prepareMonitoring(
  role: 'broker' | 'worker' | 'all',
  config: Omit<Config['metrics'], 'recordStates'> & { readonly recordStates?: boolean },
  log: Logger,
  overlapMs = 0,
): Promise<Monitoring> {
  const tokens = config.token
    ? withOverlap(secretReader(config.token, { log }), (a, b) => a === b, overlapMs)
    : undefined;
  const registry = processRegistry();
  const runsWorker = role !== 'broker';
  const sdkPort = runsWorker ? await freeLoopbackPort() : undefined;
  const checks: (() => boolean)[] = [];
  let server: HttpServer | undefined;

  const sdkMetrics = async (): Promise<string> => {
    if (sdkPort === undefined) return '';
    try {
      const response = await fetch(`http://127.0.0.1:${sdkPort}/metrics`, {
        signal: AbortSignal.timeout(SDK_SCRAPE_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`status ${response.status}`);
      return await response.text();
    } catch (err) {
      log.warn('the Temporal SDK metrics could not be read', { error: String(err) });
      return '';
    }
  };
  const metrics = async (): Promise<Exposition> => {
    const [ours, sdk] = await Promise.all([registry.metrics(), sdkMetrics()]);
    return { contentType: registry.contentType, text: sdk ? `${ours}\n${sdk}` : ours };
  };

  return {
    registry,
    ...(runsWorker ? { worker: workerMetrics(registry) } : {}),
    ...(runsWorker && config.recordStates ? { recordStates: recordStateMetrics(registry) } : {}),
    ...(sdkPort !== undefined
      ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkPort}` } } } }
      : {}),
    readiness(check) {
      checks.push(check);
    },
    async listen() {
      const app = createMonitoringApp({
        metrics,
        ready: () => checks.length > 0 && checks.every((check) => check()),
        ...(tokens ? { tokens } : {}),
        log,
      });
      server = await listen(app, { host: config.host, port: config.port, keepAliveMs: 5_000 });
      const { port } = server.address() as { port: number };
      const url = `http://${config.host}:${port}`;
      log.info('operations port listening', { url });
      return { url };
    },
    async stop() {
      if (server) await closeServer(server);
    },
  };
}
