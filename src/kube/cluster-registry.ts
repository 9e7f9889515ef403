/**
 * The cluster registry: SFClusters in the master, each naming a Secret with the cluster's
 * kubeconfig. The master registers itself as cluster `1`, as in the original inter-operator, or
 * is the SFCluster labelled {@link PRIMARY_CLUSTER_LABEL}.
 */
import { readFileSync } from 'node:fs';
import { PatchStrategy } from '@kubernetes/client-node';
import { CLUSTER_FINALIZER, FIELD_MANAGER } from '../resources/names.js';
import { SFCLUSTER, type SFCluster } from '../resources/types.js';
import type { ClusterClient } from './clients.js';
import { isNotFound } from './errors.js';
import { ensureNamespace } from './objects.js';

/** Name of the Secret that holds a cluster's kubeconfig under the key `kubeconfig`. */
export const kubeconfigSecretName = (clusterId: string): string => `cluster-${clusterId}-kubeconfig`;

/** How a cluster is registered besides its kubeconfig. */
export interface ClusterRegistration {
  /** `spec.totalCapacity`: declared capacity (cpu, memory, ...). */
  readonly totalCapacity?: Record<string, string>;
  /** `spec.labels`, for clusterSelectors. */
  readonly labels?: Record<string, string>;
}

/**
 * Registers (or re-registers) a cluster: its kubeconfig Secret and its SFCluster with the
 * finalizer that refuses its deletion while instances are placed on it, idempotently.
 * `kubeconfig` is the path of a kubeconfig file, or `{ text }` for the kubeconfig itself; or
 * `{ taskQueue }` for a cluster served by a worker of its own, of which the master holds no
 * credentials.
 */
export async function registerCluster(
  master: ClusterClient,
  namespace: string,
  clusterId: string,
  reach: string | { readonly text: string } | { readonly taskQueue: string },
  registration: ClusterRegistration = {},
): Promise<void> {
  await ensureNamespace(master, namespace);
  const bodies: object[] = [];
  let how: Record<string, string>;
  if (typeof reach === 'object' && 'taskQueue' in reach) {
    how = { taskQueue: reach.taskQueue };
  } else {
    const secretName = kubeconfigSecretName(clusterId);
    const kubeconfig = typeof reach === 'string' ? readFileSync(reach, 'utf8') : reach.text;
    bodies.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName, namespace },
      type: 'Opaque',
      stringData: { kubeconfig },
    });
    how = { secretRef: secretName };
  }
  bodies.push({
    apiVersion: SFCLUSTER.apiVersion,
    kind: SFCLUSTER.kind,
    metadata: { name: clusterId, namespace, finalizers: [CLUSTER_FINALIZER] },
    spec: {
      ...how,
      ...(registration.totalCapacity ? { totalCapacity: registration.totalCapacity } : {}),
      ...(registration.labels ? { labels: registration.labels } : {}),
    },
  });
  for (const body of bodies) {
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

/** Lists the registered clusters (those carrying every label of `labelSelector`, when given). */
export async function listClusters(
  master: ClusterClient,
  namespace: string,
  labelSelector?: string,
): Promise<SFCluster[]> {
  const list = (await master.custom.listNamespacedCustomObject({
    group: SFCLUSTER.group,
    version: SFCLUSTER.version,
    namespace,
    plural: SFCLUSTER.plural,
    ...(labelSelector ? { labelSelector } : {}),
  })) as { items: SFCluster[] };
  return list.items;
}

/**
 * The label by which Service Fabrik's interoperator marks the master among the SFClusters
 * (`"true"`), when it is not named `1`.
 */
export const PRIMARY_CLUSTER_LABEL = 'interoperator.servicefabrik.io/primarycluster';

/**
 * The name of the SFCluster labelled the master ({@link PRIMARY_CLUSTER_LABEL}), or undefined when
 * none is (or the registry cannot be listed yet: it has no SFCluster kind).
 *
 * @throws Error when several are labelled so: which one is the master cannot be told.
 */
export async function labelledMaster(master: ClusterClient, namespace: string): Promise<string | undefined> {
  let items: SFCluster[];
  try {
    items = await listClusters(master, namespace, `${PRIMARY_CLUSTER_LABEL}=true`);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  if (items.length > 1)
    throw new Error(
      `SFClusters ${items.map((c) => c.metadata.name).join(', ')} in ${namespace} are all labelled ${PRIMARY_CLUSTER_LABEL}=true: label one, or set INTEROP_MASTER_CLUSTER_ID`,
    );
  return items[0]?.metadata.name;
}

/** A registered cluster's kubeconfig and the version of the Secret it was read from. */
export interface ClusterKubeconfig {
  readonly kubeconfig: string;
  /** The Secret it is read from. */
  readonly secretRef: string;
  /** Changes whenever the SFCluster names another Secret or the Secret changes. */
  readonly version: string;
}

async function readKubeconfigSecret(
  master: ClusterClient,
  namespace: string,
  secretRef: string,
): Promise<ClusterKubeconfig> {
  const secret = await master.core.readNamespacedSecret({ name: secretRef, namespace });
  const data = secret.data?.kubeconfig;
  if (!data) throw new Error(`Secret ${namespace}/${secretRef} has no key "kubeconfig"`);
  return {
    kubeconfig: Buffer.from(data, 'base64').toString('utf8'),
    secretRef,
    version: `${secretRef}@${secret.metadata?.resourceVersion ?? ''}`,
  };
}

/**
 * A registered cluster's kubeconfig, from its Secret; undefined when it is not registered.
 * `expectedSecretRef` (the Secret the cluster named last time) is read beside the SFCluster, so
 * that the usual case costs one round trip; it is used only when the SFCluster still names it.
 */
export async function readClusterKubeconfig(
  master: ClusterClient,
  namespace: string,
  clusterId: string,
  expectedSecretRef?: string,
): Promise<ClusterKubeconfig | undefined> {
  const expected = expectedSecretRef
    ? readKubeconfigSecret(master, namespace, expectedSecretRef).then(
        (found) => ({ found }),
        (error: unknown) => ({ error }),
      )
    : undefined;
  try {
    const cluster = (await master.custom.getNamespacedCustomObject({
      group: SFCLUSTER.group,
      version: SFCLUSTER.version,
      namespace,
      plural: SFCLUSTER.plural,
      name: clusterId,
    })) as SFCluster;
    const secretRef = cluster.spec.secretRef;
    if (!secretRef)
      throw new Error(
        `cluster ${clusterId} has no kubeconfig Secret: it is reached only by the worker of task queue ${cluster.spec.taskQueue ?? '(none)'}`,
      );
    if (expected && secretRef === expectedSecretRef) {
      const read = await expected;
      if ('error' in read) throw read.error;
      return read.found;
    }
    return await readKubeconfigSecret(master, namespace, secretRef);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
