/**
 * Adoption of the records Service Fabrik's broker and inter-operator left in the master: which of
 * them this broker can go on answering for in place (the same record, the same namespace, the
 * operator's objects untouched), and what it writes on each to make it one of its own; or why not.
 *
 * What makes a record adoptable: it is where this broker looks for it (its name and namespace are
 * those the OSB ids give here), its plan is in this broker's catalog under the same service, its
 * last operation has settled (`succeeded` or `failed`; one still running is Service Fabrik's to
 * finish), its namespace is labelled as an instance's (where the inter-operator may write), it is
 * placed on a cluster this landscape registers, and, for a binding, its instance is
 * adoptable (or ours) and the Secret with its credentials is there.
 *
 * What adoption writes: our labels (instance, binding, service, plan, cluster), our finalizer for
 * Service Fabrik's, the digest of the request the record holds (so that the same request sent again
 * is known as a repeat), the annotation {@link ADOPTED_ANNOTATION}, and the status fields our
 * broker's rules read (`operation`, the flags as booleans, the instance's namespace). Service
 * Fabrik's `status.state`, `description`, `error`, `resources` and `response.secretRef` are ours
 * too, and stay.
 *
 * Pure.
 */
import type { AdoptionItem } from '../admin/contract.js';
import {
  ANNOTATIONS,
  FINALIZER,
  LABELS,
  instanceNamespace,
  labelValue,
  resourceName,
} from '../resources/names.js';
import type { SFServiceBinding, SFServiceInstance } from '../resources/types.js';
import {
  LAST_OPERATION_LABEL,
  SERVICE_FABRIK_FINALIZERS,
  SERVICE_FABRIK_RUNNING_STATES,
  bindingOperationOf,
  flagOf,
  instanceOperationOf,
  serviceFabrikBindingSecretName,
} from './service-fabrik.js';

/**
 * On every record adoption took over: when, and what Service Fabrik had left in it (its state and
 * last-operation label), as JSON.
 */
export const ADOPTED_ANNOTATION = ANNOTATIONS.adoptedFromServiceFabrik;

/** What the rules know of this landscape. */
export interface AdoptionLandscape {
  /** The service id of a plan in the catalog; undefined for a plan it does not hold. */
  readonly serviceOfPlan: (planId: string) => string | undefined;
  /** Whether this landscape registers the cluster (the master included). */
  readonly clusterKnown: (clusterId: string) => boolean;
  /**
   * Whether a namespace of the master carries {@link LABELS.instanceNamespace}` = true`: the chart's
   * admission policy lets the inter-operator write only in instance namespaces so labelled (or the
   * shared one), and it has no right to label one itself.
   */
  readonly namespaceLabelled: (namespace: string) => boolean;
  /** The one namespace of every instance, when the landscape shares one. @default each its own */
  readonly instanceNamespace?: string;
  /** The digest of the request an instance record holds (src/broker/request-digest.ts). */
  readonly instanceDigest: (spec: SFServiceInstance['spec']) => string;
  /** The digest of the request a binding record holds. */
  readonly bindingDigest: (spec: SFServiceBinding['spec']) => string;
  /** Now, as an ISO time: what the adoption annotation says. */
  readonly now: string;
}

/** What adoption writes on a record: merged into its metadata and spec, and into its status. */
export interface RecordChanges {
  readonly metadata: {
    readonly labels: Record<string, string>;
    readonly annotations: Record<string, string>;
    readonly finalizers: string[];
  };
  /** Fields of the spec to set (an id the record lacks). */
  readonly spec: Record<string, unknown>;
  /** Fields of the status to set; null removes one. */
  readonly status: Record<string, unknown>;
}

/** The decision on one record: adoptable with its changes, or not with the reason. */
export type AdoptionDecision =
  | { readonly item: AdoptionItem; readonly changes: RecordChanges }
  | { readonly item: AdoptionItem; readonly changes?: undefined };

/** Whether a record is adopted already, or one of ours: it carries our instance label or the adoption annotation. */
export const isOurs = (record: SFServiceInstance | SFServiceBinding): boolean =>
  Boolean(record.metadata.labels?.[LABELS.instanceId] || record.metadata.annotations?.[ADOPTED_ANNOTATION]);

