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

/** The field manager of everything the inter-operator writes with server-side apply. */
export const FIELD_MANAGER = 'interoperator';

/**
 * The field manager of what a binding writes: each binding its own, so what a bind adds to the
 * instance's objects (a user in the database resource) belongs to the binding alone. An update of
 * the instance keeps it, and the unbind can give it up without touching what the instance owns.
 */
export const bindingFieldManager = (bindingName: string): string => `${FIELD_MANAGER}/binding/${bindingName}`;

/** Labels on every record and applied object, for selection with kubectl. */
export const LABELS = {
  instanceId: 'interoperator.servicefabrik.io/instance-id',
  bindingId: 'interoperator.servicefabrik.io/binding-id',
  clusterId: 'interoperator.servicefabrik.io/cluster-id',
  serviceId: 'interoperator.servicefabrik.io/service-id',
  planId: 'interoperator.servicefabrik.io/plan-id',
  /** On SFServiceInstance records: the plan revision (its `status.specHash`) the instance was last updated to. */
  planRevision: 'interoperator.servicefabrik.io/plan-revision',
} as const;

/** Annotations on every record, for audit and to tell a repeated request from a conflicting one. */
export const ANNOTATIONS = {
  /** Digest of the request the record holds. */
  requestHash: 'interoperator.servicefabrik.io/request-hash',
  /** Who asked for it, as JSON (from `X-Broker-API-Originating-Identity`). */
  requestedBy: 'interoperator.servicefabrik.io/requested-by',
} as const;

/** The finalizer that keeps a record until its resources are gone. */
export const FINALIZER = 'interoperator.servicefabrik.io/finalizer';

/**
 * A label value from an OSB id: ids are usually valid label values; others (too long, odd
 * characters) are replaced by their sha224 truncated to 63 characters.
 */
export function labelValue(value: string): string {
  return value.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value)
    ? value
    : sha224(value).slice(0, 63);
}
