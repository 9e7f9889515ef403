/**
 * The reservations of the registered clusters (`SFCluster.status.reserved`, instance id to the
 * requests booked for it) as the master holds them: each write is a merge patch of one instance's
 * entry, guarded by the resourceVersion it was decided on, so two writers never overwrite each
 * other's bookings.
 */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { SFCLUSTER, type SFCluster } from '../resources/types.js';
import type { ClusterClient } from './clients.js';
import { listClusters } from './cluster-registry.js';
import { isNotFound, statusCodeOf } from './errors.js';

/** How often a release reads the clusters again after another writer changed one meanwhile. */
const MAX_ATTEMPTS = 20;

const mergePatchOptions = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * Writes entries of a cluster's reservations (null releases one), guarded by the resourceVersion
 * read; false when the cluster changed meanwhile.
 */
export async function writeReservations(
  master: ClusterClient,
  cluster: SFCluster,
  change: Record<string, unknown>,
): Promise<boolean> {
  try {
    await master.custom.patchNamespacedCustomObjectStatus(
      {
        group: SFCLUSTER.group,
        version: SFCLUSTER.version,
        plural: SFCLUSTER.plural,
        namespace: cluster.metadata.namespace!,
        name: cluster.metadata.name,
        body: {
          metadata: { resourceVersion: cluster.metadata.resourceVersion },
          status: { reserved: change },
        },
      },
      mergePatchOptions(),
    );
    return true;
  } catch (err) {
    if (statusCodeOf(err) === 409) return false;
    throw err;
  }
}

/**
 * Releases the instance's reservation on every registered cluster that holds one; the clusters it
 * released. Safe to run again, and for an instance that never reserved anything.
 */
export async function releaseReservations(
  master: ClusterClient,
  namespace: string,
  instanceId: string,
): Promise<string[]> {
  const released = new Set<string>();
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    let clusters: SFCluster[];
    try {
      clusters = await listClusters(master, namespace);
    } catch (err) {
      if (isNotFound(err)) return [...released];
      throw err;
    }
    let lost = false;
    for (const cluster of clusters) {
      // Own keys only: an instance id such as `constructor` is a key like any other.
      if (!Object.hasOwn(cluster.status?.reserved ?? {}, instanceId)) continue;
      if (await writeReservations(master, cluster, { [instanceId]: null }))
        released.add(cluster.metadata.name);
      else lost = true;
    }
    if (!lost) return [...released].sort();
  }
  throw new Error(`releasing the reservation of instance ${instanceId}: the clusters keep changing`);
}
