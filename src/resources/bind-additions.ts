/**
 * What a binding's bind added to an object of its instance, and the merge patch that takes it out
 * again. A binding made here owns its additions under a field manager of its own and gives them up
 * at its unbind; a binding adopted from Service Fabrik does not: Service Fabrik's inter-operator
 * wrote the whole object under one field manager, so what its bind added (a login in the
 * operator's object, say) is known only by comparing the bind's rendering of the object with the
 * provision's.
 *
 * Pure.
 */
import type { KubeObject } from './types.js';

/** The parts of an object that are its identity or the operator's, never a bind's addition. */
const NOT_COMPARED = new Set(['apiVersion', 'kind', 'metadata', 'status']);

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Sets `key` as an own key of `obj`, whatever its name (`__proto__` too, as JSON has it). */
const setOwn = (obj: Record<string, unknown>, key: string, value: unknown) =>
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });

/** The keys `bound` has, at any depth of its maps, that `provisioned` has not: each set to null. */
function additions(bound: Record<string, unknown>, provisioned: Record<string, unknown>) {
  const patch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(bound)) {
    const kept = Object.hasOwn(provisioned, key) ? provisioned[key] : undefined;
    if (!Object.hasOwn(provisioned, key)) setOwn(patch, key, null);
    else if (isMap(value) && isMap(kept)) {
      const deeper = additions(value, kept);
      if (deeper) setOwn(patch, key, deeper);
    }
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/**
 * A JSON merge patch that removes from the object what the bind's rendering of it (`bound`) has
 * and the provision's rendering of it (`provisioned`) has not: every such key of its maps, outside
 * `apiVersion`, `kind`, `metadata` and `status`. What both render is the provision's and stays,
 * whatever its value; so do lists, whose elements a merge patch cannot take out one by one.
 * Undefined when the bind added nothing, or when the provision does not render the object at all
 * (then it is not the instance's to keep).
 */
export function bindAdditionsRemoval(
  bound: KubeObject,
  provisioned: KubeObject | undefined,
): Record<string, unknown> | undefined {
  if (!provisioned) return undefined;
  const compared = (obj: KubeObject) =>
    Object.fromEntries(Object.entries(obj).filter(([key]) => !NOT_COMPARED.has(key)));
  return additions(compared(bound), compared(provisioned));
}

/** Whether two values (of a template's rendering, so plain JSON) are the same. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => same(v, b[i]));
  if (isMap(a) && isMap(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && same(a[k], b[k]))
    );
  }
  return false;
}

/** What of `rendered`'s maps, at any depth, `other` has not, or has otherwise (lists whole). */
function differences(rendered: Record<string, unknown>, other: Record<string, unknown>) {
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rendered)) {
    if (!Object.hasOwn(other, key)) setOwn(own, key, value);
    else if (isMap(value) && isMap(other[key])) {
      const deeper = differences(value, other[key] as Record<string, unknown>);
      if (Object.keys(deeper).length > 0) setOwn(own, key, deeper);
    } else if (!same(value, other[key])) setOwn(own, key, value);
  }
  return own;
}

/**
 * The part of an object of its instance that a binding's template renders as its own, to apply
 * under the binding's field manager: what its rendering (`rendered`, by the bind or the unbind
 * template) has and the other template's rendering of the object (`counterpart`) has not, or has
 * otherwise, at any depth of its maps outside `metadata` and `status` (a list whole); with the
 * object's identity and the resourceVersion it was rendered from. A bind template that renders the
 * whole object as read with the binding's user added so owns the user alone, not the other
 * bindings' users nor the instance's fields; its unbind, which renders the object without the
 * user, owns nothing, and the user goes. Without a counterpart, all of `rendered`.
 */
export function bindingsOwnPart(rendered: KubeObject, counterpart: KubeObject | undefined): KubeObject {
  if (!counterpart) return rendered;
  const compared = (obj: KubeObject) =>
    Object.fromEntries(Object.entries(obj).filter(([key]) => !NOT_COMPARED.has(key)));
  const { name, namespace, resourceVersion } = rendered.metadata;
  return {
    apiVersion: rendered.apiVersion,
    kind: rendered.kind,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    ...differences(compared(rendered), compared(counterpart)),
  } as KubeObject;
}
