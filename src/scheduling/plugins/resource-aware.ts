/**
 * `resource-aware`: the instance's requests (the plan's `context.requests`) must fit in a
 * cluster's free capacity, and the cluster with the most free capacity wins. Free capacity is
 * allocatable (or the declared `spec.totalCapacity`), cut to `schedulingLimitPercentage`, less
 * the requests of the cluster's pods outside instance namespaces and the reservations of the
 * instances placed there: an instance is booked by its reservation alone, never by its pods too.
 */
import {
  describeAmount,
  parseQuantity,
  parseResourceList,
  type Amounts,
  type ResourceList,
} from '../../clusters/quantity.js';
import { invalid, SUCCESS, unschedulable, type ClusterSnapshot, type Cycle, type Plugin } from '../types.js';

export const NAME = 'resource-aware';

/** What is scored when the instance requests nothing. */
const DEFAULT_RESOURCES = ['cpu', 'memory'];

interface Data {
  /** Resources compared between clusters: those requested, else cpu and memory. */
  readonly resources: readonly string[];
  /** The instance's request of each of `resources`. */
  readonly wanted: readonly bigint[];
  /** Whether the instance requests anything at all. */
  readonly requestsAny: boolean;
  /** Free capacity of each of `resources` in each cluster that passed, before this instance. */
  readonly free: Map<string, readonly bigint[]>;
  /** Most capacity left after this instance in any feasible cluster, for each of `resources`. */
  most: readonly bigint[];
}

const data = (cycle: Cycle) => cycle.data.get(NAME) as Data;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
const atLeastZero = (n: bigint) => (n < 0n ? 0n : n);

/** The amount of one resource in a list, zero when absent. */
function amountOf(list: ResourceList, resource: string, field: string, clusterId: string): bigint {
  const value = list[resource];
  if (value === undefined) return 0n;
  try {
    return parseQuantity(value);
  } catch {
    return parseQuantity(value, `${resource} in status.${field} of cluster ${clusterId}`);
  }
}

/** Percentage of allocatable that may be filled, 0-100. */
const limitOf = (cluster: ClusterSnapshot): bigint =>
  BigInt(Math.min(100, Math.max(0, Math.floor(cluster.schedulingLimitPercentage ?? 100))));

/** Free capacity of one resource of a cluster (negative when overbooked). */
function freeOf(cluster: ClusterSnapshot, resource: string, limit: bigint): bigint {
  const allocatable = amountOf(cluster.allocatable, resource, 'allocatable', cluster.id);
  const usable = limit === 100n ? allocatable : (allocatable * limit) / 100n;
  return (
    usable -
    amountOf(cluster.requests, resource, 'requests', cluster.id) -
    amountOf(cluster.reserved, resource, 'reserved', cluster.id)
  );
}

/**
 * Free capacity of a cluster, for every resource it lists (negative when overbooked).
 *
 * @throws QuantityError naming the field and the cluster of an invalid quantity.
 */
export function freeCapacity(cluster: ClusterSnapshot): Amounts {
  const resources = new Set(
    [cluster.allocatable, cluster.requests, cluster.reserved].flatMap((list) => Object.keys(list)),
  );
  const limit = limitOf(cluster);
  const free: Record<string, bigint> = {};
  for (const resource of [...resources].sort()) free[resource] = freeOf(cluster, resource, limit);
  return free;
}

/**
 * What the cluster lacks for `requests`, for people (`needs cpu 4, cpu 1 free`); undefined when
 * they fit in its free capacity. The caller leaves out of the snapshot's reservations whatever
 * the requests replace.
 *
 * @throws QuantityError naming the field and the cluster of an invalid quantity.
 */
export function shortfall(cluster: ClusterSnapshot, requests: Amounts): string | undefined {
  const limit = limitOf(cluster);
  const short: string[] = [];
  for (const resource of Object.keys(requests).sort()) {
    const wanted = requests[resource]!;
    if (wanted <= 0n) continue;
    const available = freeOf(cluster, resource, limit);
    if (available < wanted)
      short.push(
        `needs ${describeAmount(resource, wanted)}, ${describeAmount(resource, atLeastZero(available))} free`,
      );
  }
  return short.length > 0 ? short.join(' and ') : undefined;
}

function isEmpty(list: ResourceList): boolean {
  for (const _ in list) return false;
  return true;
}

export function resourceAware(): Plugin {
  return {
    name: NAME,
    preFilter(cycle) {
      let request: Amounts;
      try {
        request = parseResourceList(cycle.request.requests, "the plan's context.requests");
      } catch (err) {
        return invalid(message(err));
      }
      const negative = Object.keys(request).find((r) => request[r]! < 0n);
      if (negative) return invalid(`the plan's context.requests asks for a negative ${negative}`);
      const requested = Object.keys(request)
        .filter((r) => request[r]! > 0n)
        .sort();
      const resources = requested.length > 0 ? requested : DEFAULT_RESOURCES;
      cycle.data.set(NAME, {
        resources,
        wanted: resources.map((r) => request[r] ?? 0n),
        requestsAny: requested.length > 0,
        free: new Map(),
        most: [],
      } satisfies Data);
      return SUCCESS;
    },
    filter(cycle, cluster) {
      const { resources, wanted, requestsAny, free } = data(cycle);
      if (requestsAny && isEmpty(cluster.allocatable))
        return unschedulable('capacity unknown (no nodes, no spec.totalCapacity)');
      const limit = limitOf(cluster);
      const available = new Array<bigint>(resources.length);
      let short: string[] | undefined;
      for (let k = 0; k < resources.length; k++) {
        try {
          available[k] = freeOf(cluster, resources[k]!, limit);
        } catch (err) {
          return invalid(message(err));
        }
        if (available[k]! < wanted[k]!)
          (short ??= []).push(
            `needs ${describeAmount(resources[k]!, wanted[k]!)}, ${describeAmount(resources[k]!, atLeastZero(available[k]!))} free`,
          );
      }
      if (short) return unschedulable(short.join(' and '));
      free.set(cluster.id, available);
      return SUCCESS;
    },
    preScore(cycle, feasible) {
      const d = data(cycle);
      const most = d.resources.map(() => undefined as bigint | undefined);
      for (const cluster of feasible) {
        const available = d.free.get(cluster.id)!;
        for (let k = 0; k < most.length; k++) {
          const left = available[k]! - d.wanted[k]!;
          if (most[k] === undefined || left > most[k]!) most[k] = left;
        }
      }
      d.most = most.map((m) => m ?? 0n);
    },
    /** Per resource, what is left after the instance as a share of the most any cluster has left; averaged. */
    score(cycle, cluster) {
      const { free, wanted, most } = data(cycle);
      const available = free.get(cluster.id)!;
      let sum = 0;
      for (let k = 0; k < most.length; k++) {
        const left = available[k]! - wanted[k]!;
        sum += most[k]! > 0n ? (100 * Number(left < 0n ? 0n : left)) / Number(most[k]!) : 100;
      }
      return sum / most.length;
    },
    explain(cycle, cluster) {
      const { resources, free } = data(cycle);
      const available = free.get(cluster.id)!;
      return `${resources.map((r, k) => describeAmount(r, atLeastZero(available[k]!))).join(', ')} free`;
    },
  };
}
