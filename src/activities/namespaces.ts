/** The namespaces records and copies go into. */
import type { ClusterClient } from '../kube/clients.js';
import { ensureNamespace } from '../kube/objects.js';
import { retryable } from './failures.js';

/** Makes the namespace, or finds it; one still being deleted is waited for (retried). */
export async function namespaceReady(cluster: ClusterClient, namespace: string): Promise<void> {
  if ((await ensureNamespace(cluster, namespace)) === 'terminating')
    throw retryable(`namespace ${namespace} on cluster ${cluster.id} is still being deleted`);
}
