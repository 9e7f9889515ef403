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
