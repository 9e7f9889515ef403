/**
 * Reading a record's conditions as `kubectl wait --for=condition=<type>` does: the condition of
 * that type (case-insensitive), and only when it describes the current spec, that is when its
 * `observedGeneration` (else the status's) is not behind `metadata.generation`.
 */
import type { KubeObject } from '../../src/resources/types.js';

interface ConditionLike {
  readonly type?: string;
  readonly status?: string;
  readonly reason?: string;
  readonly message?: string;
  readonly observedGeneration?: number;
}

/** The status `kubectl wait --for=condition=<type>` would see; undefined when it would wait on. */
export function waitableCondition(record: KubeObject | undefined, type: string): string | undefined {
  const status = record?.status as { conditions?: ConditionLike[]; observedGeneration?: number } | undefined;
  const condition = status?.conditions?.find((c) => c.type?.toLowerCase() === type.toLowerCase());
  if (!condition) return undefined;
  const generation = record?.metadata.generation;
  const observed = condition.observedGeneration ?? status?.observedGeneration;
  if (generation !== undefined && observed !== undefined && observed < generation) return undefined;
  return condition.status;
}

/** The condition of `type` in the record's status, as written. */
export function conditionOf(record: KubeObject | undefined, type: string): ConditionLike | undefined {
  const status = record?.status as { conditions?: ConditionLike[] } | undefined;
  return status?.conditions?.find((c) => c.type === type);
}
