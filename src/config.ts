/**
 * Settings of the broker and the worker, from environment variables (the Helm chart sets them).
 * Read once at start; a bad value stops the process with a message naming the variable. A
 * credential may instead name a file (`<NAME>_FILE`, a mounted Secret's key): the process reads
 * that file at start and again whenever it changes (src/roots/secret-files.ts).
 */
import {
  parsePlanSchedulers,
  parseSchedulerName,
  type SchedulerName,
  type SchedulingConfig,
} from './scheduling/index.js';
import { parsePayloadKeys, payloadKeysRefusal, type PayloadKey } from './temporal/codec.js';
import type { WorkerDeploymentTarget } from './temporal/worker-versions.js';

/** The levels of the JSON log, least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Settings of the template renderer. */
export interface RendererConfig {
  /**
   * INTEROP_GOTEMPLATE_WASM: the WebAssembly build of the gotemplate renderer, with Go's
   * `wasm_exec.js` in the same folder. @default the build beside the code (`dist/wasm`)
   */
  readonly wasmFile?: string;
  /**
   * INTEROP_HELM_WASM: the WebAssembly build of Helm's engine (helm templates), with Go's
   * `wasm_exec.js` in the same folder. @default the build beside the code (`dist/wasm/helm.wasm`)
   */
  readonly helmWasmFile?: string;
  /** Limits of the charts of helm templates, fetched from their `url`. */
  readonly chart?: {
    /** INTEROP_HELM_CHART_MAX_BYTES: most bytes of a chart archive. @default 4194304 (4 MiB) */
    readonly maxBytes?: number;
    /** INTEROP_HELM_CHART_TIMEOUT_SECONDS: time limit of fetching a chart. @default 20 */
    readonly timeoutMs?: number;
  };
}

/**
 * TLS to the Temporal frontend: INTEROP_TEMPORAL_TLS=true turns it on, and so does any setting below
 * or an API key.
 */
export interface TemporalTlsConfig {
  /** INTEROP_TEMPORAL_TLS_CA_FILE: the PEM CA that signed the frontend's certificate. @default the system's CAs */
  readonly caFile?: string;
  /** INTEROP_TEMPORAL_TLS_SERVER_NAME: the name the frontend's certificate is checked for. @default the address's host */
  readonly serverName?: string;
  /**
   * INTEROP_TEMPORAL_TLS_CERT_FILE and INTEROP_TEMPORAL_TLS_KEY_FILE, set together: the client's PEM
   * certificate and key, for mutual TLS.
   */
  readonly clientCert?: { readonly certFile: string; readonly keyFile: string };
}

