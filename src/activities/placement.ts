/**
 * Where an instance runs. Scheduling places a new instance on a cluster and keeps an existing one
 * where it is; replication copies the instance record to that cluster. Every instance is placed on
 * the master (cluster `1`), where its record already is; schedulers that choose among clusters,
 * and replication to them, plug in here.
 */
import { patchRecord } from '../kube/custom-objects.js';
import { isNotFound } from '../kube/errors.js';
import { LABELS, labelValue } from '../resources/names.js';
import { MASTER_CLUSTER_ID, SFSERVICEINSTANCE } from '../resources/types.js';
import type { InstanceRef } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { retryable } from './failures.js';

export function placementActivities({ clusters }: ActivityDeps) {
  const master = clusters.master;
  return {
    /**
     * Places the instance on a cluster (once; later operations keep it there). Returns the cluster
     * id. The reference comes from recording the request in the same operation, and no other
     * operation runs on the instance meanwhile, so its placement is current.
     */
    async scheduleInstance(ref: InstanceRef): Promise<string> {
      if (ref.clusterId) return ref.clusterId;
      const clusterId = MASTER_CLUSTER_ID;
      try {
        await patchRecord(master, SFSERVICEINSTANCE, ref.namespace, ref.name, {
          metadata: { labels: { [LABELS.clusterId]: labelValue(clusterId) } },
          spec: { clusterId },
        });
      } catch (err) {
        if (isNotFound(err)) throw retryable(`instance ${ref.instanceId} has no record`);
        throw err;
      }
      return clusterId;
    },

    /** Makes the instance record present on its cluster. The master already holds it. */
    async replicateInstance(ref: InstanceRef, clusterId: string): Promise<void> {
      if (clusterId === MASTER_CLUSTER_ID) return;
      throw retryable(
        `replication to cluster ${clusterId} of instance ${ref.instanceId} is not available yet`,
      );
    },
  };
}
