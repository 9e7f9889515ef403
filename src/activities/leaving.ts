/**
 * What the master keeps of an instance leaving a cluster, and how it goes once the instance is
 * off it: the instance's reservation on that cluster's SFCluster, and its record's leaving label.
 * Run by the move's step on the master's side, and by the landscape for a cluster with a worker
 * of its own (a `leftCluster` write, resources/master-writes.ts).
 */
import type { ClusterClient } from '../kube/clients.js';
import { getRecord, patchRecord } from '../kube/custom-objects.js';
import { isNotFound } from '../kube/errors.js';
import { writeReservations } from '../kube/reservations.js';
import { LABELS, labelValue } from '../resources/names.js';
import { SFCLUSTER, SFSERVICEINSTANCE, type SFCluster, type SFServiceInstance } from '../resources/types.js';
import type { InstanceRef } from '../workflows/messages.js';
import { retryable } from './failures.js';

/** Releases the instance's reservation on one cluster, registered in `registry`; safe to repeat. */
export async function releaseReservationOn(
  master: ClusterClient,
  registry: string,
  clusterId: string,
  instanceId: string,
): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const cluster = await getRecord<SFCluster>(master, SFCLUSTER, registry, clusterId);
    if (!cluster || !Object.hasOwn(cluster.status?.reserved ?? {}, instanceId)) return;
    if (await writeReservations(master, cluster, { [instanceId]: null })) return;
  }
  throw retryable(
    `releasing the reservation of instance ${instanceId} on cluster ${clusterId}: it keeps changing`,
  );
}

/** Takes the record's leaving label off when it names the cluster; safe to repeat. */
export async function unlabelLeaving(
  master: ClusterClient,
  instance: { readonly namespace: string; readonly name: string },
  clusterId: string,
): Promise<void> {
  const record = await getRecord<SFServiceInstance>(
    master,
    SFSERVICEINSTANCE,
    instance.namespace,
    instance.name,
  );
  if (record?.metadata.labels?.[LABELS.leavingCluster] !== labelValue(clusterId)) return;
  try {
    await patchRecord(master, SFSERVICEINSTANCE, instance.namespace, instance.name, {
      metadata: { labels: { [LABELS.leavingCluster]: null } },
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** The instance is off the cluster: the master keeps nothing of its stay there. */
export async function leftClusterOnMaster(
  master: ClusterClient,
  registry: string,
  instance: InstanceRef,
  clusterId: string,
): Promise<void> {
  await releaseReservationOn(master, registry, clusterId, instance.instanceId);
  await unlabelLeaving(master, instance, clusterId);
}
