/**
 * Idempotent reads and writes of any Kubernetes object, the controller-runtime way: server-side
 * apply with our field manager, NotFound on delete means done, NotFound on read means absent.
 */
import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import type { AppliedResource, KubeObject } from '../resources/types.js';
import type { ClusterClient } from './clients.js';
import { isNotFound } from './errors.js';

/** The field manager of everything the inter-operator writes. */
export const FIELD_MANAGER = 'interoperator';

/** The identity of an object, as recorded in an instance's `status.resources`. */
export const refOf = (obj: KubeObject): AppliedResource => ({
  apiVersion: obj.apiVersion,
  kind: obj.kind,
  name: obj.metadata.name,
  ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
});

const specOf = (ref: AppliedResource) => ({
  apiVersion: ref.apiVersion,
  kind: ref.kind,
  metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) },
});

/** Server-side applies `obj` (creating or updating it) and returns what the apiserver stored. */
export async function applyObject(cluster: ClusterClient, obj: KubeObject): Promise<KubeObject> {
  // Server-set fields would make the apply conflict or fail; status belongs to the operator.
  const { name, namespace, labels, annotations, ownerReferences, finalizers } = obj.metadata;
  const { status: _status, metadata: _metadata, ...body } = obj;
  const metadata = { name, namespace, labels, annotations, ownerReferences, finalizers };
  return (await cluster.objects.patch(
    { ...body, metadata } as KubernetesObject,
    undefined,
    undefined,
    FIELD_MANAGER,
    true,
    PatchStrategy.ServerSideApply,
  )) as KubeObject;
}

/** Reads an object; undefined when it does not exist. */
export async function readObject(
  cluster: ClusterClient,
  ref: AppliedResource,
): Promise<KubeObject | undefined> {
  try {
    return (await cluster.objects.read(specOf(ref))) as KubeObject;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Deletes an object (foreground, so owned objects go first); true when it was already gone. */
export async function deleteObject(cluster: ClusterClient, ref: AppliedResource): Promise<boolean> {
  try {
    await cluster.objects.delete(specOf(ref), undefined, undefined, undefined, undefined, 'Foreground');
    return false;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}
