/**
 * `resource-aware`: the instance's requests (the plan's `context.requests`) must fit in a
 * cluster's free capacity, and the cluster with the most free capacity wins. Free capacity is
 * allocatable (or the declared `spec.totalCapacity`), cut to `schedulingLimitPercentage`, less
 * the requests of the cluster's pods and the reservations of placements not yet released.
 */
import {
  addAmounts,
  describeAmount,
  parseResourceList,
  subtractAmounts,
  type Amounts,
} from '../../clusters/quantity.js';
import { invalid, SUCCESS, unschedulable, type ClusterSnapshot, type Cycle, type Plugin } from '../types.js';

export const NAME = 'resource-aware';

/** What is scored when the instance requests nothing. */
const DEFAULT_RESOURCES = ['cpu', 'memory'];

interface Data {
  /** The instance's requests. */
  readonly request: Amounts;
  /** Resources compared between clusters: those requested, else cpu and memory. */
  readonly resources: readonly string[];
  /** Free capacity of each cluster that passed, before this instance. */
  readonly free: Map<string, Amounts>;
  /** Most free capacity left after this instance, over the feasible clusters, by resource. */
  most?: ReadonlyMap<string, bigint>;
}

const data = (cycle: Cycle) => cycle.data.get(NAME) as Data;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
const atLeastZero = (n: bigint) => (n < 0n ? 0n : n);

/** Free capacity of a cluster, by resource (negative when overbooked). */
export function freeCapacity(cluster: ClusterSnapshot): Amounts {
  const where = (field: string) => `status.${field} of cluster ${cluster.id}`;
  const allocatable = parseResourceList(cluster.allocatable, where('allocatable'));
  const used = addAmounts(
    parseResourceList(cluster.requests, where('requests')),
    parseResourceList(cluster.reserved, where('reserved')),
  );
  const percent = BigInt(Math.min(100, Math.max(0, Math.floor(cluster.schedulingLimitPercentage ?? 100))));
  const usable: Record<string, bigint> = {};
  for (const [resource, milli] of Object.entries(allocatable)) usable[resource] = (milli * percent) / 100n;
  return subtractAmounts(usable, used);
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
      cycle.data.set(NAME, {
        request,
        resources: requested.length > 0 ? requested : DEFAULT_RESOURCES,
        free: new Map(),
      } satisfies Data);
      return SUCCESS;
    },
    filter(cycle, cluster) {
      const { request, free } = data(cycle);
      let available: Amounts;
      try {
        available = freeCapacity(cluster);
      } catch (err) {
        return invalid(message(err));
      }
      const requested = Object.keys(request).filter((r) => request[r]! > 0n);
      if (requested.length > 0 && Object.keys(cluster.allocatable).length === 0)
        return unschedulable('capacity unknown (no nodes, no spec.totalCapacity)');
      const short = requested
        .sort()
        .filter((r) => (available[r] ?? 0n) < request[r]!)
        .map(
          (r) =>
            `needs ${describeAmount(r, request[r]!)}, ${describeAmount(r, atLeastZero(available[r] ?? 0n))} free`,
        );
      if (short.length > 0) return unschedulable(short.join(' and '));
      free.set(cluster.id, available);
      return SUCCESS;
    },
    preScore(cycle, feasible) {
      const d = data(cycle);
      const most = new Map<string, bigint>();
      for (const cluster of feasible) {
        const available = d.free.get(cluster.id)!;
        for (const r of d.resources) {
          const left = (available[r] ?? 0n) - (d.request[r] ?? 0n);
          const best = most.get(r);
          if (best === undefined || left > best) most.set(r, left);
        }
      }
      d.most = most;
    },
    /** Per resource, what is left after the instance as a share of the most any cluster has left; averaged. */
    score(cycle, cluster) {
      const d = data(cycle);
      const available = d.free.get(cluster.id)!;
      let sum = 0;
      for (const r of d.resources) {
        const most = d.most!.get(r)!;
        const left = (available[r] ?? 0n) - (d.request[r] ?? 0n);
        sum += most > 0n ? (100 * Number(left < 0n ? 0n : left)) / Number(most) : 100;
      }
      return sum / d.resources.length;
    },
    explain(cycle, cluster) {
      const d = data(cycle);
      const available = d.free.get(cluster.id)!;
      return `${d.resources.map((r) => describeAmount(r, atLeastZero(available[r] ?? 0n))).join(', ')} free`;
    },
  };
}
