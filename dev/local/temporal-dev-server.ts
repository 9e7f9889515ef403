/**
 * The Temporal CLI dev server, with the inter-operator's search attributes registered at start.
 * Headless for tests; with the Web UI and a SQLite file for the dev stack, so a restart keeps history.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_NAMES } from '../../src/workflows/search-attributes.js';
import { ensureBinaries } from './binaries.js';
import { freePort, readyOrStopped, startProcess, withFreshPorts } from './processes.js';

export interface TemporalDevServer {
  /** host:port of the frontend (gRPC). */
  readonly address: string;
  readonly namespace: string;
  /** http://127.0.0.1:PORT of the Web UI, when started with one. */
  readonly uiUrl?: string;
  readonly logFile: string;
  stop(): Promise<void>;
  /** SIGKILLs the server, as in a crash; what its SQLite file holds stays. */
  kill(): Promise<void>;
}

export interface TemporalDevServerOptions {
  readonly workDir: string;
  /** gRPC port. @default a free port */
  readonly port?: number;
  /**
   * The host the frontend is named by, on every interface rather than on 127.0.0.1 alone (e.g. a
   * node's bridge address, for pods): the dev server's own services reach each other at 127.0.0.1,
   * so binding it to one other address breaks it. @default unset: 127.0.0.1 only
   */
  readonly advertisedHost?: string;
  /** Web UI port; no UI when unset. */
  readonly uiPort?: number;
  /** The codec endpoint the Web UI decodes payloads with (`--ui-codec-endpoint`). */
  readonly uiCodecEndpoint?: string;
  /** SQLite file that keeps history across restarts; in memory when unset. */
  readonly dbFile?: string;
  /** @default 'default' */
  readonly namespace?: string;
  /** @default 60000 */
  readonly startTimeoutMs?: number;
}

/**
 * Worker Versioning (worker deployments) on, and a version no longer current found drained within
 * seconds of its last pinned workflow's end rather than minutes, so an upgrade can be tried whole.
 */
export const WORKER_VERSIONING = [
  'system.enableDeploymentVersions=true',
  'frontend.workerVersioningWorkflowAPIs=true',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod="5s"',
  'matching.wv.VersionDrainageStatusRefreshInterval="2s"',
];

/**
 * The history queues' progress saved every second rather than every 30 s: a closed workflow's
 * deletion waits until its close has been processed and that progress saved, so a deleted history
 * is gone within seconds.
 */
export const QUEUE_PROGRESS = [
  'history.transferProcessorUpdateAckInterval="1s"',
  'history.visibilityProcessorUpdateAckInterval="1s"',
];

export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const { temporal } = ensureBinaries(['temporal']);
  mkdirSync(options.workDir, { recursive: true });
  const namespace = options.namespace ?? 'default';
  const { proc, address } = await withFreshPorts(async () => {
    const port = options.port ?? (await freePort());
    const address = `${options.advertisedHost ?? '127.0.0.1'}:${port}`;
    const args = [
      'server',
      'start-dev',
      '--ip',
      options.advertisedHost ? '0.0.0.0' : '127.0.0.1',
      '--port',
      String(port),
      '--namespace',
      namespace,
      '--log-level',
      'warn',
      '--sqlite-pragma',
      'journal_mode=WAL',
      '--sqlite-pragma',
      'synchronous=OFF',
      ...SEARCH_ATTRIBUTE_NAMES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
      ...[...WORKER_VERSIONING, ...QUEUE_PROGRESS].flatMap((setting) => ['--dynamic-config-value', setting]),
    ];
    if (options.uiPort) {
      args.push('--ui-port', String(options.uiPort), '--ui-ip', '127.0.0.1');
      if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
    } else args.push('--headless');
    if (options.dbFile) args.push('--db-filename', options.dbFile);

    const proc = startProcess({
      name: 'temporal dev server',
      command: temporal,
      args,
      logFile: path.join(options.workDir, 'temporal.log'),
    });
    await readyOrStopped(
      proc,
      async () => {
        const connection = await Connection.connect({ address, connectTimeout: 2000 });
        try {
          const attrs = await connection.operatorService.listSearchAttributes({ namespace });
          return SEARCH_ATTRIBUTE_NAMES.every((name) => name in (attrs.customAttributes ?? {}));
        } finally {
          await connection.close();
        }
      },
      options.startTimeoutMs ?? 60_000,
    );
    return { proc, address };
  });
  return {
    address,
    namespace,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    logFile: proc.logFile,
    stop: () => proc.stop(),
    kill: () => proc.kill(),
  };
}
