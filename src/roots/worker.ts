/** The worker: runs the operation workflows and their activities from the task queue. Scale it horizontally. */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { Config } from '../config.js';
import type { ClusterClient } from '../kube/clients.js';
import { startCatalogCache } from '../kube/catalog-cache.js';
import { clusterDirectory } from '../kube/cluster-directory.js';
import type { Logger } from '../log.js';
import { closeRenderer, renderObjects, renderValues } from '../templates/index.js';
import { dataConverter } from '../temporal/connection.js';

export interface RunningWorker {
  /** Resolves when the worker has stopped. */
  readonly done: Promise<void>;
  shutdown(): Promise<void>;
}

export async function startWorker(
  config: Config,
  master: ClusterClient,
  log: Logger,
): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const catalog = await startCatalogCache(master, config.namespace, (err) =>
    log.warn('catalog watch failed; restarting', { error: String(err) }),
  );
  const activities = createActivities({
    clusters: clusterDirectory(master, config.namespace),
    catalog,
    renderer: { renderObjects, renderValues },
    ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
    registryNamespace: config.namespace,
    scheduling: config.scheduling,
  });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    workflowsPath: fileURLToPath(new URL('../workflows/index.js', import.meta.url)),
    activities,
    maxConcurrentWorkflowTaskExecutions: config.worker.concurrentOperations,
    maxConcurrentLocalActivityExecutions: config.worker.concurrentSteps,
    maxConcurrentActivityTaskExecutions: config.worker.concurrentSteps,
    dataConverter: dataConverter(config.temporal),
  });
  const done = worker.run().finally(async () => {
    await catalog.stop();
    await closeRenderer();
    await connection.close();
  });
  return {
    done,
    shutdown: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
