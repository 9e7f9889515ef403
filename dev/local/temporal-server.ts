/**
 * The production Temporal server (go.temporal.io/server, built by tools/build-binaries.sh), as a
 * cluster runs it: PostgreSQL as its persistence and its advanced visibility store (the postgres12
 * plugin, which keeps custom search attributes), several history shards, and the frontend, history,
 * matching and worker services (here in one process, each on its own ports). The schemas are set up
 * by the server's own temporal-sql-tool; the namespace is registered and the inter-operator's
 * search attributes added once it serves, as an operator of a cluster does once.
 */
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection, type TLSConfig } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { stringify } from 'yaml';
import { SEARCH_ATTRIBUTE_NAMES } from '../../src/workflows/search-attributes.js';
import { ensureBinaries } from './binaries.js';
import type { PostgresCluster } from './postgresql.js';
import { freePort, readyOrStopped, startProcess, withFreshPorts } from './processes.js';

const run = promisify(execFile);

/** History shards: fixed for a cluster's lifetime; several, as production has. */
export const HISTORY_SHARDS = 4;

/** TLS on the frontend: its certificate and key, and the CA that signed them (PEM files). */
export interface FrontendTls {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
  /** The name the certificate is for, which clients check. */
  readonly serverName: string;
}

export interface TemporalServerOptions {
  readonly workDir: string;
  readonly postgres: Pick<PostgresCluster, 'host' | 'port' | 'user'>;
  /** Database names of the default store; `<name>_visibility` holds visibility. @default 'temporal' */
  readonly database?: string;
  /** @default 'default' */
  readonly namespace?: string;
  /** TLS on the frontend's gRPC port; plain when unset. */
  readonly tls?: FrontendTls;
  /** @default 120000 */
  readonly startTimeoutMs?: number;
}

export interface TemporalServer {
  /** host:port of the frontend (gRPC). */
  readonly address: string;
  readonly namespace: string;
  readonly logFile: string;
  /** The frontend's TLS, when it has some. */
  readonly tls?: FrontendTls;
  stop(): Promise<void>;
  /** SIGKILLs the server, as in a crash; what PostgreSQL holds stays. */
  kill(): Promise<void>;
}

/** Client TLS options of the SDK for a frontend with {@link FrontendTls}. */
export const clientTls = (tls: FrontendTls): TLSConfig => ({
  serverNameOverride: tls.serverName,
  serverRootCACertificate: readFileSync(tls.caFile),
});

/** Creates a database and sets up its schema with temporal-sql-tool, from the schemas built into it. */
async function setUpSchema(
  sqlTool: string,
  postgres: Pick<PostgresCluster, 'host' | 'port' | 'user'>,
  database: string,
  schema: 'temporal' | 'visibility',
  logFile: string,
): Promise<void> {
  const common = [
    '--ep',
    postgres.host,
    '-p',
    String(postgres.port),
    '-u',
    postgres.user,
    '--pl',
    'postgres12',
    '--db',
    database,
  ];
  const step = async (...args: string[]): Promise<string> => {
    try {
      const { stdout, stderr } = await run(sqlTool, [...common, ...args]);
      writeFileSync(logFile, stdout + stderr, { flag: 'a' });
      return stdout + stderr;
    } catch (err) {
      const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
      writeFileSync(logFile, stdout + stderr, { flag: 'a' });
      throw new Error(
        `temporal-sql-tool ${args[0]} of ${database} failed (log: ${logFile}):\n${(stdout + stderr).trim().split('\n').slice(-10).join('\n')}`,
      );
    }
  };
  // A cluster kept from an earlier run (make run's state) has the database: its schema is only
  // brought up to date.
  const created = await step('create-database').then(
    () => true,
    (err: Error) => {
      if (/already exists/.test(err.message)) return false;
      throw err;
    },
  );
  if (created) await step('setup-schema', '-v', '0.0');
  await step('update-schema', '--schema-name', `postgresql/v12/${schema}`);
}

interface Ports {
  readonly frontend: number;
  readonly frontendHttp: number;
  readonly frontendMembership: number;
  readonly history: number;
  readonly historyMembership: number;
  readonly matching: number;
  readonly matchingMembership: number;
  readonly worker: number;
  readonly workerMembership: number;
}

