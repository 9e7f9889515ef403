/**
 * One set of API clients per registered cluster, by cluster id: the master's given, the others
 * built from the registry's kubeconfig Secrets on first use and kept.
 */
import { MASTER_CLUSTER_ID } from '../resources/types.js';
import type { ClusterClient } from './clients.js';
import { clientForCluster } from './cluster-registry.js';

/** Clients of every registered cluster, by id (`1` is the master). */
export interface ClusterDirectory {
  readonly master: ClusterClient;
  /** Clients of a cluster; fails (retryably) when the cluster is not registered or unreachable. */
  get(clusterId: string): Promise<ClusterClient>;
}

export function clusterDirectory(master: ClusterClient, namespace: string): ClusterDirectory {
  const known = new Map<string, ClusterClient>([[MASTER_CLUSTER_ID, master]]);
  return {
    master,
    async get(clusterId: string): Promise<ClusterClient> {
      const cached = known.get(clusterId);
      if (cached) return cached;
      const client = await clientForCluster(master, namespace, clusterId);
      if (!client)
        throw new Error(`cluster ${clusterId} is not registered (no SFCluster ${namespace}/${clusterId})`);
      known.set(clusterId, client);
      return client;
    },
  };
}