export interface Config {
  readonly temporal: {
    /** INTEROP_TEMPORAL_ADDRESS @default 127.0.0.1:7233 */
    readonly address: string;
    /** INTEROP_TEMPORAL_NAMESPACE @default default */
    readonly namespace: string;
    /** INTEROP_TASK_QUEUE @default interoperator */
    readonly taskQueue: string;
    /**
     * INTEROP_PAYLOAD_KEYS: `id:base64key[,id:base64key]`, the first encrypts. Required. The
     * landscape's processes hold the master keys; a worker for one cluster alone only the keys
     * derived for its cluster (`<id>@<cluster id>`, src/temporal/codec.ts).
     */
    readonly payloadKeys: readonly PayloadKey[];
    /** TLS to the frontend; plain when unset. */
    readonly tls?: TemporalTlsConfig;
    /**
     * INTEROP_TEMPORAL_API_KEY: an API key sent as a bearer token on every call (Temporal Cloud);
     * turns TLS on.
     */
    readonly apiKey?: string;
  };
  /** INTEROP_MASTER_KUBECONFIG: the master cluster; KUBECONFIG or in-cluster when unset. */
  readonly masterKubeconfig?: string;
  /** INTEROP_NAMESPACE: where the catalog and the cluster registry live in the master. @default interoperator */
  readonly namespace: string;
  /** INTEROP_INSTANCE_NAMESPACE: one namespace for all instances; each its own `sf-<id>` when unset. */
  readonly instanceNamespace?: string;
  /**
   * INTEROP_MASTER_CLUSTER_ID: the master's id in the cluster registry. @default the SFCluster
   * labelled `interoperator.servicefabrik.io/primarycluster=true` (Service Fabrik's mark), else 1
   */
  readonly masterClusterId: string;
  /** Whether INTEROP_MASTER_CLUSTER_ID names the master; if not, the label may (main.ts). */
  readonly masterClusterIdSet: boolean;
  /**
   * A worker for one cluster alone: INTEROP_CLUSTER_ID, the cluster's id in the registry (its
   * SFCluster's `spec.taskQueue` is the queue the worker polls); INTEROP_CLUSTER_KUBECONFIG, the
   * cluster's kubeconfig (KUBECONFIG or in-cluster when unset). Unset: a worker of the landscape.
   */
  readonly cluster?: { readonly id: string; readonly kubeconfig?: string };
  /**
   * INTEROP_SECRET_ROTATION_CHECK_SECONDS: how often the worker looks for generated secrets older
   * than their plan's `rotateAfter` and starts their rotations; 0 turns it off. @default 300
   */
  readonly secretRotationCheckSeconds: number;
  /**
   * INTEROP_FOLLOW_REFERENCES: whether the worker follows the objects the instances' references
   * (`getValueFrom`) read, and updates an instance when one of them changes; `false` leaves a
   * change to the instance's next update. @default true
   */
  readonly followReferences: boolean;
  readonly clusterHealth: {
    /**
     * INTEROP_CLUSTER_PROBE_SECONDS: how often the worker probes every registered cluster, writes
     * its SFCluster status and copies the catalog to the running sisters; 0 turns it off. @default 30
     */
    readonly probeSeconds: number;
    /**
     * INTEROP_CLUSTER_OFFLINE_SECONDS: how long a cluster may stay unreachable before it is
     * offline (and gets no new instances). @default 120
     */
    readonly offlineSeconds: number;
    /**
     * INTEROP_CLUSTER_STABILIZATION_SECONDS: how long a cluster that was offline must answer
     * every probe before it is running again (and gets new instances); 0: at its first answer.
     * @default 60
     */
    readonly stabilizationSeconds: number;
    /**
     * INTEROP_CLUSTER_EVACUATE_AFTER_SECONDS: how long a cluster may stay unreachable before the
     * instances of the plans that allow it (`migrate.evacuate`) are rebuilt on other clusters from
     * their last backup; 0: never. @default 0
     */
    readonly evacuateAfterSeconds: number;
    /** INTEROP_CLUSTER_EVACUATION_CONCURRENCY: most rebuilds in flight per lost cluster. @default 5 */
    readonly evacuationConcurrency: number;
  };
  readonly broker: {
    /** INTEROP_HOST @default 127.0.0.1 */
    readonly host: string;
    /** INTEROP_PORT @default 8080 */
    readonly port: number;
    /**
     * INTEROP_BROKER_USERNAME and INTEROP_BROKER_PASSWORD, or INTEROP_BROKER_USERNAME_FILE and
     * INTEROP_BROKER_PASSWORD_FILE (each a file holding the value, re-read when it changes): the
     * OSB API's Basic-auth credentials. Required for the broker.
     */
    readonly credentials: CredentialSettings;
    /**
     * INTEROP_OSB_AUTH: how OSB requests are authenticated. `basic` (the default): Basic auth with
     * the credentials above. `client-certificate`: by the client certificate an ingress in front
     * verified, as Service Fabrik's `secureIncomingConnections` (the `ssl-client-cert` and
     * `ssl-client-subject-dn` headers), whose subject must hold the same RDNs as
     * INTEROP_OSB_CLIENT_SUBJECT (`CN=sm,OU=...,O=...,C=DE` or `/C=DE/O=.../OU=.../CN=sm`); the
     * Basic credentials are then not needed. Safe only behind an ingress that removes these
     * headers from what clients send (docs/security.md).
     */
    readonly osbAuth:
      { readonly kind: 'basic' } | { readonly kind: 'client-certificate'; readonly subject: string };
    /**
     * INTEROP_SEND_BINDING_METADATA (`true`, `false`): whether bind answers carry the binding's
     * `metadata` (`expires_at`, `renew_before`), as Service Fabrik's `send_binding_metadata`.
     * @default true
     */
    readonly sendBindingMetadata: boolean;
    /** INTEROP_SYNC_TIMEOUT_SECONDS: how long a synchronous request waits for its workflow. @default 60 */
    readonly syncTimeoutMs: number;
    /** INTEROP_MAX_BODY_BYTES @default 1048576 */
    readonly maxBodyBytes: number;
    /**
     * INTEROP_KEEP_ALIVE_SECONDS: how long an idle client connection stays open. Longer than the
     * idle timeout of the load balancer or router in front, so that it never sends a request on a
     * connection the broker is closing. @default 95
     */
    readonly keepAliveMs: number;
    /**
     * INTEROP_SHUTDOWN_DELAY_SECONDS: how long a stopping broker goes on answering (failing its
     * readiness, closing each connection after its answer) before it stops listening, so that
     * the load balancer has taken it out of rotation first. @default 5
     */
    readonly shutdownDelayMs: number;
    /**
     * INTEROP_ADMIN_USERNAME, INTEROP_ADMIN_PASSWORD (or INTEROP_ADMIN_USERNAME_FILE,
     * INTEROP_ADMIN_PASSWORD_FILE, files re-read when they change): the credentials
     * of the admin API (`/admin`), apart from the OSB API's. Unset: the admin API accepts no one.
     * Files that are both missing at start count as unset (a mounted Secret without the keys).
     */
    readonly admin?: CredentialSettings;
  };
  /**
   * The codec endpoint of the broker (src/temporal/codec-server.ts), for the Temporal Web UI and
   * the CLI's `--codec-endpoint`; off when INTEROP_CODEC_PORT is unset.
   */
  readonly codec?: CodecConfig;
  /**
   * The operations port of the process (the broker's, the worker's, one for both in `all`): GET
   * /metrics (Prometheus), /livez and /readyz.
   */
  readonly metrics: {
    /** INTEROP_METRICS_HOST @default 127.0.0.1 */
    readonly host: string;
    /** INTEROP_METRICS_PORT @default 9090 */
    readonly port: number;
    /**
     * INTEROP_METRICS_TOKEN (or INTEROP_METRICS_TOKEN_FILE, re-read when it changes): when set,
     * GET /metrics answers only requests with `Authorization: Bearer <token>`; the probes never
     * need it. @default unset (open)
     */
    readonly token?: SecretSetting;
    /**
     * INTEROP_METRICS_RECORD_STATES: the worker exports the state of every instance and binding
     * record, a series each, under Service Fabrik's names. @default false
     */
    readonly recordStates: boolean;
  };
  /**
   * INTEROP_CREDENTIALS_OVERLAP_SECONDS: how long credentials replaced in their files (the OSB
   * API's, the admin API's, the metrics token) stay accepted beside the new ones, so that the
   * platforms can be switched over; 0 refuses them at once. @default 300
   */
  readonly credentialOverlapMs: number;
  readonly worker: {
    /**
     * INTEROP_WORKER_OPERATIONS: how many operations one worker advances at once. An operation holds
     * its place while its steps run in the worker (they are local activities), so this bounds the
     * operations waiting on Kubernetes at the same time, not only the CPU. At least 2. @default 100
     */
    readonly concurrentOperations: number;
    /** INTEROP_WORKER_STEPS: how many steps one worker runs at once, locally and queued each. @default 100 */
    readonly concurrentSteps: number;
    /**
     * Worker Versioning (docs/operations.md, "Upgrading workers"): INTEROP_WORKER_BUILD_ID, the
     * build of the worker's code (the chart sets the image's tag), turns it on; then the worker
     * polls as the version `<deployment>.<build id>` of the worker deployment
     * INTEROP_WORKER_DEPLOYMENT, each operation stays on the version it started on, and the
     * long-lived workflows (cluster health, rollouts, rotation schedule) move to the current version.
     * A worker for one cluster alone runs no workflows and is never versioned.
     * @default unset (off: every worker runs every workflow, as without versions)
     */
    readonly versioning?: WorkerVersioning;
    /**
     * INTEROP_WORKFLOW_BUNDLE: the workflow bundle to load instead of the one `npm run build` wrote
     * (dist/bundles/), for trying a changed workflow code beside the released one.
     * @default unset (the built bundle)
     */
    readonly workflowBundle?: string;
  };
  /** INTEROP_OPERATION_TIMEOUT_SECONDS: deadline of an operation (from its start) whose plan has no maximum_polling_duration. @default 3600 */
  readonly operationTimeoutSeconds: number;
  /**
   * INTEROP_STATUS_POLL_MS: the first wait, in ms, between two status checks of an operation
   * waiting for its operator (up to 600000); the next waits double from it up to 10 s (or a
   * thousandth of the deadline). The poll is the fallback: a change the worker sees to an object the
   * status check read wakes the check at once. Set by the broker into the operations it starts.
   * @default 250
   */
  readonly statusPollMs?: number;
  /** INTEROP_LOG_LEVEL: the least severe level logged: debug, info, warn or error. @default info */
  readonly logLevel: LogLevel;
  readonly renderer: RendererConfig;
  /**
   * Where new instances go. INTEROP_SCHEDULER: the landscape's scheduler (`default` (the master),
   * `round-robin`, `least-utilized`, `label-selector`, `resource-aware`) @default default;
   * INTEROP_PLAN_SCHEDULERS: per-plan overrides, `<plan id>=<scheduler>,...`.
   */
  readonly scheduling: SchedulingConfig;
  /**
   * OpenTelemetry tracing of each OSB request through its workflow, activities and Kubernetes
   * calls; off (nothing installed) when OTEL_EXPORTER_OTLP_ENDPOINT is unset.
   */
  readonly tracing?: TracingConfig;
  /**
   * The entitlement service the broker asks before a provision or a plan change (after the plans'
   * own quotas), as docs/quotas.md describes. INTEROP_QUOTA_WEBHOOK_URL: where it asks; unset, no
   * service is asked. INTEROP_QUOTA_WEBHOOK_PROTOCOL: `entitlement` (a POST of the request) or
   * `service-fabrik` (Service Fabrik's quota app) @default entitlement.
   * INTEROP_QUOTA_WEBHOOK_TIMEOUT_SECONDS: how long it waits for the answer
   * @default 5; INTEROP_QUOTA_WEBHOOK_FAILURE_POLICY: `refuse` (503) or `allow` when the service
   * cannot be asked or answers nonsense @default refuse
   */
  readonly quotaWebhook?: QuotaWebhookConfig;
}

