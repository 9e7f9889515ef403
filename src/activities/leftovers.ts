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
  type AppliedResource,
  type SFServiceInstance,
} from '../resources/types.js';
import { deleteNamespace } from './namespaces.js';
import { deleteCopy } from './placement.js';

export interface LeftoverDeps {
  readonly clusters: ClusterDirectory;
  /** Namespace for all instances; each its own `sf-<id>` when unset. */
  readonly instanceNamespace?: string;
}

/** A copy on a cluster of an instance's record: where it is, and the instance's id. */
export interface InstanceCopy {
  readonly namespace: string;
  readonly name: string;
  readonly instanceId: string;
}

/** A copy left over on a cluster, with the objects its master record lists (none when the record is gone). */
export interface Leftover extends InstanceCopy {
  readonly resources: readonly AppliedResource[];
}

export function leftoverActivities({ clusters, instanceNamespace: shared }: LeftoverDeps) {
  const master = clusters.master;

  /** The copies of instance records on the sister `clusterId`. */
  async function instanceCopiesOn(clusterId: string): Promise<InstanceCopy[]> {
    if (clusterId === clusters.masterId) return [];
    const sister = await clusters.get(clusterId);
    const copies = await listRecordsAnywhere<SFServiceInstance>(sister, SFSERVICEINSTANCE, shared);
    return copies.map((copy) => ({
      namespace: copy.metadata.namespace!,
      name: copy.metadata.name,
      instanceId: copy.spec.instanceId ?? copy.metadata.name,
    }));
  }

  /** Which of the copies on the sister `clusterId` are left over, by the master's records. */
  async function leftoversAmong(clusterId: string, copies: readonly InstanceCopy[]): Promise<Leftover[]> {
    const leftovers: Leftover[] = [];
    for (const copy of copies) {
      const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, copy.namespace, copy.name);
      if (isLeftover(clusterId, record))
        leftovers.push({ ...copy, resources: record?.status?.resources ?? [] });
    }
    return leftovers;
  }

  /**
   * Removes from the sister `clusterId` the leftovers: the objects listed, the copies of the
   * instance's binding and instance records, and its namespace; returns their ids.
   */
  async function removeInstanceCopies(clusterId: string, leftovers: readonly Leftover[]): Promise<string[]> {
    if (clusterId === clusters.masterId) return [];
    const sister = await clusters.get(clusterId);
    for (const { namespace, name, instanceId, resources } of leftovers) {
      for (const ref of resources) await deleteObject(sister, ref);
      const bindings = await listRecords<SFServiceBinding>(
        sister,
        SFSERVICEBINDING,
        namespace,
        `${LABELS.instanceId}=${labelValue(instanceId)}`,
      );
      for (const binding of bindings) await deleteCopy(sister, binding);
      await deleteCopy(sister, {
        apiVersion: SFSERVICEINSTANCE.apiVersion,
        kind: SFSERVICEINSTANCE.kind,
        metadata: { name, namespace },
      });
      if (!shared) await deleteNamespace(sister, namespace);
    }
    return leftovers.map((leftover) => leftover.instanceId);
  }

  return {
    instanceCopiesOn,
    leftoversAmong,
    removeInstanceCopies,
    /**
     * Removes from the sister `clusterId` what it holds of instances placed elsewhere now (or
     * gone); returns their ids. Safe to run again; the master is never swept. On a cluster with
     * a worker of its own, which reads no records on the master, the three parts run apart: the
     * copies listed there, the leftovers decided by the landscape, removed there.
     */
    async removeLeftovers(clusterId: string): Promise<string[]> {
      const copies = await instanceCopiesOn(clusterId);
      return removeInstanceCopies(clusterId, await leftoversAmong(clusterId, copies));
    },
  };
}

export type LeftoverActivities = ReturnType<typeof leftoverActivities>;
