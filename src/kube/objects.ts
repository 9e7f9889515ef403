/**
 * Idempotent reads and writes of any Kubernetes object, the controller-runtime way: server-side
 * apply with our field manager, NotFound on delete means done, NotFound on read means absent.
 */
import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../resources/names.js';
import type { AppliedResource, KubeObject } from '../resources/types.js';
import type { ClusterClient } from './clients.js';
import { isAlreadyExists, isNotFound } from './errors.js';

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

/**
 * Server-side applies `obj` (creating or updating it) as `fieldManager` and returns what the
 * apiserver stored. A `resourceVersion` in `obj` is kept: the apply then fails with 409 when the
 * object changed since it was read (optimistic concurrency for templates that edit a fetched object).
 * With `dryRun`, the apiserver only answers what it would store, and stores nothing.
 */
export async function applyObject(
  cluster: ClusterClient,
  obj: KubeObject,
  fieldManager: string = FIELD_MANAGER,
  options: { readonly dryRun?: boolean } = {},
): Promise<KubeObject> {
  // Server-set fields would make the apply conflict or fail; status belongs to the operator.
  const { name, namespace, labels, annotations, ownerReferences, finalizers, resourceVersion } = obj.metadata;
  const { status: _status, metadata: _metadata, ...body } = obj;
  const metadata = { name, namespace, labels, annotations, ownerReferences, finalizers, resourceVersion };
  return (await cluster.objects.patch(
    { ...body, metadata } as KubernetesObject,
    undefined,
    options.dryRun ? 'All' : undefined,
    fieldManager,
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

/**
 * The objects of a kind in `namespace` that carry every label of `labelSelector` (`a=b,c=d`); a
 * kind the apiserver does not serve fails like any other call.
 */
export async function listObjects(
  cluster: ClusterClient,
  kind: { readonly apiVersion: string; readonly kind: string },
  namespace: string,
  labelSelector: string,
): Promise<KubeObject[]> {
  const list = await cluster.objects.list(
    kind.apiVersion,
    kind.kind,
    namespace,
    undefined,
    undefined,
    undefined,
    undefined,
    labelSelector,
  );
  return (list.items ?? []) as KubeObject[];
}

/** Whether an error says that the apiserver serves no such apiVersion and kind. */
export const isKindNotServed = (err: unknown): boolean =>
  err instanceof Error && /^Unrecognized API version and kind/.test(err.message);

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

/** Patches an existing object as `fieldManager`; one already gone is done. */
async function patchUnlessGone(
  cluster: ClusterClient,
  body: Record<string, unknown>,
  fieldManager: string,
  strategy: typeof PatchStrategy.ServerSideApply | typeof PatchStrategy.MergePatch,
): Promise<void> {
  const force = strategy === PatchStrategy.ServerSideApply ? true : undefined;
  try {
    await cluster.objects.patch(
      body as KubernetesObject,
      undefined,
      undefined,
      fieldManager,
      force,
      strategy,
    );
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Gives up every field `fieldManager` owns in an object: applying an object with no fields
 * removes those only it owned and leaves those others own too.
 */
export async function releaseFields(
  cluster: ClusterClient,
  ref: AppliedResource,
  fieldManager: string,
): Promise<void> {
  await patchUnlessGone(cluster, specOf(ref), fieldManager, PatchStrategy.ServerSideApply);
}

/**
 * Merge-patches an object as `fieldManager`: a key set to null is taken out whoever owns it. An
 * object already gone is done.
 */
export async function mergePatchObject(
  cluster: ClusterClient,
  ref: AppliedResource,
  patch: Record<string, unknown>,
  fieldManager: string,
): Promise<void> {
  await patchUnlessGone(cluster, { ...patch, ...specOf(ref) }, fieldManager, PatchStrategy.MergePatch);
}

/**
 * Creates a namespace, with `labels`, or finds it (as it is): `terminating` when it exists but is
 * being deleted (objects cannot be made in it until it is gone).
 */
export async function ensureNamespace(
  cluster: ClusterClient,
  namespace: string,
  labels?: Readonly<Record<string, string>>,
): Promise<'ready' | 'terminating'> {
  try {
    await cluster.core.createNamespace({
      body: { metadata: { name: namespace, ...(labels ? { labels: { ...labels } } : {}) } },
    });
    return 'ready';
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  const found = await cluster.core.readNamespace({ name: namespace });
  return found.metadata?.deletionTimestamp ? 'terminating' : 'ready';
}
