#!/usr/bin/env node
/**
 * The inter-operator's processes: `broker` (the OSB API), `worker` (the workflows and
 * activities), or `all` (both, for small landscapes and the dev stack). Configured by environment
 * variables (src/config.ts); stops cleanly on SIGINT/SIGTERM.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startBroker } from './roots/broker.js';
import { ConfigError, loadConfig } from './config.js';
import { clusterClientFromFile } from './kube/clients.js';
import { jsonLogger } from './log.js';
import { prepareMonitoring } from './roots/monitoring.js';
import { startClusterWorker, startWorker } from './roots/worker.js';
import { configureRenderer } from './templates/index.js';

type Role = 'broker' | 'worker' | 'all';

async function main(): Promise<void> {
  const role = (process.argv[2] ?? 'all') as Role;
  if (!['broker', 'worker', 'all'].includes(role)) {
    console.error('usage: main.js broker|worker|all');
    process.exit(2);
  }
  const config = loadConfig(role);
  const log = jsonLogger(role, config.logLevel);
  const monitoring = await prepareMonitoring(role, config.metrics, log);
  // We stop the worker ourselves on SIGINT/SIGTERM, after the broker.
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    shutdownSignals: [],
    ...(monitoring.telemetryOptions ? { telemetryOptions: monitoring.telemetryOptions } : {}),
  });
  if (config.renderer.wasmFile) await configureRenderer({ wasmFile: config.renderer.wasmFile });
  const master = clusterClientFromFile(config.masterClusterId, config.masterKubeconfig, {
    ...(monitoring.worker ? { calls: monitoring.worker } : {}),
  });
  // Probes answer from the start: live, and not ready until what the process runs is.
  await monitoring.listen();
  const stops: (() => Promise<void>)[] = [() => monitoring.stop()];
  if (role !== 'broker') {
    const { cluster } = config;
    const worker = cluster
      ? await startClusterWorker({ ...config, cluster }, master, log, monitoring)
      : await startWorker(config, master, log, monitoring);
    stops.push(() => worker.shutdown());
    log.info('worker polling', {
      taskQueue: worker.taskQueue,
      ...(cluster ? { clusterId: cluster.id } : {}),
    });
  }
  if (role !== 'worker') {
    const broker = await startBroker(config, master, jsonLogger('broker', config.logLevel), monitoring);
    stops.push(() => broker.stop(config.broker.shutdownDelayMs));
  }
  const stop = async () => {
    for (const s of stops.reverse()) await s();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err: unknown) => {
  console.error(
    err instanceof ConfigError
      ? `configuration: ${err.message}`
      : `failed to start: ${(err as Error).message}`,
  );
  process.exit(1);
});
