/**
 * What Service Fabrik's detailed record-state series (`interoperator_service_instances_metrics_state`,
 * `interoperator_service_bindings_metrics_state`) say of a record beside its ids, as record-states.ts
 * reports them. Our records are the kinds Service Fabrik's are, so each label reads the field its
 * interoperator reads; only the last operation, which its controllers keep in a label, is ours in
 * `status.operation`.
 *
 * Pure.
 */
import { LAST_OPERATION_LABEL, lastOperationLabelOf } from '../adoption/service-fabrik.js';
import type { BindingStateLabels, InstanceStateLabels } from '../metrics/recorders.js';
import type { SFServiceBinding, SFServiceInstance } from '../resources/types.js';

/** A timestamp as the API server writes it (RFC 3339), its fraction of a second apart. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

const pad = (value: number, width = 2) => String(value).padStart(width, '0');

/**
 * A timestamp of a record as Service Fabrik's labels print it: Go's `time.Time.String()` of the
 * `metav1.Time` its client decoded, which is the time in the process's zone, UTC in its image
 * (`2026-11-28 21:19:38 +0000 UTC`, a fraction of a second only when there is one, without its
 * trailing zeros). Empty when there is none (a deletion not asked for) or it is no RFC 3339 time.
 */
export function goTimeString(timestamp: string | undefined): string {
  const match = timestamp === undefined ? null : RFC3339.exec(timestamp);
  if (!match) return '';
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0] = match.slice(1, 7).map(Number);
  const [fraction = '', sign, offsetHours, offsetMinutes] = match.slice(7);
  const at = new Date(0);
  at.setUTCFullYear(y, mo - 1, d);
  at.setUTCHours(h, mi, s, 0);
  // Go refuses a field out of its range, where a Date would carry it over.
  if (at.getUTCMonth() !== mo - 1 || at.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) return '';
  if (sign) {
    const offset = (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
    at.setTime(at.getTime() - (sign === '-' ? -offset : offset));
  }
  const nanoseconds = fraction.slice(0, 9).replace(/0+$/, '');
  return (
    `${pad(at.getUTCFullYear(), 4)}-${pad(at.getUTCMonth() + 1)}-${pad(at.getUTCDate())} ` +
    `${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())}` +
    `${nanoseconds ? `.${nanoseconds}` : ''} +0000 UTC`
  );
}

/**
 * An instance's last operation as Service Fabrik names it (`in_queue`, `update`, `delete`): of the
 * operation its record says it last ran, else the label Service Fabrik's controllers wrote on it,
 * else empty.
 */
export function serviceFabrikLastOperation(record: SFServiceInstance): string {
  return (
    lastOperationLabelOf(record.status?.operation) ?? record.metadata.labels?.[LAST_OPERATION_LABEL] ?? ''
  );
}

/** The labels of an instance's detailed series. */
export function instanceStateLabels(record: SFServiceInstance): InstanceStateLabels {
  return {
    state: record.status?.state ?? '',
    creationTimestamp: goTimeString(record.metadata.creationTimestamp),
    deletionTimestamp: goTimeString(record.metadata.deletionTimestamp),
    serviceId: record.spec.serviceId,
    planId: record.spec.planId,
    organizationGuid: record.spec.organizationGuid ?? '',
    spaceGuid: record.spec.spaceGuid ?? '',
    namespace: record.metadata.namespace ?? '',
    lastOperation: serviceFabrikLastOperation(record),
  };
}

/** The labels of a binding's detailed series. */
export function bindingStateLabels(record: SFServiceBinding): BindingStateLabels {
  return {
    state: record.status?.state ?? '',
    creationTimestamp: goTimeString(record.metadata.creationTimestamp),
    deletionTimestamp: goTimeString(record.metadata.deletionTimestamp),
    namespace: record.metadata.namespace ?? '',
  };
}
