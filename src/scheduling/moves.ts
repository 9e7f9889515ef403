/**
 * Where a moving instance goes: among the registered clusters other than the one it leaves, as its
 * plan's scheduler decides (the `default` scheduler, which knows only the master, chooses the
 * least utilized of them), or the cluster an admin named, if its scheduler accepts it there.
 *
 * Pure and deterministic.
 */
import { schedule, type SchedulerName } from './registry.js';
import type { ClusterSnapshot, Decision, PlacementRequest, PluginOptions } from './types.js';

/** One move's placement to decide. */
export interface MoveInput {
  readonly scheduler: SchedulerName;
  /** Every registered cluster, the one the instance leaves among them. */
  readonly clusters: readonly ClusterSnapshot[];
  readonly request: PlacementRequest;
  /** The cluster the instance leaves. */
  readonly from: string;
  /** The cluster an admin named; absent: the scheduler chooses. */
  readonly to?: string;
  readonly options?: PluginOptions;
}

/** The scheduler a move decides with: the plan's, but `default` (the master, always) becomes `least-utilized`. */
export const moveScheduler = (scheduler: SchedulerName): SchedulerName =>
  scheduler === 'default' ? 'least-utilized' : scheduler;

const nowhere = (scheduler: string, summary: string): Decision => ({ scheduler, reasons: [], summary });

/** Where the instance goes; without `clusterId` when nowhere, the summary saying why. */
export function decideMove(input: MoveInput): Decision {
  const scheduler = moveScheduler(input.scheduler);
  const { from, to } = input;
  if (to === from) return nowhere(scheduler, `the instance is on cluster ${from} already`);
  const others = input.clusters.filter((c) => c.id !== from);
  const candidates = to === undefined ? others : others.filter((c) => c.id === to);
  if (to !== undefined && candidates.length === 0)
    return nowhere(scheduler, `cluster ${to} is not registered`);
  if (candidates.length === 0) return nowhere(scheduler, `no cluster but ${from} is registered`);
  return schedule({
    scheduler,
    clusters: candidates,
    request: input.request,
    ...(input.options ? { options: input.options } : {}),
  });
}
