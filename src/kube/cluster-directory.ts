/** Clients of every registered cluster, by id, built from the registry's kubeconfig Secrets and kept. */
import type { ClusterDirectory } from '../activities/deps.js';
import { MASTER_CLUSTER_ID } from '../resources/types.js';
import type { ClusterClient } from './clients.js';
import { clientForCluster } from './cluster-registry.js';

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