/** Where traces go, by OTLP over HTTP (JSON). */
/** The worker deployment version a worker polls as. */
export interface WorkerVersioning {
  /**
   * INTEROP_WORKER_DEPLOYMENT: the worker deployment, one per landscape (letters, digits, `-`, `_`).
   * @default the task queue's name, with any other character made `-`
   */
  readonly deploymentName: string;
  /** INTEROP_WORKER_BUILD_ID: the build of the worker's code (letters, digits, `-`, `_`, `.`; at most 128). */
  readonly buildId: string;
}

export interface TracingConfig {
  /**
   * OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL (`http://collector:4318`); spans are
   * sent to its `/v1/traces`.
   */
  readonly endpoint: string;
  /**
   * OTEL_SERVICE_NAME: the `service.name` of the spans. @default `interoperator-broker`,
   * `interoperator-worker`, or `interoperator` for `all`
   */
  readonly serviceName: string;
}

/** Settings of the codec endpoint, served beside the OSB API on the broker's host. */
export interface CodecConfig {
  /** INTEROP_CODEC_PORT: its own port, never the OSB API's. */
  readonly port: number;
  /**
   * INTEROP_CODEC_TOKEN (or INTEROP_CODEC_TOKEN_FILE, re-read when it changes, the token before
   * accepted for the credentials' overlap): what clients present (`Authorization: Bearer`, or in
   * the endpoint's path); 16 or more URL-safe characters. Required with the port.
   */
  readonly token: SecretSetting;
  /**
   * INTEROP_CODEC_ORIGINS: comma-separated origins (`https://temporal-ui.example.com`) allowed to
   * call it from a browser: the Temporal Web UI's. @default none (no browser)
   */
  readonly origins: readonly string[];
}