/** A name that is a valid one for an OSB id as both brokers derive it: the id itself. */
const ID_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The OSB id a record is of: its spec's, else its name when that is an id's name. */
const idOf = (specId: string | undefined, name: string): string | undefined =>
  specId || (ID_NAME.test(name) ? name : undefined);

/** Why the record's last operation keeps it from adoption; undefined when it has settled. */
function unsettled(state: string | undefined): string | undefined {
  if (state === 'succeeded' || state === 'failed') return undefined;
  if (state && SERVICE_FABRIK_RUNNING_STATES.includes(state))
    return `an operation is in progress (state "${state}"): adopt it once Service Fabrik has finished it`;
  return `its state ${state ? `"${state}"` : '(none)'} is not one a settled operation leaves`;
}

/** Service Fabrik's finalizers replaced by ours; others' stay. */
const finalizersOf = (finalizers: readonly string[] | undefined): string[] => [
  ...(finalizers ?? []).filter((f) => !SERVICE_FABRIK_FINALIZERS.includes(f) && f !== FINALIZER),
  FINALIZER,
];

const adoptedFrom = (record: SFServiceInstance | SFServiceBinding, now: string): string =>
  JSON.stringify({
    at: now,
    state: record.status?.state ?? null,
    lastOperation: record.metadata.labels?.[LAST_OPERATION_LABEL] ?? null,
  });

const refused = (item: AdoptionItem, reason: string): AdoptionDecision => ({ item: { ...item, reason } });

/** The decision on a Service Fabrik instance record. */
export function instanceAdoption(record: SFServiceInstance, landscape: AdoptionLandscape): AdoptionDecision {
  const { name, namespace = '' } = record.metadata;
  const state = record.status?.state;
  const instanceId = idOf(record.spec?.instanceId, name);
  const item: AdoptionItem = {
    kind: 'instance',
    instanceId: instanceId ?? name,
    namespace,
    name,
    ...(state ? { state } : {}),
  };
  if (record.metadata.deletionTimestamp) return refused(item, 'it is being deleted');
  if (!instanceId) return refused(item, 'it names no instance id (spec.instanceId) and its name is a digest');
  const expected = {
    name: resourceName(instanceId),
    namespace: instanceNamespace(instanceId, landscape.instanceNamespace),
  };
  if (expected.name !== name || expected.namespace !== namespace)
    return refused(
      item,
      `this broker finds instance ${instanceId} at ${expected.namespace}/${expected.name}`,
    );
  const { serviceId, planId, clusterId } = record.spec;
  if (!serviceId || !planId) return refused(item, 'its spec names no serviceId or planId');
  const serviceOfPlan = landscape.serviceOfPlan(planId);
  if (!serviceOfPlan) return refused(item, `its plan ${planId} is not in this broker's catalog`);
  if (serviceOfPlan !== serviceId)
    return refused(item, `its plan ${planId} is of service ${serviceOfPlan} here, not ${serviceId}`);
  const running = unsettled(state);
  if (running) return refused(item, running);
  if (!landscape.instanceNamespace && !landscape.namespaceLabelled(namespace))
    return refused(
      item,
      `its namespace ${namespace} is not labelled ${LABELS.instanceNamespace}=true (on every cluster it is on): label it, then adopt`,
    );
  if (!clusterId) return refused(item, 'it is placed on no cluster (spec.clusterId)');
  if (!landscape.clusterKnown(clusterId))
    return refused(item, `it is placed on cluster ${clusterId}, which this landscape does not register`);
  const spec = { ...record.spec, instanceId };
  const usable = flagOf(record.status?.instanceUsable);
  const repeatable = flagOf(record.status?.updateRepeatable);
  return {
    item,
    changes: {
      metadata: {
        labels: {
          [LABELS.instanceId]: labelValue(instanceId),
          [LABELS.serviceId]: labelValue(serviceId),
          [LABELS.planId]: labelValue(planId),
          [LABELS.clusterId]: labelValue(clusterId),
        },
        annotations: {
          [ANNOTATIONS.requestHash]: landscape.instanceDigest(spec),
          [ADOPTED_ANNOTATION]: adoptedFrom(record, landscape.now),
        },
        finalizers: finalizersOf(record.metadata.finalizers),
      },
      spec: record.spec.instanceId ? {} : { instanceId },
      status: {
        operation: instanceOperationOf(record.metadata.labels?.[LAST_OPERATION_LABEL]),
        namespace,
        instanceUsable: usable ?? null,
        updateRepeatable: repeatable ?? null,
      },
    },
  };
}

