/**
 * The steps sent to the worker of a cluster with a worker of its own. That worker holds only the
 * payload keys derived for its cluster (temporal/codec.ts), so every argument of a step sent there
 * is marked for the cluster (for-cluster.ts): the payload converter (temporal/payload-converter.ts) notes the
 * cluster in the payload's metadata, and the codec encrypts it with the cluster's key. The step
 * receives its arguments as they were given; nothing else of the workflow's history (its input,
 * results, other steps) is readable with the cluster's keys.
 */
import { proxyActivities, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import { forCluster } from './for-cluster.js';

/** A cluster with a worker of its own: its id in the registry and the task queue its worker polls. */
export interface ClusterWorker {
  readonly clusterId: string;
  readonly taskQueue: string;
}

/**
 * The activities `A` as steps on the worker of `worker.clusterId`: scheduled on its task queue,
 * each argument marked for its cluster.
 */
export function clusterWorkerSteps<A extends object>(
  worker: ClusterWorker,
  options: ActivityOptions,
): ActivityInterfaceFor<A> {
  const steps = proxyActivities<A>({ ...options, taskQueue: worker.taskQueue }) as Record<
    string,
    (...args: unknown[]) => Promise<unknown>
  >;
  return new Proxy({} as ActivityInterfaceFor<A>, {
    get: (_, name) =>
      typeof name === 'string'
        ? (...args: unknown[]) => steps[name]!(...args.map((arg) => forCluster(worker.clusterId, arg)))
        : undefined,
  });
}
