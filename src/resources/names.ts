/**
 * Deterministic names of the records of an instance or binding, derived from the OSB ids: the
 * same request always finds the same objects, in Kubernetes and in Temporal.
 */
import { createHash } from 'node:crypto';

const sha224 = (text: string): string => createHash('sha224').update(text).digest('hex');

/** A DNS-1123 label short enough to carry the `sf-` namespace prefix. */
const VALID_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_NAME = 60;

/**
 * The Kubernetes name of an instance or binding record: the OSB id itself when it is a valid
 * Kubernetes name, else its sha224 in hex, as the original inter-operator names them.
 */
export function resourceName(osbId: string): string {
  return osbId.length <= MAX_NAME && VALID_NAME.test(osbId) ? osbId : sha224(osbId);
}

/** Prefix of the per-instance namespaces. */
export const INSTANCE_NAMESPACE_PREFIX = 'sf-';

/**
 * Namespace of an instance's record and resources, in the master and in its cluster: its own
 * (`sf-<name>`) unless the landscape puts all instances in one namespace.
 */
export function instanceNamespace(instanceId: string, sharedNamespace?: string): string {
  return sharedNamespace || `${INSTANCE_NAMESPACE_PREFIX}${resourceName(instanceId)}`;
}

/** Workflow id of every operation on one instance: one at a time, found again by a retried request. */
export const instanceWorkflowId = (instanceId: string): string => `instance/${instanceId}`;

/** Workflow id of every operation on one binding. */
export const bindingWorkflowId = (instanceId: string, bindingId: string): string =>
  `binding/${instanceId}/${bindingId}`;

/** Name of the Secret that holds a binding's response (credentials), owned by the binding record. */
export const bindingSecretName = (bindingName: string): string => `sf-binding-${bindingName}`;

/**
 * The namespace of the master where the worker of a cluster with a worker of its own leaves the
 * responses of the bindings on its cluster (its "drop box"): the one namespace of the master it
 * may write, Secrets only. `<registry>-drop-<clusterId>`, or `sf-drop-` and a hash of both when
 * that is no DNS label.
 */
export function dropBoxNamespace(registry: string, clusterId: string): string {
  const readable = `${registry}-drop-${clusterId}`;
  if (readable.length <= 63 && VALID_NAME.test(readable)) return readable;
  return `sf-drop-${createHash('sha256').update(`${registry}/${clusterId}`).digest('hex').slice(0, 20)}`;
}

/** The prefix of the names in a drop box of the generated Secrets of instance `instanceName` handed over by a move. */
export const handedOverPrefix = (instanceName: string): string => `moved.${instanceName}.`;

/**
 * The name in a drop box of the generated Secret `secretName` (a versioned name) of the instance
 * `instanceName` while a move hands it from one cluster's side to the other's: the prefix, and
 * the Secret's name, or its hash when both are too long for a Secret's name.
 */
export function handedOverSecretName(instanceName: string, secretName: string): string {
  const readable = `${handedOverPrefix(instanceName)}${secretName}`;
  if (readable.length <= 253) return readable;
  return `${handedOverPrefix(instanceName)}${createHash('sha256').update(secretName).digest('hex')}`;
}

/** The field manager of everything the inter-operator writes with server-side apply. */
export const FIELD_MANAGER = 'interoperator';

/**
 * The field manager of what a binding writes: each binding its own, so what a bind adds to the
 * instance's objects (a user in the database resource) belongs to the binding alone. An update of
 * the instance keeps it, and the unbind can give it up without touching what the instance owns.
 */
export const bindingFieldManager = (bindingName: string): string => `${FIELD_MANAGER}/binding/${bindingName}`;

/**
 * The field manager of what a custom action (`x-<name>`) applies: the action's own, so that what it
 * sets (an annotation asking for a backup) is neither taken from nor dropped by the provision
 * template's apply, and each run of the action replaces what its previous run set.
 */
export const actionFieldManager = (action: string): string => `${FIELD_MANAGER}/action/${action}`;

