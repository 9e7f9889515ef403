/**
 * Removing from a cluster that answers again what it still holds of instances that were rebuilt
 * elsewhere while it was lost (clusters/leftovers.ts decides which): the objects their records
 * list, the copies of their binding and instance records (whose garbage collector removes what
 * they own there), and their namespaces. Nothing is applied there: an instance's operations work
 * on the cluster its record names.
 */
import { getRecord, listRecordsAnywhere, listRecords } from '../kube/custom-objects.js';
import { deleteObject } from '../kube/objects.js';
import type { ClusterDirectory } from '../kube/cluster-directory.js';
import { isLeftover } from '../clusters/leftovers.js';
import { LABELS, labelValue } from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import { deleteNamespace } from './namespaces.js';
import { deleteCopy } from './placement.js';

export interface LeftoverDeps {
  readonly clusters: ClusterDirectory;
  /** Namespace for all instances; each its own `sf-<id>` when unset. */
  readonly instanceNamespace?: string;
}

export function leftoverActivities({ clusters, instanceNamespace: shared }: LeftoverDeps) {
  const master = clusters.master;
  return {
    /**
     * Removes from the sister `clusterId` what it holds of instances placed elsewhere now (or
     * gone); returns their ids. Safe to run again; the master is never swept.
     */
    async removeLeftovers(clusterId: string): Promise<string[]> {
      if (clusterId === clusters.masterId) return [];
      const sister = await clusters.get(clusterId);
      const copies = await listRecordsAnywhere<SFServiceInstance>(sister, SFSERVICEINSTANCE, shared);
      const removed: string[] = [];
      for (const copy of copies) {
        const namespace = copy.metadata.namespace!;
        const name = copy.metadata.name;
        const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, namespace, name);
        if (!isLeftover(clusterId, record)) continue;
        for (const ref of record?.status?.resources ?? []) await deleteObject(sister, ref);
        const instanceId = copy.spec.instanceId ?? name;
        const bindings = await listRecords<SFServiceBinding>(
          sister,
          SFSERVICEBINDING,
          namespace,
          `${LABELS.instanceId}=${labelValue(instanceId)}`,
        );
        for (const binding of bindings) await deleteCopy(sister, binding);
        await deleteCopy(sister, copy);
        if (!shared) await deleteNamespace(sister, namespace);
        removed.push(instanceId);
      }
      return removed;
    },
  };
}

export type LeftoverActivities = ReturnType<typeof leftoverActivities>;