/** The entitlement service's settings; see {@link Config.quotaWebhook}. */
export interface QuotaWebhookConfig {
  readonly url: string;
  /** `entitlement` (a POST of the request) or `service-fabrik` (the GET of Service Fabrik's quota app). */
  readonly protocol: 'entitlement' | 'service-fabrik';
  readonly timeoutMs: number;
  readonly failurePolicy: 'refuse' | 'allow';
}

export class ConfigError extends Error {}

/**
 * A credential's setting: its value (`NAME`), or the file that holds it (`NAME_FILE`, a key of a
 * mounted Secret), which is read at start and re-read when it changes.
 */
export type SecretSetting =
  { readonly name: string; readonly value: string } | { readonly name: string; readonly file: string };

/** A user and a password, each from its setting. */
export interface CredentialSettings {
  readonly username: SecretSetting;
  readonly password: SecretSetting;
}

/** `NAME` or `NAME_FILE` (never both); undefined when neither is set. */
function secretSetting(env: NodeJS.ProcessEnv, name: string): SecretSetting | undefined {
  const value = env[name];
  const file = env[`${name}_FILE`];
  if (value && file) throw new ConfigError(`${name} and ${name}_FILE are set: set one of them`);
  if (file) return { name: `${name}_FILE`, file };
  if (value) return { name, value };
  return undefined;
}

/** `NAME` or `NAME_FILE`, which must be set. */
function requiredSecret(env: NodeJS.ProcessEnv, name: string): SecretSetting {
  const setting = secretSetting(env, name);
  if (!setting) throw new ConfigError(`${name} (or ${name}_FILE) is not set`);
  return setting;
}

/** A number from the environment: positive (or 0 and up with `orZero`), at most `max`. */
function number(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  { orZero = false, max = Number.MAX_SAFE_INTEGER }: { orZero?: boolean; max?: number } = {},
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !orZero) || value > max)
    throw new ConfigError(
      `${name} must be ${orZero ? 'a number of seconds (0 or more)' : 'a positive number'}${max < Number.MAX_SAFE_INTEGER ? ` up to ${max}` : ''}, not "${raw}"`,
    );
  return value;
}

/** A whole number from the environment, `min` or more. */
function count(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const value = number(env, name, fallback);
  if (!Number.isSafeInteger(value) || value < min)
    throw new ConfigError(`${name} must be a whole number, ${min} or more, not "${env[name]}"`);
  return value;
}

/** A TCP port from the environment: a whole number from 1 to 65535. */
function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = count(env, name, fallback);
  if (value > 65535) throw new ConfigError(`${name} must be a port, 1 to 65535, not "${env[name]}"`);
  return value;
}

/** Longest keep-alive and drain, in seconds: longer is a mistake (and past Node's timer range, silently short). */
const MAX_CONNECTION_SECONDS = 3600;

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value) throw new ConfigError(`${name} is not set`);
  return value;
}

/** One of `choices`, or `fallback` when unset or empty. */
function oneOf<T extends string>(
  env: NodeJS.ProcessEnv,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw))
    throw new ConfigError(
      `${name} must be ${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}, not "${raw}"`,
    );
  return raw as T;
}

/**
 * Reads the renderer's settings: the broker and the worker through {@link loadConfig}, and the
 * render command (src/cli), which needs nothing else.
 */
export function loadRendererConfig(env: NodeJS.ProcessEnv = process.env): RendererConfig {
  const chart = {
    ...(env.INTEROP_HELM_CHART_MAX_BYTES
      ? { maxBytes: count(env, 'INTEROP_HELM_CHART_MAX_BYTES', 4 * 1024 * 1024) }
      : {}),
    ...(env.INTEROP_HELM_CHART_TIMEOUT_SECONDS
      ? { timeoutMs: number(env, 'INTEROP_HELM_CHART_TIMEOUT_SECONDS', 20) * 1000 }
      : {}),
  };
  return {
    ...(env.INTEROP_GOTEMPLATE_WASM ? { wasmFile: env.INTEROP_GOTEMPLATE_WASM } : {}),
    ...(env.INTEROP_HELM_WASM ? { helmWasmFile: env.INTEROP_HELM_WASM } : {}),
    ...(Object.keys(chart).length > 0 ? { chart } : {}),
  };
}