/** What the rules know of a binding record besides the record: its instance, and its credentials. */
export interface BindingSurroundings {
  /** The decision on its instance, or `ours` for one adopted before (or made by this broker); undefined when it has none. */
  readonly instance: AdoptionDecision | 'ours' | undefined;
  /** Whether the Secret its status names (or Service Fabrik's name for it) is in the master. */
  readonly secretFound: boolean;
  /** The cluster its instance is placed on. */
  readonly clusterId?: string;
}

/** The Secret with a Service Fabrik binding's response: the one its status names, else Service Fabrik's name for it. */
export const bindingSecretOf = (record: SFServiceBinding): string | undefined => {
  const bindingId = idOf(record.spec?.id, record.metadata.name);
  return (
    record.status?.response?.secretRef || (bindingId ? serviceFabrikBindingSecretName(bindingId) : undefined)
  );
};

/** The decision on a Service Fabrik binding record. */
export function bindingAdoption(
  record: SFServiceBinding,
  around: BindingSurroundings,
  landscape: AdoptionLandscape,
): AdoptionDecision {
  const { name, namespace = '' } = record.metadata;
  const state = record.status?.state;
  const bindingId = idOf(record.spec?.id, name);
  const instanceId = record.spec?.instanceId ?? '';
  const item: AdoptionItem = {
    kind: 'binding',
    instanceId,
    bindingId: bindingId ?? name,
    namespace,
    name,
    ...(state ? { state } : {}),
  };
  if (record.metadata.deletionTimestamp) return refused(item, 'it is being deleted');
  if (!bindingId) return refused(item, 'it names no binding id (spec.id) and its name is a digest');
  if (!instanceId) return refused(item, 'its spec names no instanceId');
  const expected = {
    name: resourceName(bindingId),
    namespace: instanceNamespace(instanceId, landscape.instanceNamespace),
  };
  if (expected.name !== name || expected.namespace !== namespace)
    return refused(item, `this broker finds binding ${bindingId} at ${expected.namespace}/${expected.name}`);
  const { serviceId, planId } = record.spec;
  if (!serviceId || !planId) return refused(item, 'its spec names no serviceId or planId');
  if (!landscape.serviceOfPlan(planId))
    return refused(item, `its plan ${planId} is not in this broker's catalog`);
  const running = unsettled(state);
  if (running) return refused(item, running);
  if (!around.instance) return refused(item, `its instance ${instanceId} has no record`);
  if (around.instance !== 'ours' && !around.instance.changes)
    return refused(item, `its instance ${instanceId} cannot be adopted: ${around.instance.item.reason}`);
  if (state === 'succeeded' && !around.secretFound)
    return refused(item, `the Secret ${bindingSecretOf(record)} with its credentials is missing`);
  const spec = { ...record.spec, id: bindingId };
  return {
    item,
    changes: {
      metadata: {
        labels: {
          [LABELS.instanceId]: labelValue(instanceId),
          [LABELS.bindingId]: labelValue(bindingId),
          ...(around.clusterId ? { [LABELS.clusterId]: labelValue(around.clusterId) } : {}),
        },
        annotations: {
          [ANNOTATIONS.requestHash]: landscape.bindingDigest(spec),
          [ADOPTED_ANNOTATION]: adoptedFrom(record, landscape.now),
        },
        finalizers: finalizersOf(record.metadata.finalizers),
      },
      spec: record.spec.id ? {} : { id: bindingId },
      status: {
        operation: bindingOperationOf(record.metadata.labels?.[LAST_OPERATION_LABEL]),
        ...(state === 'succeeded' ? { response: { secretRef: bindingSecretOf(record) } } : {}),
      },
    },
  };
}
