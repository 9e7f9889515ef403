/**
 * Capacity reserved for instances placed on a cluster, kept per instance id (in
 * `SFCluster.status.reserved`) so that placing the same instance again replaces its reservation,
 * and releasing it is safe to run twice, or for an instance that never reserved anything.
 *
 * Pure: each function returns a new map and leaves its input untouched.
 */
import {
  addAmounts,
  formatResourceList,
  parseResourceList,
  type Amounts,
  type ResourceList,
  type ResourceListInput,
} from './quantity.js';

/** Reservations of a cluster: instance id to the requests reserved for it. */
export type Reservations = Readonly<Record<string, ResourceList>>;

/**
 * The reservations with the instance's requests reserved (replacing what it reserved before).
 * Requests are stored in canonical form.
 *
 * @throws QuantityError when a request is not a quantity.
 */
export function reserve(
  reservations: Reservations | undefined,
  instanceId: string,
  requests: ResourceListInput,
): Reservations {
  const where = `the requests of instance ${instanceId}`;
  return { ...reservations, [instanceId]: formatResourceList(parseResourceList(requests, where)) };
}

/** The reservations without the instance's: unchanged when it has none, so a second release does nothing. */
export function unreserve(reservations: Reservations | undefined, instanceId: string): Reservations {
  // Own keys only: an instance id such as `constructor` or `__proto__` is a key like any other.
  if (!reservations || !Object.hasOwn(reservations, instanceId)) return reservations ?? {};
  const rest: Record<string, ResourceList> = { ...reservations };
  delete rest[instanceId];
  return rest;
}

/**
 * Everything reserved on a cluster, summed.
 *
 * @throws QuantityError naming the instance whose reservation holds an invalid quantity.
 */
export function reservedAmounts(reservations: Reservations | undefined): Amounts {
  let total: Amounts = {};
  for (const [instanceId, requests] of Object.entries(reservations ?? {}))
    total = addAmounts(total, parseResourceList(requests, `status.reserved of instance ${instanceId}`));
  return total;
}

/** Everything reserved on a cluster, as a canonical resource list. */
export function reservedTotal(reservations: Reservations | undefined): ResourceList {
  return formatResourceList(reservedAmounts(reservations));
}

/** What reserving new requests does to an instance's reservation. */
export interface ReservationChange {
  /**
   * `none` when the instance holds exactly these requests already; `shrinks` when it asks no more
   * of any resource than it holds; `grows` otherwise (a first reservation grows unless it asks
   * nothing).
   */
  readonly kind: 'none' | 'shrinks' | 'grows';
  /**
   * The instance's entry as a merge patch of `status.reserved` writes it: the new requests, and
   * null for each resource it held and no longer asks for.
   */
  readonly patch: Readonly<Record<string, string | null>>;
}

/**
 * How the instance's reservation changes when it is to hold `requests` (a plan change, a placement
 * repeated).
 *
 * @throws QuantityError when a request, or what the instance holds, is not a quantity.
 */
export function reservationChange(
  reservations: Reservations | undefined,
  instanceId: string,
  requests: ResourceListInput,
): ReservationChange {
  const next = reserve(undefined, instanceId, requests)[instanceId]!;
  const held = reservations && Object.hasOwn(reservations, instanceId) ? reservations[instanceId] : undefined;
  const patch: Record<string, string | null> = { ...next };
  for (const resource of Object.keys(held ?? {})) if (!(resource in next)) patch[resource] = null;
  if (held === undefined) return { kind: Object.keys(next).length === 0 ? 'shrinks' : 'grows', patch };
  const before = parseResourceList(held, `status.reserved of instance ${instanceId}`);
  const after = parseResourceList(next, `the requests of instance ${instanceId}`);
  const same =
    Object.keys(before).length === Object.keys(after).length &&
    Object.keys(after).every((resource) => before[resource] === after[resource]);
  if (same) return { kind: 'none', patch };
  const grows = Object.keys(after).some((resource) => after[resource]! > (before[resource] ?? 0n));
  return { kind: grows ? 'grows' : 'shrinks', patch };
}