/**
 * The admin API's credentials: both set, or neither (no admin API); never the OSB API's, so that a
 * platform's credentials cannot reach it (values from files are compared when they are read).
 */
function adminCredentials(env: NodeJS.ProcessEnv): Pick<Config['broker'], 'admin'> {
  const username = secretSetting(env, 'INTEROP_ADMIN_USERNAME');
  const password = secretSetting(env, 'INTEROP_ADMIN_PASSWORD');
  if (!username && !password) return {};
  if (!username || !password)
    throw new ConfigError('INTEROP_ADMIN_USERNAME and INTEROP_ADMIN_PASSWORD are set together, or neither');
  if (
    'value' in username &&
    'value' in password &&
    username.value === env.INTEROP_BROKER_USERNAME &&
    password.value === env.INTEROP_BROKER_PASSWORD
  )
    throw new ConfigError(
      'INTEROP_ADMIN_USERNAME and INTEROP_ADMIN_PASSWORD must differ from the OSB credentials',
    );
  return { admin: { username, password } };
}

/** The frontend's TLS settings, when TLS is on (see {@link TemporalTlsConfig}). */
function temporalTlsConfig(env: NodeJS.ProcessEnv): { tls?: TemporalTlsConfig } {
  const flag = env.INTEROP_TEMPORAL_TLS || '';
  if (flag && flag !== 'true' && flag !== 'false')
    throw new ConfigError(`INTEROP_TEMPORAL_TLS must be true or false, not "${flag}"`);
  const certFile = env.INTEROP_TEMPORAL_TLS_CERT_FILE || '';
  const keyFile = env.INTEROP_TEMPORAL_TLS_KEY_FILE || '';
  if (!certFile !== !keyFile)
    throw new ConfigError(
      'INTEROP_TEMPORAL_TLS_CERT_FILE and INTEROP_TEMPORAL_TLS_KEY_FILE are set together, or neither',
    );
  const tls: TemporalTlsConfig = {
    ...(env.INTEROP_TEMPORAL_TLS_CA_FILE ? { caFile: env.INTEROP_TEMPORAL_TLS_CA_FILE } : {}),
    ...(env.INTEROP_TEMPORAL_TLS_SERVER_NAME ? { serverName: env.INTEROP_TEMPORAL_TLS_SERVER_NAME } : {}),
    ...(certFile ? { clientCert: { certFile, keyFile } } : {}),
  };
  if (flag === 'false') {
    if (Object.keys(tls).length > 0 || env.INTEROP_TEMPORAL_API_KEY)
      throw new ConfigError(
        'INTEROP_TEMPORAL_TLS is false, but a TLS file, server name or API key is set: they need TLS',
      );
    return {};
  }
  const on = flag === 'true' || Object.keys(tls).length > 0 || Boolean(env.INTEROP_TEMPORAL_API_KEY);
  return on ? { tls } : {};
}

/** How OSB requests are authenticated (INTEROP_OSB_AUTH, INTEROP_OSB_CLIENT_SUBJECT). */
function osbAuthConfig(env: NodeJS.ProcessEnv): Config['broker']['osbAuth'] {
  const kind = oneOf(env, 'INTEROP_OSB_AUTH', ['basic', 'client-certificate'], 'basic');
  const subject = env.INTEROP_OSB_CLIENT_SUBJECT?.trim() ?? '';
  if (kind === 'basic') {
    if (subject)
      throw new ConfigError(
        'INTEROP_OSB_CLIENT_SUBJECT is set, but INTEROP_OSB_AUTH is not client-certificate',
      );
    return { kind };
  }
  if (!subject)
    throw new ConfigError('INTEROP_OSB_AUTH is client-certificate: INTEROP_OSB_CLIENT_SUBJECT is required');
  // Its form (type=value parts) is checked where it is read, by the broker before it serves.
  return { kind, subject };
}

/** The OSB API's credentials; none for a worker (which serves no API). */
function brokerCredentials(env: NodeJS.ProcessEnv, needsBroker: boolean): CredentialSettings {
  if (!needsBroker)
    return {
      username: { name: 'INTEROP_BROKER_USERNAME', value: '' },
      password: { name: 'INTEROP_BROKER_PASSWORD', value: '' },
    };
  return {
    username: requiredSecret(env, 'INTEROP_BROKER_USERNAME'),
    password: requiredSecret(env, 'INTEROP_BROKER_PASSWORD'),
  };
}

/** Settings of the operator's command line (src/cli) for the admin API; flags override each. */
export interface AdminClientConfig {
  /** INTEROP_ADMIN_URL: the broker's URL, e.g. `http://127.0.0.1:8080`. */
  readonly url?: string;
  /** INTEROP_ADMIN_USERNAME, INTEROP_ADMIN_PASSWORD: the admin API's credentials. */
  readonly username?: string;
  readonly password?: string;
}

