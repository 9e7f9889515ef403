/**
 * Servers of a fault test's own, which it may kill and start again without disturbing the shared
 * servers of the integration run: a Temporal dev server on a SQLite file (history survives its
 * restart), one etcd (its data survives its restart), the master apiserver and a sister apiserver that can be stopped and started
 * on the same address, with our CRDs installed and both clusters registered.
 *
 * Once started, `environment()` and everything built on it (test/support/env.ts, system.ts) points
 * at these servers: the file it reads is this environment's.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crdFiles, type EnvironmentInfo } from '../../dev/local/environment.js';
import {
  startControlPlane,
  startExtraCluster,
  type ExtraCluster,
  type LocalCluster,
} from '../../dev/local/kube-control-plane.js';
import { freePort } from '../../dev/local/processes.js';
import { startTemporalDevServer, type TemporalDevServer } from '../../dev/local/temporal-dev-server.js';
import { clusterClientFromFile, type ClusterClient } from '../../src/kube/clients.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { getRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { instanceNamespace, LABELS, labelValue, resourceName } from '../../src/resources/names.js';
import { SFCLUSTER, SFSERVICEBINDING, SFSERVICEINSTANCE } from '../../src/resources/types.js';
import { auditUntilSettled, type Verdict } from './audit.js';
import { temporalClient } from './env.js';
import {
  PLAN_ID,
  PLAN_KINDS,
  Platform,
  SERVICE_ID,
  type Operation,
  type PlatformOptions,
} from './fault-run.js';
import { sweepForSecrets, type Credential } from './secrets-sweep.js';
import {
  CREDENTIALS,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from './system.js';

/** The id of the sister cluster, the one whose apiserver a test may restart. */
export const SISTER_ID = 'sister-1';

