/** The namespaces records and copies go into. */
import type { ClusterClient } from '../kube/clients.js';
import { ensureNamespace } from '../kube/objects.js';
import { isNotFound } from '../kube/errors.js';
import { LABELS } from '../resources/names.js';
import { expectedRetry } from './failures.js';

/**
 * Makes an instance's namespace, labelled as one (the chart's admission policy lets the
 * inter-operator write there), or finds it; one still being deleted is waited for (retried).
 */
export async function namespaceReady(cluster: ClusterClient, namespace: string): Promise<void> {
  if ((await ensureNamespace(cluster, namespace, { [LABELS.instanceNamespace]: 'true' })) === 'terminating')
    throw expectedRetry(`namespace ${namespace} on cluster ${cluster.id} is still being deleted`);
}

/** Deletes a namespace of a cluster; gone already means done. */
export async function deleteNamespace(cluster: ClusterClient, name: string): Promise<void> {
  try {
    await cluster.core.deleteNamespace({ name });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