/** Reads the command line's settings for the admin API. */
export function loadAdminClientConfig(env: NodeJS.ProcessEnv = process.env): AdminClientConfig {
  return {
    ...(env.INTEROP_ADMIN_URL ? { url: env.INTEROP_ADMIN_URL } : {}),
    ...(env.INTEROP_ADMIN_USERNAME ? { username: env.INTEROP_ADMIN_USERNAME } : {}),
    ...(env.INTEROP_ADMIN_PASSWORD ? { password: env.INTEROP_ADMIN_PASSWORD } : {}),
  };
}

/** INTEROP_PAYLOAD_KEYS as given, unparsed: the master keys the command line derives a cluster's keys from. */
export const loadPayloadKeysSetting = (env: NodeJS.ProcessEnv = process.env): string | undefined =>
  env.INTEROP_PAYLOAD_KEYS || undefined;

function metricsToken(env: NodeJS.ProcessEnv): { token?: SecretSetting } {
  const token = secretSetting(env, 'INTEROP_METRICS_TOKEN');
  return token ? { token } : {};
}

/** Reads the configuration; `role` decides which settings are required. */
export function loadConfig(role: 'broker' | 'worker' | 'all', env: NodeJS.ProcessEnv = process.env): Config {
  const needsBroker = role !== 'worker';
  const osbAuth = osbAuthConfig(env);
  const cluster = clusterWorkerConfig(env, role);
  let payloadKeys: PayloadKey[];
  try {
    payloadKeys = parsePayloadKeys(required(env, 'INTEROP_PAYLOAD_KEYS'));
  } catch (err) {
    throw new ConfigError(`INTEROP_PAYLOAD_KEYS: ${(err as Error).message}`);
  }
  const refusal = payloadKeysRefusal(payloadKeys, cluster.cluster?.id);
  if (refusal) throw new ConfigError(`INTEROP_PAYLOAD_KEYS: ${refusal}`);
  return {
    temporal: {
      address: env.INTEROP_TEMPORAL_ADDRESS || '127.0.0.1:7233',
      namespace: env.INTEROP_TEMPORAL_NAMESPACE || 'default',
      taskQueue: env.INTEROP_TASK_QUEUE || 'interoperator',
      payloadKeys,
      ...temporalTlsConfig(env),
      ...(env.INTEROP_TEMPORAL_API_KEY ? { apiKey: env.INTEROP_TEMPORAL_API_KEY } : {}),
    },
    masterKubeconfig: env.INTEROP_MASTER_KUBECONFIG || undefined,
    namespace: env.INTEROP_NAMESPACE || 'interoperator',
    instanceNamespace: env.INTEROP_INSTANCE_NAMESPACE || undefined,
    masterClusterId: env.INTEROP_MASTER_CLUSTER_ID || '1',
    masterClusterIdSet: Boolean(env.INTEROP_MASTER_CLUSTER_ID),
    ...cluster,
    secretRotationCheckSeconds: number(env, 'INTEROP_SECRET_ROTATION_CHECK_SECONDS', 300, { orZero: true }),
    followReferences: oneOf(env, 'INTEROP_FOLLOW_REFERENCES', ['true', 'false'], 'true') === 'true',
    clusterHealth: {
      probeSeconds: number(env, 'INTEROP_CLUSTER_PROBE_SECONDS', 30, { orZero: true }),
      offlineSeconds: number(env, 'INTEROP_CLUSTER_OFFLINE_SECONDS', 120),
      stabilizationSeconds: number(env, 'INTEROP_CLUSTER_STABILIZATION_SECONDS', 60, { orZero: true }),
      evacuateAfterSeconds: number(env, 'INTEROP_CLUSTER_EVACUATE_AFTER_SECONDS', 0, { orZero: true }),
      evacuationConcurrency: number(env, 'INTEROP_CLUSTER_EVACUATION_CONCURRENCY', 5),
    },
    broker: {
      host: env.INTEROP_HOST || '127.0.0.1',
      port: number(env, 'INTEROP_PORT', 8080),
      credentials: brokerCredentials(env, needsBroker && osbAuth.kind === 'basic'),
      osbAuth,
      sendBindingMetadata: oneOf(env, 'INTEROP_SEND_BINDING_METADATA', ['true', 'false'], 'true') === 'true',
      syncTimeoutMs: number(env, 'INTEROP_SYNC_TIMEOUT_SECONDS', 60) * 1000,
      maxBodyBytes: number(env, 'INTEROP_MAX_BODY_BYTES', 1024 * 1024),
      keepAliveMs: number(env, 'INTEROP_KEEP_ALIVE_SECONDS', 95, { max: MAX_CONNECTION_SECONDS }) * 1000,
      shutdownDelayMs:
        number(env, 'INTEROP_SHUTDOWN_DELAY_SECONDS', 5, { orZero: true, max: MAX_CONNECTION_SECONDS }) *
        1000,
      ...(needsBroker ? adminCredentials(env) : {}),
    },
    ...(needsBroker ? codecConfig(env, number(env, 'INTEROP_PORT', 8080)) : {}),
    metrics: {
      host: env.INTEROP_METRICS_HOST || '127.0.0.1',
      port: port(env, 'INTEROP_METRICS_PORT', 9090),
      ...metricsToken(env),
      recordStates: oneOf(env, 'INTEROP_METRICS_RECORD_STATES', ['true', 'false'], 'false') === 'true',
    },
    credentialOverlapMs:
      number(env, 'INTEROP_CREDENTIALS_OVERLAP_SECONDS', 300, { orZero: true, max: 86_400 }) * 1000,
    worker: {
      concurrentOperations: count(env, 'INTEROP_WORKER_OPERATIONS', 100, 2),
      concurrentSteps: count(env, 'INTEROP_WORKER_STEPS', 100),
      ...workerVersioningConfig(env),
      ...(env.INTEROP_WORKFLOW_BUNDLE ? { workflowBundle: env.INTEROP_WORKFLOW_BUNDLE } : {}),
    },
    operationTimeoutSeconds: number(env, 'INTEROP_OPERATION_TIMEOUT_SECONDS', 3600),
    ...(env.INTEROP_STATUS_POLL_MS
      ? { statusPollMs: Math.round(number(env, 'INTEROP_STATUS_POLL_MS', 250, { max: 600_000 })) }
      : {}),
    logLevel: oneOf(env, 'INTEROP_LOG_LEVEL', LOG_LEVELS, 'info'),
    renderer: loadRendererConfig(env),
    scheduling: schedulingConfig(env),
    ...(env.OTEL_EXPORTER_OTLP_ENDPOINT ? { tracing: tracingConfig(env, role) } : {}),
    ...quotaWebhookConfig(env),
  };
}

