/**
 * Reading what a plan's templates render as values: the objects its `sources` template names, what
 * its `status` template says of an operation, and the bind response in it. Also what templates
 * see of an object.
 *
 * Pure: plain values in, plain values out. The resource activities render and read; `plan check`
 * reads a plan's samples with the same functions.
 */
import { bindingResponseProblem } from '../osb/responses.js';
import type { AppliedResource, KubeObject } from '../resources/types.js';

/** The states an operation is in, as the status template says them. */
export type StatusState = 'in progress' | 'succeeded' | 'failed';

/** The states a status section may declare, as the workers read them. */
export const STATUS_STATES: readonly StatusState[] = ['in progress', 'succeeded', 'failed'];

/**
 * Top-level template keys that sources may not shadow: the records (`instance`, `binding`), whose
 * names and namespace the broker reads from the data, and `action`, a custom action's run. A
 * source may take the key of a catalog entry (`plan`, `service`), as in the original: the
 * templates rendered after the sources then see the object under that key (Service Fabrik's
 * samples name a Kubernetes Service `service`).
 */
const RESERVED = new Set(['instance', 'binding', 'action']);

/** What the `status` template says of one operation. */
export interface StatusSection {
  readonly state: StatusState;
  readonly description?: string;
  readonly dashboardUrl?: string;
  /** The bind response, as the template rendered it (an object, or JSON text). */
  readonly response?: unknown;
  /**
   * Whether the instance is still usable after the operation failed (`instanceUsable`), when the
   * section says so: OSB's `instance_usable` of a failed update or deprovision.
   */
  readonly instanceUsable?: boolean;
  /**
   * Whether a failed update may be repeated (`updateRepeatable`), when the section says so: OSB's
   * `update_repeatable` of a failed update.
   */
  readonly updateRepeatable?: boolean;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object';

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() ? value.trim() : undefined;

/**
 * A yes-or-no field of a status section (`instanceUsable`, `updateRepeatable`), as Service Fabrik
 * reads it: the template renders text, so `"false"` and `false` both say no, and any other value
 * it sets says yes. Case and surrounding blanks do not matter. Undefined when the field is unset
 * or blank, which leaves the broker's own answer.
 */
export function statusFlag(value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  const said = String(value).trim().toLowerCase();
  if (said === '') return undefined;
  return said !== 'false';
}

/**
 * The objects the `sources` template names, by the key templates see them under: entries with an
 * apiVersion, a kind and a name, in the instance's namespace unless they name another. Entries
 * under a reserved key, or without those fields, are passed over.
 */
export function sourceReferences(sources: unknown, namespace: string): [string, AppliedResource][] {
  if (!isRecord(sources)) return [];
  const found: [string, AppliedResource][] = [];
  for (const [key, ref] of Object.entries(sources)) {
    if (RESERVED.has(key) || !isRecord(ref)) continue;
    const { apiVersion, kind, name, namespace: named } = ref;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof name !== 'string') continue;
    found.push([
      key,
      { apiVersion, kind, name, namespace: typeof named === 'string' && named ? named : namespace },
    ]);
  }
  return found;
}

/**
 * The data of the templates rendered after the `sources` template: `base` (the records) with each
 * fetched source object under its key, as templates see it ({@link forTemplate}); a source that
 * does not exist (undefined) is absent. Keys are defined as own data properties, so a key such as
 * `__proto__` stays data.
 */
export function withSources(
  base: Readonly<Record<string, unknown>>,
  fetched: readonly (readonly [key: string, obj: KubeObject | undefined])[],
): Record<string, unknown> {
  const data: Record<string, unknown> = { ...base };
  for (const [key, obj] of fetched) {
    if (obj)
      Object.defineProperty(data, key, {
        value: forTemplate(obj),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return data;
}

/**
 * What the `status` template's values say of `operation`: its section (an update without one reads
 * the provision's), a declared `succeeded` or `failed` taken as it is and any other declared state
 * as in progress. Without a declared state a deletion has succeeded (once its objects are gone,
 * which the caller checks) and anything else is in progress. The description is the `error`, else
 * the `description`, else (for an instance's operation, as Service Fabrik copies it to the
 * record's `status.description`) the `response` when it is text; a binding's `response` is its
 * bind response. `instanceUsable` and `updateRepeatable` are read by {@link statusFlag}.
 */
export function readStatusSection(values: unknown, operation: string): StatusSection {
  const sections = isRecord(values) ? values : {};
  const key = operation === 'update' && !sections.update ? 'provision' : operation;
  const section = (sections[key] ?? {}) as Record<string, unknown>;
  const declared = text(section.state);
  const deletion = operation === 'deprovision' || operation === 'unbind';
  const state: StatusState =
    declared === 'succeeded' || declared === 'failed'
      ? declared
      : declared || !deletion
        ? 'in progress'
        : 'succeeded';
  const ofBinding = operation === 'bind' || operation === 'unbind';
  const description =
    text(section.error) ?? text(section.description) ?? (ofBinding ? undefined : text(section.response));
  const dashboardUrl = text(section.dashboardUrl);
  const instanceUsable = statusFlag(section.instanceUsable);
  const updateRepeatable = statusFlag(section.updateRepeatable);
  return {
    state,
    ...(description ? { description } : {}),
    ...(dashboardUrl ? { dashboardUrl } : {}),
    ...(section.response !== undefined ? { response: section.response } : {}),
    ...(instanceUsable !== undefined ? { instanceUsable } : {}),
    ...(updateRepeatable !== undefined ? { updateRepeatable } : {}),
  };
}

/** Whether the `status` template's values have a section named `operation` (a custom action's, `x-<name>`). */
export function hasStatusSection(values: unknown, operation: string): boolean {
  return isRecord(values) && Object.hasOwn(values, operation) && isRecord(values[operation]);
}

/**
 * The bind response as the JSON text to keep, or why it cannot be kept: text that is not JSON, or
 * a value that breaks the OSB rules for a binding's response.
 */
export function bindResponseText(response: unknown): { readonly json: string } | { readonly error: string } {
  let parsed: unknown = response;
  if (typeof response === 'string') {
    try {
      parsed = response.trim() ? JSON.parse(response) : {};
    } catch {
      return {
        error:
          'The status template rendered a bind response that is not JSON; check the plan’s status template',
      };
    }
  }
  const found = bindingResponseProblem(parsed ?? {});
  if (found) {
    return {
      error: `The bind response the status template rendered ${found}; check the plan’s status template`,
    };
  }
  return { json: JSON.stringify(parsed ?? {}) };
}

/** An object as templates see it: without Kubernetes bookkeeping that only makes the data noisy. */
export function forTemplate(obj: KubeObject): KubeObject {
  const { managedFields: _managed, ...metadata } = obj.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
  };
  return { ...obj, metadata };
}

/**
 * The first source object its operator has not yet observed, by the Kubernetes convention: its
 * `status.observedGeneration` is behind its `metadata.generation`. Its status still describes an
 * earlier spec, so what the status template reads of it is not yet the answer to this change.
 * Objects without both numbers are taken as they are. Undefined when every source is observed.
 */
export function unobservedSource(
  data: Record<string, unknown>,
  sourceKeys: readonly string[],
): string | undefined {
  for (const key of sourceKeys) {
    const obj = data[key] as
      { metadata?: { generation?: unknown }; status?: { observedGeneration?: unknown } } | undefined;
    const generation = obj?.metadata?.generation;
    const observed = obj?.status?.observedGeneration;
    if (typeof generation === 'number' && typeof observed === 'number' && observed < generation) return key;
  }
  return undefined;
}
