/**
 * The cluster registry: SFClusters in the master, each naming a Secret with the cluster's
 * kubeconfig. The master registers itself as cluster `1`, as in the original inter-operator.
 */
import { readFileSync } from 'node:fs';
import { PatchStrategy } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../resources/names.js';
import { SFCLUSTER, type SFCluster } from '../resources/types.js';
import { clusterClientFromKubeconfig, type ClusterClient } from './clients.js';
import { isAlreadyExists, isNotFound } from './errors.js';

/** Name of the Secret that holds a cluster's kubeconfig under the key `kubeconfig`. */
export const kubeconfigSecretName = (clusterId: string): string => `cluster-${clusterId}-kubeconfig`;

async function ensureNamespace(master: ClusterClient, namespace: string): Promise<void> {
  try {
    await master.core.createNamespace({ body: { metadata: { name: namespace } } });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** Registers (or re-registers) a cluster: its kubeconfig Secret and its SFCluster, idempotently. */
export async function registerCluster(
  master: ClusterClient,
  namespace: string,
  clusterId: string,
  kubeconfigPath: string,
): Promise<void> {
  await ensureNamespace(master, namespace);
  const secretName = kubeconfigSecretName(clusterId);
  const kubeconfig = readFileSync(kubeconfigPath, 'utf8');
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secretName, namespace },
    type: 'Opaque',
    stringData: { kubeconfig },
  };
  const cluster = {
    apiVersion: SFCLUSTER.apiVersion,
    kind: SFCLUSTER.kind,
    metadata: { name: clusterId, namespace },
    spec: { secretRef: secretName },
  };
  for (const body of [secret, cluster]) {
    await master.objects.patch(
      body,
      undefined,
      undefined,
      FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    );
  }
}

/** Lists the registered clusters. */
export async function listClusters(master: ClusterClient, namespace: string): Promise<SFCluster[]> {
  const list = (await master.custom.listNamespacedCustomObject({
    group: SFCLUSTER.group,
    version: SFCLUSTER.version,
    namespace,
    plural: SFCLUSTER.plural,
  })) as { items: SFCluster[] };
  return list.items;
}

/** Clients for a registered cluster, from its kubeconfig Secret; undefined when it is not registered. */
export async function clientForCluster(
  master: ClusterClient,
  namespace: string,
  clusterId: string,
): Promise<ClusterClient | undefined> {
  try {
    const cluster = (await master.custom.getNamespacedCustomObject({
      group: SFCLUSTER.group,
      version: SFCLUSTER.version,
      namespace,
      plural: SFCLUSTER.plural,
      name: clusterId,
    })) as SFCluster;
    const secret = await master.core.readNamespacedSecret({ name: cluster.spec.secretRef, namespace });
    const data = secret.data?.kubeconfig;
    if (!data) throw new Error(`Secret ${namespace}/${cluster.spec.secretRef} has no key "kubeconfig"`);
    return clusterClientFromKubeconfig(clusterId, Buffer.from(data, 'base64').toString('utf8'));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