/** The entitlement service, when INTEROP_QUOTA_WEBHOOK_URL names one (an http or https URL). */
function quotaWebhookConfig(env: NodeJS.ProcessEnv): Pick<Config, 'quotaWebhook'> {
  const raw = env.INTEROP_QUOTA_WEBHOOK_URL?.trim();
  if (!raw) return {};
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // The value itself is not repeated: it may hold credentials.
    throw new ConfigError('INTEROP_QUOTA_WEBHOOK_URL must be an http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError('INTEROP_QUOTA_WEBHOOK_URL must be an http or https URL');
  return {
    quotaWebhook: {
      url: raw,
      protocol: oneOf(
        env,
        'INTEROP_QUOTA_WEBHOOK_PROTOCOL',
        ['entitlement', 'service-fabrik'] as const,
        'entitlement',
      ),
      timeoutMs: number(env, 'INTEROP_QUOTA_WEBHOOK_TIMEOUT_SECONDS', 5, { max: 300 }) * 1000,
      failurePolicy: oneOf(
        env,
        'INTEROP_QUOTA_WEBHOOK_FAILURE_POLICY',
        ['refuse', 'allow'] as const,
        'refuse',
      ),
    },
  };
}

/** The tracing settings, when a collector is configured; its URL must be http(s). */
function tracingConfig(env: NodeJS.ProcessEnv, role: 'broker' | 'worker' | 'all'): TracingConfig {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT!;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT must be a URL, not "${endpoint}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL, not "${endpoint}"`);
  return {
    endpoint,
    serviceName: env.OTEL_SERVICE_NAME || (role === 'all' ? 'interoperator' : `interoperator-${role}`),
  };
}

/** What a codec token must be: it may appear in a URL path. */
export const CODEC_TOKEN_RULE =
  '16 characters or more of letters, digits and - . _ ~ (it may appear in a URL path)';
export const isCodecToken = (token: string): boolean => /^[A-Za-z0-9._~-]{16,}$/.test(token);

/** The codec endpoint's settings, when its port is set. */
function codecConfig(env: NodeJS.ProcessEnv, brokerPort: number): { codec?: CodecConfig } {
  if (!env.INTEROP_CODEC_PORT) return {};
  const port = number(env, 'INTEROP_CODEC_PORT', 0, { max: 65535 });
  if (!Number.isInteger(port))
    throw new ConfigError(`INTEROP_CODEC_PORT must be a port number, not "${port}"`);
  if (port === brokerPort)
    throw new ConfigError(
      'INTEROP_CODEC_PORT must differ from INTEROP_PORT: the codec endpoint has its own port',
    );
  const token = requiredSecret(env, 'INTEROP_CODEC_TOKEN');
  if ('value' in token && !isCodecToken(token.value))
    throw new ConfigError(`INTEROP_CODEC_TOKEN must be ${CODEC_TOKEN_RULE}`);
  const origins = (env.INTEROP_CODEC_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean)
    .map((o) => {
      let url: URL | undefined;
      try {
        url = new URL(o);
      } catch {
        url = undefined;
      }
      if (!url || !['http:', 'https:'].includes(url.protocol) || url.origin !== o.replace(/\/$/, ''))
        throw new ConfigError(
          `INTEROP_CODEC_ORIGINS: "${o}" is not an origin (scheme://host[:port], no path); "*" is not allowed`,
        );
      return url.origin;
    });
  return { codec: { port, token, origins } };
}

/** The cluster a worker serves alone, if any: only a `worker` may, and not the master. */
function clusterWorkerConfig(
  env: NodeJS.ProcessEnv,
  role: 'broker' | 'worker' | 'all',
): Pick<Config, 'cluster'> {
  const id = env.INTEROP_CLUSTER_ID?.trim();
  if (!id) return {};
  if (role !== 'worker')
    throw new ConfigError(
      `INTEROP_CLUSTER_ID is for a worker of one cluster: start it as "worker", not "${role}"`,
    );
  if (id === (env.INTEROP_MASTER_CLUSTER_ID || '1'))
    throw new ConfigError(`INTEROP_CLUSTER_ID: ${id} is the master, which the landscape's workers serve`);
  const kubeconfig = env.INTEROP_CLUSTER_KUBECONFIG || undefined;
  return { cluster: { id, ...(kubeconfig ? { kubeconfig } : {}) } };
}

/** What a build id may hold: an image tag's characters (`.` too: `1.4.2`). */
const BUILD_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** What a worker deployment's name may hold: no `.`, which separates it from the build id. */
const DEPLOYMENT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,199}$/;

