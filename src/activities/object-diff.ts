/**
 * What applying an object would change: the live object against what the apiserver would store
 * (a server-side dry run of the apply), field by field. Fields the apiserver keeps for itself
 * (resourceVersion, uid, managedFields, timestamps, generation, status) are not compared, and the
 * values in a Secret's `data` and `stringData` are never reported, only their keys.
 *
 * Pure: plain objects in, plain values out. The dry-run activity does the reads.
 */
import type { FieldChange, ObjectChange } from '../admin/dry-run.js';
import { KUBECTL_LAST_APPLIED_ANNOTATION, LABELS } from '../resources/names.js';
import type { AppliedResource, KubeObject } from '../resources/types.js';

/** Metadata the apiserver sets or that only bookkeeps; a change there is no change of the object. */
const IGNORED_METADATA = new Set([
  'resourceVersion',
  'uid',
  'managedFields',
  'creationTimestamp',
  'generation',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
]);

/** Labels and annotations that only bookkeep: the revision, what `kubectl apply` leaves. */
const IGNORED_MARKS = new Set([LABELS.planRevision, KUBECTL_LAST_APPLIED_ANNOTATION]);

/** An object's fields as they are compared: without status and the ignored metadata. */
export function comparable(obj: KubeObject): Record<string, unknown> {
  const { status: _status, metadata, ...rest } = obj as KubeObject & { status?: unknown };
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (IGNORED_METADATA.has(key)) continue;
    if ((key === 'labels' || key === 'annotations') && isRecord(value)) {
      const marks = Object.fromEntries(Object.entries(value).filter(([k]) => !IGNORED_MARKS.has(k)));
      if (Object.keys(marks).length > 0) kept[key] = marks;
      continue;
    }
    kept[key] = value;
  }
  return { ...rest, metadata: kept };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** A path step: `.key` for plain keys, `["key"]` for keys with dots, slashes or spaces. */
const step = (path: string, key: string): string =>
  /^[A-Za-z0-9_-]+$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`;

/** Whether two JSON values are equal (key order aside). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((value, i) => sameValue(value, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((key) => sameValue(a[key], b[key]));
  }
  return false;
}

/**
 * The fields that differ between `before` and `after`, depth first in key order. Objects are
 * compared key by key and arrays of the same length item by item; an array whose length changes
 * is one change of the whole array. A key whose value is undefined counts as absent.
 */
export function fieldChanges(before: unknown, after: unknown, path = ''): FieldChange[] {
  if (sameValue(before, after)) return [];
  if (isRecord(before) && isRecord(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((key) => fieldChanges(before[key], after[key], step(path, key)));
  }
  if (Array.isArray(before) && Array.isArray(after) && before.length === after.length) {
    return before.flatMap((item, i) => fieldChanges(item, after[i], `${path}[${i}]`));
  }
  return [
    {
      path,
      ...(before !== undefined ? { old: before } : {}),
      ...(after !== undefined ? { new: after } : {}),
    },
  ];
}

/** Whether the object is a Secret, whose data values are never reported. */
const isSecret = (ref: Pick<AppliedResource, 'apiVersion' | 'kind'>): boolean =>
  ref.kind === 'Secret' && ref.apiVersion === 'v1';

/**
 * The changes of a Secret's `data` and `stringData` keys (added, changed or removed), with no value.
 * A key's value changing is seen by comparing the values here; only the key leaves this function.
 */
function secretDataChanges(before: Record<string, unknown>, after: Record<string, unknown>): FieldChange[] {
  const changes: FieldChange[] = [];
  for (const field of ['data', 'stringData']) {
    const old = isRecord(before[field]) ? before[field] : {};
    const next = isRecord(after[field]) ? after[field] : {};
    const keys = [...new Set([...Object.keys(old), ...Object.keys(next)])].sort();
    for (const key of keys)
      if (!sameValue(old[key], next[key])) changes.push({ path: step(field, key), redacted: true });
  }
  return changes;
}

/**
 * What applying would do to one object: `live` is the object now (undefined when absent), `after`
 * what the apiserver would store. Secrets' data are reported by key only.
 */
export function objectChange(
  ref: AppliedResource,
  live: KubeObject | undefined,
  after: KubeObject,
): ObjectChange {
  const id = refFields(ref);
  if (!live) return { ...id, change: 'added' };
  const before = comparable(live);
  const next = comparable(after);
  let fields: FieldChange[];
  if (isSecret(ref)) {
    // The values never reach the general comparison, which would report them.
    const withoutData = (o: Record<string, unknown>) => ({ ...o, data: undefined, stringData: undefined });
    fields = [
      ...fieldChanges(withoutData(before), withoutData(next)),
      ...secretDataChanges(before, next),
    ].sort((a, b) => a.path.localeCompare(b.path));
  } else {
    fields = fieldChanges(before, next);
  }
  return fields.length > 0 ? { ...id, change: 'changed', fields } : { ...id, change: 'unchanged' };
}

/** An object the instance recorded that the new templates no longer render: the update deletes it. */
export const removedObject = (ref: AppliedResource): ObjectChange => ({
  ...refFields(ref),
  change: 'removed',
});

const refFields = (ref: AppliedResource) => ({
  apiVersion: ref.apiVersion,
  kind: ref.kind,
  name: ref.name,
  ...(ref.namespace ? { namespace: ref.namespace } : {}),
});
