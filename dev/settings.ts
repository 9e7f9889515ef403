/**
 * The environment variables of the dev tooling (the local servers and the dev stack), read here and
 * nowhere else under dev/; the product's own are read by src/config.ts. An empty variable counts as
 * unset.
 */
import os from 'node:os';
import path from 'node:path';

/** A variable of the dev tooling that has a value it cannot use; the message names it. */
export class DevSettingsError extends Error {}

const value = (env: NodeJS.ProcessEnv, name: string): string | undefined => env[name] || undefined;

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new DevSettingsError(`${name} must be a port number (1 to 65535), not "${raw}"`);
  return n;
}

/** INTEROP_CACHE_DIR: the cache of built server binaries, outside the repository. @default ~/.cache/interoperator */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return value(env, 'INTEROP_CACHE_DIR') ?? path.join(os.homedir(), '.cache', 'interoperator');
}

/** Server binaries to run instead of the ones built into the cache. */
export interface BinaryOverrides {
  /** TEMPORAL_CLI */
  readonly temporal?: string;
  /** ETCD_BIN */
  readonly etcd?: string;
  /** KUBE_APISERVER_BIN */
  readonly kubeApiserver?: string;
  /** KUBE_CONTROLLER_MANAGER_BIN */
  readonly kubeControllerManager?: string;
  /** TEMPORAL_SERVER_DIR: a folder that holds temporal-server and temporal-sql-tool. */
  readonly temporalServerDir?: string;
  /** KUBE_NODE_DIR: a folder that holds kubelet, kube-proxy and kube-scheduler. */
  readonly kubeNodeDir?: string;
  /** CERT_MANAGER_CONTROLLER_BIN: cert-manager's control loops (tools/cert-manager). */
  readonly certManagerController?: string;
}

export function binaryOverrides(env: NodeJS.ProcessEnv = process.env): BinaryOverrides {
  return {
    temporal: value(env, 'TEMPORAL_CLI'),
    etcd: value(env, 'ETCD_BIN'),
    kubeApiserver: value(env, 'KUBE_APISERVER_BIN'),
    kubeControllerManager: value(env, 'KUBE_CONTROLLER_MANAGER_BIN'),
    temporalServerDir: value(env, 'TEMPORAL_SERVER_DIR'),
    kubeNodeDir: value(env, 'KUBE_NODE_DIR'),
    certManagerController: value(env, 'CERT_MANAGER_CONTROLLER_BIN'),
  };
}

/** INTEROP_POSTGRES_BIN_DIR: PostgreSQL's server programs (initdb, postgres). @default the newest /usr/lib/postgresql/<n>/bin */
export function postgresBinDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return value(env, 'INTEROP_POSTGRES_BIN_DIR');
}

/**
 * The Temporal the local environment starts (when INTEROP_TEMPORAL_ADDRESS names none):
 * - `dev`: the Temporal CLI's dev server (SQLite, one history shard, one process);
 * - `server`: the production Temporal server on a throwaway PostgreSQL cluster (its persistence and
 *   its visibility store), several history shards.
 */
export type TemporalKind = 'dev' | 'server';

/** INTEROP_TEMPORAL: `dev` or `server`. @default dev */
export function temporalKind(env: NodeJS.ProcessEnv = process.env): TemporalKind {
  const raw = value(env, 'INTEROP_TEMPORAL') ?? 'dev';
  if (raw !== 'dev' && raw !== 'server')
    throw new DevSettingsError(`INTEROP_TEMPORAL must be dev or server, not "${raw}"`);
  return raw;
}

/** Servers that are already running, which the local environment uses instead of starting its own. */
export interface ExistingServers {
  /** INTEROP_TEMPORAL_ADDRESS (host:port): a Temporal server; the dev server is started when unset. */
  readonly temporalAddress?: string;
  /** INTEROP_TEMPORAL_NAMESPACE: the namespace on that server. @default default */
  readonly temporalNamespace: string;
  /** INTEROP_MASTER_KUBECONFIG: the master cluster; the local control plane is started when unset. */
  readonly masterKubeconfig?: string;
  /** INTEROP_SISTER_KUBECONFIGS: comma-separated kubeconfig files of sister clusters, with a master. */
  readonly sisterKubeconfigs: readonly string[];
}

export function existingServers(env: NodeJS.ProcessEnv = process.env): ExistingServers {
  return {
    temporalAddress: value(env, 'INTEROP_TEMPORAL_ADDRESS'),
    temporalNamespace: value(env, 'INTEROP_TEMPORAL_NAMESPACE') ?? 'default',
    masterKubeconfig: value(env, 'INTEROP_MASTER_KUBECONFIG'),
    sisterKubeconfigs: (value(env, 'INTEROP_SISTER_KUBECONFIGS') ?? '').split(',').filter(Boolean),
  };
}

/** Settings of the dev stack (dev/stack.ts), besides {@link ExistingServers} and src/config.ts. */
export interface DevStackSettings {
  /** INTEROP_DEV_DIR: the state folder (Temporal's SQLite file, kubeconfigs, logs). @default <cache>/dev-stack */
  readonly workDir: string;
  /** INTEROP_TEMPORAL_PORT: the Temporal dev server's gRPC port. @default 7233 */
  readonly temporalPort: number;
  /** INTEROP_TEMPORAL_UI_PORT: its Web UI. @default 8233 */
  readonly temporalUiPort: number;
  /** INTEROP_PAYLOAD_KEYS; when unset, a key made once and kept in the state folder. */
  readonly payloadKeys?: string;
  /** INTEROP_CODEC_PORT: the broker's codec endpoint, which the Web UI decodes payloads with. @default 8081 */
  readonly codecPort: number;
  /** INTEROP_CODEC_TOKEN; when unset, a token made once and kept in the state folder. */
  readonly codecToken?: string;
  /** INTEROP_BROKER_USERNAME @default broker */
  readonly brokerUsername: string;
  /** INTEROP_BROKER_PASSWORD; when unset, a password made once and kept in the state folder. */
  readonly brokerPassword?: string;
  /** INTEROP_ADMIN_USERNAME: the admin API's user. @default admin */
  readonly adminUsername: string;
  /** INTEROP_ADMIN_PASSWORD; when unset, a password made once and kept in the state folder. */
  readonly adminPassword?: string;
}

export function devStackSettings(env: NodeJS.ProcessEnv = process.env): DevStackSettings {
  return {
    workDir: value(env, 'INTEROP_DEV_DIR') ?? path.join(cacheDir(env), 'dev-stack'),
    temporalPort: port(env, 'INTEROP_TEMPORAL_PORT', 7233),
    temporalUiPort: port(env, 'INTEROP_TEMPORAL_UI_PORT', 8233),
    payloadKeys: value(env, 'INTEROP_PAYLOAD_KEYS'),
    codecPort: port(env, 'INTEROP_CODEC_PORT', 8081),
    codecToken: value(env, 'INTEROP_CODEC_TOKEN'),
    brokerUsername: value(env, 'INTEROP_BROKER_USERNAME') ?? 'broker',
    brokerPassword: value(env, 'INTEROP_BROKER_PASSWORD'),
    adminUsername: value(env, 'INTEROP_ADMIN_USERNAME') ?? 'admin',
    adminPassword: value(env, 'INTEROP_ADMIN_PASSWORD'),
  };
}