/** The worker's deployment version, when INTEROP_WORKER_BUILD_ID names one. */
export function workerVersioningConfig(env: NodeJS.ProcessEnv): { versioning?: WorkerVersioning } {
  const buildId = env.INTEROP_WORKER_BUILD_ID?.trim();
  if (!buildId) return {};
  if (!BUILD_ID.test(buildId))
    throw new ConfigError(
      `INTEROP_WORKER_BUILD_ID must be letters, digits, "-", "_" and "." (at most 128), not "${buildId}"`,
    );
  return { versioning: { deploymentName: workerDeploymentName(env), buildId } };
}

/** INTEROP_WORKER_DEPLOYMENT, or the name made of the task queue's. */
function workerDeploymentName(env: NodeJS.ProcessEnv): string {
  const deploymentName =
    env.INTEROP_WORKER_DEPLOYMENT?.trim() ||
    (env.INTEROP_TASK_QUEUE || 'interoperator').replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 200);
  if (!DEPLOYMENT_NAME.test(deploymentName))
    throw new ConfigError(
      `INTEROP_WORKER_DEPLOYMENT must be letters, digits, "-" and "_" (at most 200), not "${deploymentName}"`,
    );
  return deploymentName;
}

/**
 * What `interoperator worker-version` acts on: the worker deployment (INTEROP_WORKER_DEPLOYMENT,
 * or the task queue's name as the workers derive it) in the Temporal namespace the workers use
 * (INTEROP_TEMPORAL_ADDRESS, INTEROP_TEMPORAL_NAMESPACE, the TLS settings and API key). It needs
 * no payload keys: it reads no payload.
 */
export function loadWorkerDeploymentTarget(env: NodeJS.ProcessEnv = process.env): WorkerDeploymentTarget {
  return {
    temporal: {
      address: env.INTEROP_TEMPORAL_ADDRESS || '127.0.0.1:7233',
      namespace: env.INTEROP_TEMPORAL_NAMESPACE || 'default',
      ...temporalTlsConfig(env),
      ...(env.INTEROP_TEMPORAL_API_KEY ? { apiKey: env.INTEROP_TEMPORAL_API_KEY } : {}),
    },
    deploymentName: workerDeploymentName(env),
  };
}

/** The scheduler settings, checked: an unknown scheduler name stops the process. */
function schedulingConfig(env: NodeJS.ProcessEnv): SchedulingConfig {
  const checked = <T>(name: string, parse: (value: string) => T, fallback: T): T => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    try {
      return parse(raw);
    } catch (err) {
      throw new ConfigError(`${name}: ${(err as Error).message}`);
    }
  };
  const scheduler = checked<SchedulerName>('INTEROP_SCHEDULER', (v) => parseSchedulerName(v), 'default');
  const plans = checked('INTEROP_PLAN_SCHEDULERS', (v) => parsePlanSchedulers(v, 'the entry'), {});
  return { scheduler, ...(Object.keys(plans).length > 0 ? { plans } : {}) };
}

/**
 * Node flags the broker's process starts with: the Helm chart, docker-compose.yml, the image's
 * default command (`all`), `make run` (the dev stack serves the broker from its own process), the
 * end-to-end tests and the benchmarks all use these (test/unit/charts checks the first four).
 *
 * `--no-memory-reducer`: when a burst of operations ends and the reads go on, V8's memory reducer
 * takes the lull for the end of the work and compacts the heap (most of it the Temporal and
 * Kubernetes client code): a pause that holds every read in flight and shows in the tail latency of
 * last_operation (the read benchmark, docs/benchmarks.md). Without it the heap keeps its size until
 * the next ordinary collection, which steady reads seldom cause.
 *
 * `--max-semi-space-size=8` (MB; V8's default here is 16): the young generation, where each
 * request's short-lived objects live, is collected twice as often at half the size. Under a
 * hundred concurrent reads the process's peak memory is lower by about the difference, and the
 * requests' CPU did not measurably change (docs/benchmarks.md).
 *
 * Both must be given on the command line: V8 reads them once, when the heap is set up.
 */
export const BROKER_NODE_FLAGS: readonly string[] = ['--no-memory-reducer', '--max-semi-space-size=8'];
