/**
 * The labels of instance and binding records under Service Fabrik's own keys, beside ours
 * ({@link LABELS}): what its broker writes, so that selectors written for it (`plan_id=…`,
 * `instance_guid=…`, `state in (…)`, `OWNER_INTEROPERATOR_NAMESPACE=…`) find our records too.
 * Pure.
 */
import { labelValue, resourceName } from './names.js';

/** Service Fabrik's label keys on SFServiceInstance and SFServiceBinding records. */
export const SF_LABELS = {
  planId: 'plan_id',
  serviceId: 'service_id',
  platform: 'platform',
  organizationGuid: 'organization_guid',
  spaceGuid: 'space_guid',
  origin: 'origin',
  subaccountId: 'subaccount_id',
  region: 'region',
  /** The state the broker wrote with the request: `in_queue`, `update` or `delete`. */
  state: 'state',
  /** On binding records: the Kubernetes name of the instance's record. */
  instanceGuid: 'instance_guid',
  /**
   * The namespace of the installation that owns the record (its registry namespace): an
   * installation sees records without this label, or with its own namespace in it, and no other.
   */
  owner: 'OWNER_INTEROPERATOR_NAMESPACE',
} as const;

/** The state label of a record, by the OSB operation that wrote it last, as Service Fabrik names it. */
export type RequestState = 'in_queue' | 'update' | 'delete';

/** The state label a request writes: a creation queues, an update updates, a deletion deletes. */
export function requestState(operation: string): RequestState {
  if (operation === 'update') return 'update';
  if (operation === 'deprovision' || operation === 'unbind') return 'delete';
  return 'in_queue';
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Whether `value` is a valid Kubernetes label value: at most 63 characters of the allowed kinds. */
export const isLabelValue = (value: string): boolean => value.length <= 63 && LABEL_VALUE.test(value);

/** `value` trimmed when it is text that is a non-empty valid label value; else undefined (the label is left out). */
function verbatim(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed && isLabelValue(trimmed) ? trimmed : undefined;
}

/**
 * The labels Service Fabrik takes from an instance request's OSB `context` (`platform`,
 * `organization_guid`, `space_guid`, `origin`, `subaccount_id`, `region`), each trimmed; a value
 * that is not a valid label value is left out rather than changed, since a selector by it could
 * not find it anyway. The request's top-level organization and space stand in for a context
 * that has none.
 */
export function contextLabels(
  context: unknown,
  fallback: { readonly organizationGuid?: string; readonly spaceGuid?: string } = {},
): Record<string, string> {
  const from = context && typeof context === 'object' ? (context as Record<string, unknown>) : {};
  const values: [string, unknown][] = [
    [SF_LABELS.platform, from.platform],
    [SF_LABELS.organizationGuid, from.organization_guid ?? fallback.organizationGuid],
    [SF_LABELS.spaceGuid, from.space_guid ?? fallback.spaceGuid],
    [SF_LABELS.origin, from.origin],
    [SF_LABELS.subaccountId, from.subaccount_id],
    [SF_LABELS.region, from.region],
  ];
  const labels: Record<string, string> = {};
  for (const [key, value] of values) {
    const kept = verbatim(value);
    if (kept !== undefined) labels[key] = kept;
  }
  return labels;
}

/** The owner label of an installation whose registry namespace is `owner`. */
export const ownerLabel = (owner: string | undefined): Record<string, string> => {
  const kept = verbatim(owner);
  return kept ? { [SF_LABELS.owner]: kept } : {};
};

/** What an instance request is labelled by. */
export interface LabelledInstanceRequest {
  readonly serviceId: string;
  readonly planId: string;
  readonly organizationGuid?: string;
  readonly spaceGuid?: string;
  readonly context?: unknown;
}

/**
 * Service Fabrik's labels of an instance record written by `operation` for `req`, in the
 * installation whose registry namespace is `owner`. Plan and service ids that are not valid label
 * values are hashed, as ours are ({@link labelValue}).
 */
export function instanceRecordLabels(
  req: LabelledInstanceRequest,
  operation: string,
  owner: string | undefined,
): Record<string, string> {
  return {
    [SF_LABELS.planId]: labelValue(req.planId.trim()),
    [SF_LABELS.serviceId]: labelValue(req.serviceId.trim()),
    ...contextLabels(req.context, req),
    ...ownerLabel(owner),
    [SF_LABELS.state]: requestState(operation),
  };
}

/**
 * Service Fabrik's labels of a binding record written by `operation`: the instance's record's
 * name (`instance_guid`), the owner and the state.
 */
export function bindingRecordLabels(
  req: { readonly instanceId: string },
  operation: string,
  owner: string | undefined,
): Record<string, string> {
  return {
    [SF_LABELS.instanceGuid]: resourceName(req.instanceId),
    ...ownerLabel(owner),
    [SF_LABELS.state]: requestState(operation),
  };
}

/**
 * Whether a record with `labels` belongs to the installation whose registry namespace is `owner`,
 * as Service Fabrik's interoperator filters what it watches: a record without the owner label is
 * everyone's (written before the label, or by a broker that sets none); one with it belongs to
 * the namespace it names. Without an owner of its own, an installation sees every record.
 */
export function isOwnedBy(
  labels: Readonly<Record<string, string>> | undefined,
  owner: string | undefined,
): boolean {
  if (!owner) return true;
  const named = labels?.[SF_LABELS.owner];
  return named === undefined || named === owner;
}
