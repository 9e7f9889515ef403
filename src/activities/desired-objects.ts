/**
 * What an operation wants in a cluster, decided from what it read: the object to apply for each
 * one a template rendered (namespace, labels, owner), which recorded objects an update prunes, which a
 * binding owns, and the Secret that holds a binding's response.
 *
 * Pure: plain objects in, plain objects out. The resource activities do the reads and writes.
 */
import { INSTANCE_NAMESPACE_PREFIX, LABELS, labelValue } from '../resources/names.js';
import {
  type AppliedResource,
  type KubeObject,
  type OwnerReference,
  type SFService,
  type SFServiceBinding,
} from '../resources/types.js';

/** Where and for whom rendered objects are applied. */
export interface ApplyingFor {
  /** The instance's namespace: where objects that name none go, and where owner references hold. */
  readonly namespace: string;
  /** The cluster the objects go to: the records own them in the master, their copies on a sister. */
  readonly clusterId: string;
  /** The master's cluster id. */
  readonly masterId: string;
  readonly instanceId: string;
  /** The record that owns what is applied: the binding's for a binding, else the instance's. */
  readonly record: KubeObject;
  /**
   * On a sister cluster: the record's copy there, which owns what is applied in its namespace
   * (owner references cannot cross clusters). Without it, nothing on a sister has an owner.
   */
  readonly copy?: KubeObject;
  /** For a binding: its id, and the objects its instance applied (those stay the instance's). */
  readonly binding?: {
    readonly bindingId: string;
    readonly instanceResources: readonly AppliedResource[];
  };
}

/** The object to apply, and how it is recorded in its record's `status.resources`. */
export interface DesiredObject {
  readonly object: KubeObject;
  readonly ref: AppliedResource;
}

/** Whether two recorded objects are the same object. */
export const sameResource = (a: AppliedResource, b: AppliedResource): boolean =>
  a.apiVersion === b.apiVersion &&
  a.kind === b.kind &&
  a.name === b.name &&
  (a.namespace ?? '') === (b.namespace ?? '');

const isIn = (list: readonly AppliedResource[]) => (ref: AppliedResource) =>
  list.some((other) => sameResource(other, ref));

/** An owner reference to a record. */
export const ownerReferenceTo = (record: KubeObject): OwnerReference => ({
  apiVersion: record.apiVersion,
  kind: record.kind,
  name: record.metadata.name,
  uid: record.metadata.uid!,
});

/** The namespace a rendered object goes to: the one it names, else the instance's (`own`). */
export const namespaceOf = (rendered: KubeObject, own: string): string => rendered.metadata?.namespace || own;

/**
 * The object to apply for one a template rendered: in the instance's namespace unless it names
 * another, labelled with the instance (and the binding, for what the binding alone owns), and
 * owned by the record when it is in the record's namespace (on a sister, by the record's copy
 * there). An object of the instance that a binding changes (a user in the database resource)
 * stays owned by the instance, so deleting the binding never deletes it.
 */
export function desiredObject(rendered: KubeObject, applying: ApplyingFor): DesiredObject {
  const namespace = namespaceOf(rendered, applying.namespace);
  const ref: AppliedResource = {
    apiVersion: rendered.apiVersion,
    kind: rendered.kind,
    name: rendered.metadata.name,
    namespace,
  };
  const { binding } = applying;
  const ownedByInstance = binding !== undefined && isIn(binding.instanceResources)(ref);
  const owner = applying.clusterId === applying.masterId ? applying.record : applying.copy;
  const owners =
    namespace === applying.namespace && !ownedByInstance && owner
      ? [
          ...(rendered.metadata?.ownerReferences ?? []).filter((o) => o.uid !== owner.metadata.uid),
          ownerReferenceTo(owner),
        ]
      : rendered.metadata?.ownerReferences;
  const labels = {
    ...rendered.metadata?.labels,
    [LABELS.instanceId]: labelValue(applying.instanceId),
    ...(binding && !ownedByInstance ? { [LABELS.bindingId]: labelValue(binding.bindingId) } : {}),
  };
  const object: KubeObject = {
    ...rendered,
    metadata: {
      ...rendered.metadata,
      namespace,
      labels,
      ...(owners?.length ? { ownerReferences: owners } : {}),
    },
  };
  return { object, ref };
}

/**
 * Which namespaces an instance's templates may name, for an object to apply, a source or a
 * reference to read: its own, and those its service's owner listed. The list comes from the
 * SFService alone, so a platform's parameters, which a template may put in a namespace, can pick
 * among them but never add one.
 */