/** The server's static configuration (its config file), as plain data. */
export function serverConfig(options: {
  readonly ports: Ports;
  readonly postgres: Pick<PostgresCluster, 'host' | 'port' | 'user'>;
  readonly database: string;
  readonly dynamicConfigFile: string;
  readonly tls?: FrontendTls;
}): Record<string, unknown> {
  const { ports, postgres, database, tls } = options;
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${postgres.host}:${postgres.port}`,
      connectProtocol: 'tcp',
      user: postgres.user,
      password: '',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, httpPort?: number) => ({
    rpc: { grpcPort, membershipPort, bindOnIP: '127.0.0.1', ...(httpPort ? { httpPort } : {}) },
  });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: HISTORY_SHARDS,
      datastores: { default: store(database, 20), visibility: store(`${database}_visibility`, 10) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      ...(tls
        ? {
            tls: {
              frontend: {
                server: { certFile: tls.certFile, keyFile: tls.keyFile, requireClientAuth: false },
                // The worker service calls the frontend as a client.
                client: { serverName: tls.serverName, rootCaFiles: [tls.caFile] },
              },
            },
          }
        : {}),
    },
    services: {
      frontend: service(ports.frontend, ports.frontendMembership, ports.frontendHttp),
      history: service(ports.history, ports.historyMembership),
      matching: service(ports.matching, ports.matchingMembership),
      worker: service(ports.worker, ports.workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${ports.frontend}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: options.dynamicConfigFile, pollInterval: '10s' },
  };
}

/**
 * Dynamic configuration: search attributes are read fresh when a workflow sets them (as the dev
 * server does), so the ones added at start are usable at once; Worker Versioning is on, and a
 * version no longer current is found drained within seconds of its last pinned workflow's end (as
 * the dev server of the tests does).
 */
const DYNAMIC_CONFIG = {
  'system.forceSearchAttributesCacheRefreshOnRead': [{ value: true }],
  'system.enableDeploymentVersions': [{ value: true }],
  'frontend.workerVersioningWorkflowAPIs': [{ value: true }],
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': [{ value: '5s' }],
  'matching.wv.VersionDrainageStatusRefreshInterval': [{ value: '2s' }],
  // The history queues' progress saved every second rather than every 30 s: a closed workflow's
  // deletion waits until its close has been processed and that progress saved.
  'history.transferProcessorUpdateAckInterval': [{ value: '1s' }],
  'history.visibilityProcessorUpdateAckInterval': [{ value: '1s' }],
};

const { IndexedValueType } = proto.temporal.api.enums.v1;

/**
 * Registers the namespace and adds the search attributes when missing; true once both are there.
 * Fails while the services are still joining, which the caller retries.
 */
async function namespaceReady(connection: Connection, namespace: string): Promise<boolean> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (err) {
    if ((err as { code?: number }).code !== 5 /* NOT_FOUND */) throw err;
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('3 days'),
    });
    return false;
  }
  const { customAttributes = {} } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = SEARCH_ATTRIBUTE_NAMES.filter((name) => !(name in customAttributes));
  if (missing.length === 0) return true;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((name) => [name, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
  return false;
}

/**
 * A free port for a service's membership (ringpop): below 32768, since the SQL stores keep it in a
 * smallint, and so below the range the system hands out for {@link freePort}.
 */
async function membershipPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + randomInt(12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export async function startTemporalServer(options: TemporalServerOptions): Promise<TemporalServer> {
  const { temporalServer, temporalSqlTool } = ensureBinaries(['temporal-server']);
  mkdirSync(options.workDir, { recursive: true });
  const namespace = options.namespace ?? 'default';
  const database = options.database ?? 'temporal';
  const schemaLog = path.join(options.workDir, 'temporal-sql-tool.log');
  await setUpSchema(temporalSqlTool, options.postgres, database, 'temporal', schemaLog);
  await setUpSchema(temporalSqlTool, options.postgres, `${database}_visibility`, 'visibility', schemaLog);

  const dynamicConfigFile = path.join(options.workDir, 'dynamic-config.yaml');
  writeFileSync(dynamicConfigFile, stringify(DYNAMIC_CONFIG));
  const { proc, address } = await withFreshPorts(async () => {
    const ports: Ports = {
      frontend: await freePort(),
      frontendHttp: await freePort(),
      frontendMembership: await membershipPort(),
      history: await freePort(),
      historyMembership: await membershipPort(),
      matching: await freePort(),
      matchingMembership: await membershipPort(),
      worker: await freePort(),
      workerMembership: await membershipPort(),
    };
    const configFile = path.join(options.workDir, 'config.yaml');
    writeFileSync(
      configFile,
      stringify(
        serverConfig({ ports, postgres: options.postgres, database, dynamicConfigFile, tls: options.tls }),
      ),
    );
    const address = `127.0.0.1:${ports.frontend}`;
    const proc = startProcess({
      name: 'temporal server',
      command: temporalServer,
      args: [
        '--config-file',
        configFile,
        '--allow-no-auth',
        'start',
        ...['frontend', 'history', 'matching', 'worker'].flatMap((s) => ['--service', s]),
      ],
      logFile: path.join(options.workDir, 'temporal-server.log'),
      cwd: options.workDir,
    });
    await readyOrStopped(
      proc,
      async () => {
        const connection = await Connection.connect({
          address,
          connectTimeout: 2000,
          ...(options.tls ? { tls: clientTls(options.tls) } : {}),
        });
        try {
          return await namespaceReady(connection, namespace);
        } finally {
          await connection.close();
        }
      },
      options.startTimeoutMs ?? 120_000,
    );
    return { proc, address };
  });
  return {
    address,
    namespace,
    logFile: proc.logFile,
    ...(options.tls ? { tls: options.tls } : {}),
    stop: () => proc.stop(),
    kill: () => proc.kill(),
  };
}
