#!/usr/bin/env node
/**
 * The inter-operator's processes: `broker` (the OSB API), `worker` (the workflows and
 * activities), or `all` (both, for small landscapes and the dev stack). Configured by environment
 * variables (src/config.ts); stops cleanly on SIGINT/SIGTERM. `selfcheck` needs no configuration nor
 * server: it checks that the build loads (src/roots/selfcheck.ts), prints what it checked and exits.
 */
import { startBroker } from './roots/broker.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { clusterClientFromFile, type ClusterClient } from './kube/clients.js';
import { labelledMaster, PRIMARY_CLUSTER_LABEL } from './kube/cluster-registry.js';
import { JsonLog, temporalLogLevel, type Logger } from './log.js';
import { prepareMonitoring } from './roots/monitoring.js';
import { selfCheck } from './roots/selfcheck.js';
import { configureRenderer } from './templates/index.js';
import { startTracing } from './tracing.js';

type Role = 'broker' | 'worker' | 'all';

/** Until the configuration is read: its level is not known yet. */
let startLog = new JsonLog().logger('main');

async function main(): Promise<void> {
  if (process.argv[2] === 'selfcheck') {
    for (const line of await selfCheck()) console.log(`ok: ${line}`);
    process.exit(0);
  }
  const role = (process.argv[2] ?? 'all') as Role;
  if (!['broker', 'worker', 'all'].includes(role)) {
    startLog.error('usage: main.js broker|worker|all|selfcheck');
    process.exit(2);
  }
  const loaded = loadConfig(role);
  const logs = new JsonLog(loaded.logLevel);
  startLog = logs.logger(role);
  forwardWarnings(startLog);
  const log = logs.logger(role);
  const monitoring = await prepareMonitoring(role, loaded.metrics, log, loaded.credentialOverlapMs);
  // The worker's SDK and its Core (native) are loaded only where a worker runs: a broker alone
  // reaches Temporal through the client, and spares their memory.
  const workerRoots = role === 'broker' ? undefined : await import('./roots/worker.js');
  if (workerRoots) {
    const { Runtime } = await import('@temporalio/worker');
    Runtime.install({
      // The SDK's logs and, forwarded, its Core's: lines of our JSON log.
      logger: logs.temporalLogger(),
      telemetryOptions: {
        logging: { forward: {}, filter: { core: temporalLogLevel(loaded.logLevel) } },
        ...(monitoring.telemetryOptions ?? {}),
      },
      // We stop the worker ourselves on SIGINT/SIGTERM, after the broker.
      shutdownSignals: [],
    });
  }
  const tracing = loaded.tracing ? startTracing(loaded.tracing) : undefined;
  if (Object.keys(loaded.renderer).length > 0) await configureRenderer(loaded.renderer);
  // Lists of records show this installation's alone: others may share the master.
  const masterClient = (id: string) =>
    clusterClientFromFile(id, loaded.masterKubeconfig, {
      ...(monitoring.worker ? { calls: monitoring.worker } : {}),
      owner: loaded.namespace,
    });
  const config = await withMasterClusterId(loaded, masterClient, log);
  const master = masterClient(config.masterClusterId);
  // Probes answer from the start: live, and not ready until what the process runs is.
  await monitoring.listen();
  const stops: (() => Promise<void>)[] = [() => monitoring.stop()];
  if (tracing) stops.push(() => tracing.shutdown());
  if (workerRoots) {
    const { startClusterWorker, startWorker } = workerRoots;
    const { cluster } = config;
    const worker = cluster
      ? await startClusterWorker({ ...config, cluster }, master, log, monitoring, tracing)
      : await startWorker(config, master, log, monitoring, tracing);
    stops.push(() => worker.shutdown());
    log.info('worker polling', {
      taskQueue: worker.taskQueue,
      ...(cluster ? { clusterId: cluster.id } : {}),
      ...(!cluster && config.worker.versioning
        ? { deployment: config.worker.versioning.deploymentName, buildId: config.worker.versioning.buildId }
        : {}),
    });
  }
  if (role !== 'worker') {
    const broker = await startBroker(config, master, logs.logger('broker'), monitoring, tracing);
    stops.push(() => broker.stop(config.broker.shutdownDelayMs));
  }
  const stop = async () => {
    for (const s of stops.reverse()) await s();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

/**
 * The configuration with the master's id: INTEROP_MASTER_CLUSTER_ID when set, else the SFCluster
 * labelled the master as Service Fabrik marks it, else `1`. A worker of one cluster keeps the
 * setting: its identity may not list the registry.
 */
async function withMasterClusterId(
  config: Config,
  masterClient: (id: string) => ClusterClient,
  log: Logger,
): Promise<Config> {
  if (config.masterClusterIdSet || config.cluster) return config;
  const labelled = await labelledMaster(masterClient(config.masterClusterId), config.namespace);
  if (!labelled || labelled === config.masterClusterId) return config;
  log.info('the master is the SFCluster labelled so', {
    masterClusterId: labelled,
    label: PRIMARY_CLUSTER_LABEL,
  });
  return { ...config, masterClusterId: labelled };
}

/** Node's process warnings (deprecations, ...) as lines of the JSON log rather than text on stderr. */
function forwardWarnings(log: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning) =>
    log.warn('node warning', { warning: warning.name, error: warning.message }),
  );
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) startLog.error('configuration', { error: err.message });
  else startLog.error('failed to start', { error: (err as Error).message });
  process.exit(1);
});
