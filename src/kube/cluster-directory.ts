/**
 * One set of API clients per registered cluster, by cluster id: the master's given, the others
 * built from the registry's kubeconfig Secrets.
 *
 * Every call reads the cluster's SFCluster and its Secret from the master (side by side, over a
 * kept-alive connection) and reuses the clients built for that version of the Secret: a rotated
 * kubeconfig is used by the next call, and a cluster removed from the registry is refused at once.
 * The directory of a worker started for one cluster alone holds that cluster's clients, built from
 * the worker's own credentials, and the master's.
 */
import { MASTER_CLUSTER_ID, SFCLUSTER, type SFCluster } from '../resources/types.js';
import type { ClusterClient, ClusterClientOptions } from './clients.js';
import { clusterClientFromKubeconfig } from './clients.js';
import { readClusterKubeconfig } from './cluster-registry.js';
import { getRecord } from './custom-objects.js';
import { statusCodeOf } from './errors.js';

/** Clients of every registered cluster, by id. */
export interface ClusterDirectory {
  readonly master: ClusterClient;
  /** Id of the master cluster (`1` unless configured otherwise). */
  readonly masterId: string;
  /** Namespace of the registry (the SFClusters and their Secrets) in the master. */
  readonly namespace: string;
  /** Clients of a cluster; fails (retryably) when the cluster is not registered or unreachable. */
  get(clusterId: string): Promise<ClusterClient>;
  /**
   * Forgets the clients of a cluster, so that the next call builds them afresh from its Secret.
   * Called on an authentication failure.
   */
  forget(clusterId: string): void;
  /**
   * The task queue of the worker that serves the cluster alone (its SFCluster's `spec.taskQueue`);
   * undefined for the master, for a cluster the landscape's workers reach, and for one not registered.
   */
  taskQueueOf(clusterId: string): Promise<string | undefined>;
}

export interface ClusterDirectoryOptions {
  /** @default MASTER_CLUSTER_ID */
  readonly masterId?: string;
  /** The cluster this worker serves alone, with clients from its own credentials. */
  readonly local?: ClusterClient;
  /** How the clients of the other clusters are built. */
  readonly clients?: ClusterClientOptions;
}

/** Whether an API error says the cluster refused the credentials. */
export const isUnauthorized = (err: unknown): boolean => statusCodeOf(err) === 401;

export function clusterDirectory(
  master: ClusterClient,
  namespace: string,
  options: ClusterDirectoryOptions = {},
): ClusterDirectory {
  const masterId = options.masterId ?? MASTER_CLUSTER_ID;
  /** Clients by cluster id, with the Secret version they were built from. */
  const known = new Map<string, { secretRef: string; version: string; client: ClusterClient }>();
  return {
    master,
    masterId,
    namespace,
    async get(clusterId: string): Promise<ClusterClient> {
      if (clusterId === masterId) return master;
      if (clusterId === options.local?.id) return options.local;
      const cached = known.get(clusterId);
      const current = await readClusterKubeconfig(master, namespace, clusterId, cached?.secretRef);
      if (!current) {
        known.delete(clusterId);
        throw new Error(`cluster ${clusterId} is not registered (no SFCluster ${namespace}/${clusterId})`);
      }
      if (cached && cached.version === current.version) return cached.client;
      const client = clusterClientFromKubeconfig(clusterId, current.kubeconfig, {
        ...options.clients,
        owner: namespace,
      });
      known.set(clusterId, { secretRef: current.secretRef, version: current.version, client });
      return client;
    },
    forget(clusterId: string): void {
      known.delete(clusterId);
    },
    async taskQueueOf(clusterId: string): Promise<string | undefined> {
      if (clusterId === masterId) return undefined;
      return (await getRecord<SFCluster>(master, SFCLUSTER, namespace, clusterId))?.spec.taskQueue;
    },
  };
}
