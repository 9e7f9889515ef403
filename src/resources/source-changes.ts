/**
 * Which change of a status check's source can change what the check says: one it has not seen
 * yet, and, while the source's operator has not observed the generation the check saw, one where
 * the operator reports it observed. The status wake-ups (src/controllers/status-wakeups.ts) wake a
 * waiting operation only for such a change; the poll stays the fallback for the rest.
 */
import type { KubeObject } from './types.js';

/** What a waiting operation already saw of one source: what a change must differ by to wake it. */
export interface SeenSource {
  /** Its `metadata.resourceVersion` then: a change at or before it was seen. */
  readonly resourceVersion?: string;
  /**
   * Its `metadata.generation` then, when its operator had not observed it (its
   * `status.observedGeneration` behind): a change before the operator reports at least this
   * generation observed has no answer to give.
   */
  readonly unobservedGeneration?: number;
}

/** A change of a source, as a watch tells of it. */
export interface SourceChange {
  readonly resourceVersion?: string;
  readonly deleted?: boolean;
  readonly observedGeneration?: number;
}

/**
 * What an operation saw of an object it read or applied; undefined for an object that was not
 * there (any change is news). An object whose operator reports no `status.observedGeneration` is
 * taken as it is.
 */
export function seenSource(object: KubeObject | undefined): SeenSource | undefined {
  if (!object) return undefined;
  const resourceVersion = object.metadata?.resourceVersion;
  const generation = (object.metadata as { generation?: unknown } | undefined)?.generation;
  const observed = (object.status as { observedGeneration?: unknown } | undefined)?.observedGeneration;
  const behind = typeof generation === 'number' && typeof observed === 'number' && observed < generation;
  return {
    ...(resourceVersion ? { resourceVersion } : {}),
    ...(behind ? { unobservedGeneration: generation } : {}),
  };
}

/**
 * Whether resourceVersion `a` is later than `b`. Kubernetes gives them as opaque strings; those of
 * an apiserver on etcd are its revisions, decimal and growing, and are compared as numbers. Any
 * other two that differ count as later: a change wrongly taken as news costs one check, a change
 * wrongly taken as seen would cost a poll's wait.
 */
export function laterVersion(a: string, b: string): boolean {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) > BigInt(b);
  return a !== b;
}

/** Whether `change` can change what an operation that saw `seen` of the source would say. */
export function changeIsNews(seen: SeenSource | undefined, change: SourceChange): boolean {
  if (!seen) return true;
  if (
    seen.resourceVersion &&
    change.resourceVersion &&
    !laterVersion(change.resourceVersion, seen.resourceVersion)
  )
    return false;
  if (change.deleted) return true;
  const awaited = seen.unobservedGeneration;
  if (awaited !== undefined && change.observedGeneration !== undefined && change.observedGeneration < awaited)
    return false;
  return true;
}