export interface NamespaceReach {
  /** The instance's namespace (the one all instances share, with INTEROP_INSTANCE_NAMESPACE). */
  readonly own: string;
  /** The registry's namespace: the clusters' credentials and the catalog. */
  readonly registry: string;
  /** The service of the instance's plan: its SFService's name and `spec.allowedNamespaces`. */
  readonly service: { readonly name: string; readonly allowedNamespaces?: readonly string[] };
}

/** The reach of an instance of `service`, in namespace `own`, beside the registry's. */
export const namespaceReach = (
  own: string,
  registry: string,
  service: Pick<SFService, 'metadata' | 'spec'>,
): NamespaceReach => ({
  own,
  registry,
  service: {
    name: service.metadata.name,
    ...(service.spec.allowedNamespaces ? { allowedNamespaces: service.spec.allowedNamespaces } : {}),
  },
});

/**
 * Why an instance's template may not name `namespace`, if it may not: as "… in <this>". Its own
 * namespace it may; the registry's and another instance's (`sf-…`) never, even when its service
 * lists them (a tenant's objects and the clusters' credentials); any other only when its service
 * lists it.
 */
export function namespaceRefusal(namespace: string, reach: NamespaceReach): string | undefined {
  if (namespace === reach.own) return undefined;
  if (namespace === reach.registry)
    return `the registry's namespace ${namespace}, which no template may reach, listed or not`;
  if (namespace.startsWith(INSTANCE_NAMESPACE_PREFIX))
    return `${namespace}, the namespace of another instance, which no template may reach, listed or not`;
  if (reach.service.allowedNamespaces?.includes(namespace)) return undefined;
  return `namespace ${namespace}, which is not the instance's own: a service's owner allows a namespace by listing it in spec.allowedNamespaces of SFService ${reach.service.name}`;
}

/**
 * The objects an instance applied before that its template no longer renders: deleted once an
 * update reports success, never before (a failed update rolls back onto them).
 */
export const staleResources = (
  previous: readonly AppliedResource[],
  applied: readonly AppliedResource[],
): AppliedResource[] => previous.filter((ref) => !isIn(applied)(ref));

/**
 * What a record lists in `status.resources` once its template is applied: every object it applied,
 * now and before, since applying a template deletes nothing. A binding lists what its bind applied
 * (the unbind deletes those first, and lists its own objects apart: {@link unbindOwnResources}); an instance lists what it
 * applied now first, then the {@link staleResources}, which it also lists apart
 * (`status.staleResources`) until an update that the operator reported done prunes them.
 */
export const recordedResources = (
  previous: readonly AppliedResource[],
  applied: readonly AppliedResource[],
  forBinding: boolean,
): AppliedResource[] =>
  forBinding
    ? [...staleResources(previous, applied), ...applied]
    : [...applied, ...staleResources(previous, applied)];

/** What an instance lists once `pruned` are deleted. */
export const afterPruning = (
  listed: readonly AppliedResource[],
  pruned: readonly AppliedResource[],
): AppliedResource[] => listed.filter((ref) => !isIn(pruned)(ref));

/** The objects a binding recorded that are its instance's: the binding owns only fields in them. */
export const instanceResourcesOf = (
  bindingResources: readonly AppliedResource[],
  instanceResources: readonly AppliedResource[],
): AppliedResource[] => bindingResources.filter(isIn(instanceResources));

/** The objects a binding recorded that are its own: those the unbind deletes. */
export const ownResourcesOf = (
  bindingResources: readonly AppliedResource[],
  instanceResources: readonly AppliedResource[],
): AppliedResource[] => bindingResources.filter((ref) => !isIn(instanceResources)(ref));

/**
 * What an unbind applied that is neither its instance's nor made by its bind: the unbind's own
 * objects, such as a Job that takes the binding's access away. They are what the status template
 * waits on, so they stay while the unbind runs (the bind's objects go at once) and are deleted once
 * it reports success.
 */
export const unbindOwnResources = (
  applied: readonly AppliedResource[],
  bindingResources: readonly AppliedResource[],
  instanceResources: readonly AppliedResource[],
): AppliedResource[] =>
  applied.filter((ref) => !isIn(bindingResources)(ref) && !isIn(instanceResources)(ref));

/** The Secret that holds a binding's response (its JSON text), owned by the binding's record. */
export function responseSecret(binding: SFServiceBinding, name: string, response: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name,
      namespace: binding.metadata.namespace!,
      labels: { [LABELS.bindingId]: labelValue(binding.spec.id) },
      ownerReferences: [ownerReferenceTo(binding)],
    },
    data: { response: Buffer.from(response).toString('base64') },
  };
}