export interface FaultEnvironment {
  readonly info: EnvironmentInfo;
  /** Admin clients, master first. */
  readonly clusters: readonly ClusterClient[];
  /** SIGKILLs the Temporal dev server; its SQLite file stays. */
  killTemporal(): Promise<void>;
  /** Starts the Temporal dev server again on the same port and file; resolves once it serves. */
  startTemporal(): Promise<void>;
  /** Stops the sister's apiserver (what it stored stays in etcd). */
  stopSister(): Promise<void>;
  /** Starts the sister's apiserver again on the same address. */
  startSister(): Promise<void>;
  /** SIGKILLs etcd, under every apiserver; its data stays. */
  killEtcd(): Promise<void>;
  /** Starts etcd again on the same ports and data. */
  startEtcd(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the servers and points `environment()` at them (process.env.INTEROP_TEST_ENV of this test
 * file; jest gives each file its own copy of the environment variables).
 */
export async function startFaultEnvironment(name: string): Promise<FaultEnvironment> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), `interop-fault-${name}-`));
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const temporalPort = await freePort();
    const dbFile = path.join(workDir, 'temporal.sqlite');
    const startTemporal = () =>
      startTemporalDevServer({ workDir: path.join(workDir, 'temporal'), port: temporalPort, dbFile });
    const crds = readCrds(crdFiles());
    // Before the controller managers start, so that their garbage collectors know our kinds.
    const beforeControllers = (cluster: LocalCluster) =>
      installCrds(clusterClientFromFile(cluster.id, cluster.kubeconfigPath), crds);
    const [controlPlane, firstTemporal] = await Promise.all([
      startControlPlane({ workDir: path.join(workDir, 'kube'), sisters: 0, beforeControllers }),
      startTemporal(),
    ]);
    let temporal: TemporalDevServer | undefined = firstTemporal;
    stops.push(() => controlPlane.stop());
    stops.push(async () => temporal?.stop());
    const sister: ExtraCluster = await startExtraCluster({
      id: SISTER_ID,
      etcdUrl: controlPlane.etcdUrl,
      pkiDir: controlPlane.pkiDir,
      workDir: path.join(workDir, 'kube'),
      beforeControllers,
    });
    stops.push(() => sister.stop());

    const files = [
      { id: controlPlane.master.id, kubeconfigPath: controlPlane.master.kubeconfigPath },
      { id: SISTER_ID, kubeconfigPath: sister.cluster.kubeconfigPath },
    ];
    const clusters = files.map((c) => clusterClientFromFile(c.id, c.kubeconfigPath));
    const namespace = 'interoperator';
    // Nothing probes the clusters (system.ts turns the health workflow off): they are written
    // running, as the health workflow would, so that the schedulers place instances on both.
    for (const c of files) {
      await registerCluster(clusters[0]!, namespace, c.id, c.kubeconfigPath);
      await patchRecordStatus(clusters[0]!, SFCLUSTER, namespace, c.id, { phase: 'running' });
    }

    const info: EnvironmentInfo = {
      temporal: { address: firstTemporal.address, namespace: firstTemporal.namespace },
      clusters: files,
      namespace,
      workDir,
      kube: { etcdUrl: controlPlane.etcdUrl, pkiDir: controlPlane.pkiDir },
    };
    const file = path.join(workDir, 'environment.json');
    writeFileSync(file, JSON.stringify(info, null, 2));
    process.env.INTEROP_TEST_ENV = file;
    return {
      info,
      clusters,
      killTemporal: async () => {
        const running = temporal;
        temporal = undefined;
        await running?.kill();
      },
      startTemporal: async () => {
        if (!temporal) temporal = await startTemporal();
      },
      stopSister: () => sister.stop(),
      startSister: () => sister.start(),
      killEtcd: () => controlPlane.killEtcd(),
      startEtcd: () => controlPlane.startEtcd(),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * A fault file's landscape: its own servers, the example operator on them, and the settings its
 * broker and worker processes share (placement by turns, so instances land on the master and the
 * sister). Every process started through it is stopped after the file, and every platform made
 * through it is read by the secrets sweep.
 */
export interface FaultLandscape {
  /** The servers (set once the file's beforeAll ran). */
  readonly env: FaultEnvironment;
  /** The settings of the run's processes. */
  readonly settings: SystemSettings;
  /** Starts a process of the run (its settings, or `overrides` over them) and waits until it serves or polls. */
  start(role: 'all' | 'broker' | 'worker', overrides?: Partial<SystemSettings>): Promise<SystemProcess>;
  /** A platform that sends its requests to `broker()`. */
  platform(broker: () => string, options?: PlatformOptions): Platform;
  /** Audits the platform's operations (every cluster, the records, Temporal's visibility) until settled. */
  audit(platform: Platform, label: string, earlierInstances?: readonly string[]): Promise<Verdict>;
}

/**
 * Registers the landscape's setup and teardown in the current `describe` (the servers and the
 * operator before its tests; the processes, the operator and the servers after them).
 */
export function faultLandscape(name: string): FaultLandscape {
  let env: FaultEnvironment | undefined;
  let settings: SystemSettings | undefined;
  let operator: { stop(): Promise<void> } | undefined;
  const processes: SystemProcess[] = [];
  const platforms: Platform[] = [];
  const landscape: FaultLandscape = {
    get env() {
      if (!env) throw new Error('the fault environment is not started (used outside a test?)');
      return env;
    },
    get settings() {
      if (!settings) throw new Error('the fault environment is not started (used outside a test?)');
      return settings;
    },
    async start(role, overrides = {}) {
      const started = await startProcess(role, { ...landscape.settings, ...overrides });
      processes.push(started);
      return started;
    },
    platform(broker, options = {}) {
      const platform = new Platform(broker, {
        recordGone: (what) => recordGone(landscape.env.clusters[0]!, what),
        ...options,
      });
      platforms.push(platform);
      return platform;
    },
    async audit(platform, label, earlierInstances) {
      const temporal = await temporalClient(landscape.settings.payloadKeys);
      try {
        return await auditUntilSettled(
          {
            clusters: landscape.env.clusters,
            temporal: temporal.client,
            operations: platform.operations,
            instances: platform.expected(),
            kinds: PLAN_KINDS,
            ...(earlierInstances ? { earlierInstances } : {}),
          },
          label,
        );
      } finally {
        await temporal.close();
      }
    },
  };
  landscapes.set(landscape, { platforms, processes });
  beforeAll(async () => {
    env = await startFaultEnvironment(name);
    operator = await startOperator(undefined, path.join(env.info.workDir, 'example-operator.log'));
    settings = await systemSettings({ INTEROP_SCHEDULER: 'round-robin' });
  }, 300_000);
  afterAll(async () => {
    for (const p of processes.reverse()) await p.stop();
    await operator?.stop();
    await env?.stop();
  }, 120_000);
  return landscape;
}

/** What a landscape started and made, for its sweep. */
const landscapes = new WeakMap<FaultLandscape, { platforms: Platform[]; processes: SystemProcess[] }>();

/**
 * Registers the file's last test: the secrets sweep of the run (test/support/secrets-sweep.ts).
 * Once every process stopped (so that their logs are whole), it decodes every workflow history of
 * the run's task queue and looks, there and in the search attributes, in every log of the
 * landscape (the processes' and the servers'), in the records and the Events of the run's
 * namespaces and in every description the platforms were answered, for the broker's password, the payload key and
 * every binding's credentials: no hit. A credential planted in a log of the run must be found, and
 * the decoded histories must hold what only the encrypted payloads hold, or the sweep proves nothing.
 */
export function endsWithSecretsSweep(landscape: FaultLandscape, rotated: () => Rotated = () => ({})): void {
  test('THEN no credential of the run is in the decoded histories, search attributes, logs, records, Events or descriptions', async () => {
    const { result, plantedLog } = await sweepLandscape(landscape, rotated());
    expect(result.hits).toEqual([`a credential planted in a log in log ${plantedLog}`]);
    expect(result.executions).toBeGreaterThan(0);
    const decoded = [...result.corpus].filter(([where]) => where.startsWith('workflow'));
    expect(decoded.some(([, text]) => text.includes(`"planId":"${PLAN_ID}"`))).toBe(true);
  }, 300_000);
}

/** What was rotated during a run: the payload keys the landscape ends with, and credentials it used. */
export interface Rotated {
  readonly payloadKeys?: string;
  readonly credentials?: readonly Credential[];
}

/**
 * The secrets sweep of a landscape's run, once every process of it stopped (so that their logs are
 * whole); see {@link endsWithSecretsSweep}. A credential is planted in a log of the run first: the
 * sweep's hits include it, or the sweep read nothing.
 */
export async function sweepLandscape(landscape: FaultLandscape, more: Rotated = {}) {
  const { platforms, processes } = landscapes.get(landscape)!;
  for (const p of processes) await p.stop();
  const { env } = landscape;
  const settings = {
    ...landscape.settings,
    ...(more.payloadKeys ? { payloadKeys: more.payloadKeys } : {}),
  };
  const planted = `planted-${randomBytes(12).toString('hex')}`;
  const plantedLog = path.join(env.info.workDir, 'planted.log');
  writeFileSync(plantedLog, `{"level":"info","message":"a line that leaks ${planted}"}\n`);
  const instances = platforms.flatMap((p) => [...p.instances.keys()]);
  const result = await sweepForSecrets({
    taskQueue: settings.taskQueue,
    payloadKeys: settings.payloadKeys,
    credentials: [
      ['the broker password', CREDENTIALS.password],
      ...settings.payloadKeys
        .split(',')
        .map((key, i): Credential => [`payload key ${i + 1}`, key.split(':')[1]!]),
      ...(more.credentials ?? []),
      ...platforms.flatMap((p) => p.credentials),
      ['a credential planted in a log', planted],
    ],
    logFiles: logFilesUnder(env.info.workDir),
    records: {
      master: env.clusters[0]!,
      labelSelector: `${LABELS.serviceId}=${labelValue(SERVICE_ID)}`,
    },
    eventNamespaces: [env.info.namespace, ...instances.map((id) => instanceNamespace(id))],
    texts: Object.fromEntries(
      platforms.map((p, i) => [`descriptions seen by platform ${i + 1}`, p.descriptions.join('\n')]),
    ),
  });
  const bindings = platforms.reduce((n, p) => n + p.credentials.length, 0);
  console.log(
    `[secrets sweep] ${result.executions} executions, ${result.payloads} payloads decoded, ` +
      `${result.corpus.size} sources read, ${bindings} bindings' credentials sought: ` +
      `${result.hits.length - 1} hits, the planted one found: ${result.hits.some((h) => h.startsWith('a credential planted'))}`,
  );
  return { result, plantedLog };
}

/** Every `.log` file below `dir`. */
function logFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.log'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** Whether the record of an operation's instance, or of its binding, is gone from the master. */
async function recordGone(master: ClusterClient, what: Operation): Promise<boolean> {
  const namespace = instanceNamespace(what.instanceId);
  const record = what.bindingId
    ? await getRecord(master, SFSERVICEBINDING, namespace, resourceName(what.bindingId))
    : await getRecord(master, SFSERVICEINSTANCE, namespace, resourceName(what.instanceId));
  return record === undefined;
}