/** Labels on every record and applied object, for selection with kubectl. */
export const LABELS = {
  instanceId: 'interoperator.servicefabrik.io/instance-id',
  bindingId: 'interoperator.servicefabrik.io/binding-id',
  clusterId: 'interoperator.servicefabrik.io/cluster-id',
  serviceId: 'interoperator.servicefabrik.io/service-id',
  planId: 'interoperator.servicefabrik.io/plan-id',
  /** On binding records of a rotation: the binding it rotates (`predecessor_binding_id`). */
  predecessorBindingId: 'interoperator.servicefabrik.io/predecessor-binding-id',
  /**
   * On instance and binding records: the platform of the path the provision or bind came on
   * (`cf`, `k8s`, `sm`: `/cf/v2`); absent for `/v2`.
   */
  platform: 'interoperator.servicefabrik.io/platform',
  /** On instance and binding records: the region of a `/<platform>/region/<region>/v2` path. */
  region: 'interoperator.servicefabrik.io/region',
  /** On instance records: the plan revision the instance's resources were last rendered with. */
  planRevision: 'interoperator.servicefabrik.io/plan-revision',
  /** On the catalog's copies in a sister cluster: the master they were copied from. */
  replicaOf: 'interoperator.servicefabrik.io/replica-of',
  /** On every generated Secret: the name of the SFSecret it is a version of. */
  generatedSecret: 'interoperator.servicefabrik.io/generated-secret',
  /** On every generated Secret: its version. */
  generatedVersion: 'interoperator.servicefabrik.io/generated-version',
  /**
   * On the namespaces the inter-operator makes for instances (`true`): where the chart's admission
   * policy lets its service account write.
   */
  instanceNamespace: 'interoperator.servicefabrik.io/instance-namespace',
  /**
   * On instance records during a move, from its switch until nothing of the instance is left on
   * the cluster it moved from: that cluster. The deletion of that cluster's SFCluster waits for it.
   */
  leavingCluster: 'interoperator.servicefabrik.io/leaving-cluster',
  /**
   * On the generated Secrets a move hands over through a drop box on the master, while they are
   * there: the instance's id. Taken off when the target's side takes them.
   */
  handedOverFor: 'interoperator.servicefabrik.io/handed-over-for',
} as const;

/** The length of a plan revision: a prefix of the sha256 of its spec, short enough for a label. */
const REVISION_LENGTH = 16;

/** Object keys sorted at every depth, so that equal specs serialize alike. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  return value;
}

/**
 * A plan's revision (its `status.specHash`): a digest of its spec, the same for equal specs
 * whatever the order of their keys, different when anything in the spec changes.
 */
export const planRevision = (spec: unknown): string =>
  createHash('sha256')
    .update(JSON.stringify(canonical(spec)))
    .digest('hex')
    .slice(0, REVISION_LENGTH);

/** Annotations on every record, for audit and to tell a repeated request from a conflicting one. */
export const ANNOTATIONS = {
  /** Digest of the request the record holds. */
  requestHash: 'interoperator.servicefabrik.io/request-hash',
  /** Who asked for it, as JSON (from `X-Broker-API-Originating-Identity`). */
  requestedBy: 'interoperator.servicefabrik.io/requested-by',
  /** The operations starting or running on an instance and its bindings (src/resources/operation-claims.ts). */
  operationClaims: 'interoperator.servicefabrik.io/operation-claims',
  /** On instance records: the cluster the scheduler chose, and its reasons. */
  placement: 'interoperator.servicefabrik.io/placement',
  /** On our CRDs installed on a sister: the digest of the definition applied (src/clusters/onboarding.ts). */
  crdDigest: 'interoperator.servicefabrik.io/crd-digest',
  /**
   * On records taken over from Service Fabrik's interoperator: when, and what it had left in them
   * (src/adoption/rules.ts).
   */
  adoptedFromServiceFabrik: 'interoperator.servicefabrik.io/adopted-from-service-fabrik',
} as const;

/** kubectl's copy of what `kubectl apply` sent: neither a difference worth showing nor worth copying. */
export const KUBECTL_LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** The finalizer that keeps a record until its resources are gone. */
export const FINALIZER = 'interoperator.servicefabrik.io/finalizer';

/** The finalizer that keeps a catalog entry (an SFService or SFPlan) while an instance uses it. */
export const CATALOG_FINALIZER = 'interoperator.servicefabrik.io/catalog-in-use';

/**
 * The finalizer that keeps an SFCluster while instances are placed on it: the cluster health
 * round removes it once the deletion is requested and no instance is left there.
 */
export const CLUSTER_FINALIZER = 'interoperator.servicefabrik.io/cluster-in-use';

/**
 * A label value from an OSB id: ids are usually valid label values; others (too long, odd
 * characters) are replaced by their sha224 truncated to 63 characters.
 */
export function labelValue(value: string): string {
  return value.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value)
    ? value
    : sha224(value).slice(0, 63);
}
