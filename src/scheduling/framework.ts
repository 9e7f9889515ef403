/**
 * The scheduling framework: runs a scheduler's plugins over the clusters and returns the decision
 * with every cluster's reason. Deterministic: the same clusters, request and state always give the
 * same decision, whatever the order the clusters come in.
 */
import type {
  ClusterSnapshot,
  ClusterVerdict,
  Cycle,
  Decision,
  PlacementRequest,
  Plugin,
  SchedulingState,
} from './types.js';

/** A plugin enabled in a scheduler, with the weight of its score. */
export interface EnabledPlugin {
  readonly plugin: Plugin;
  /** Weight of its score in the total. @default 1 */
  readonly weight?: number;
}

/** A scheduler: a name and its plugins, run in order. */
export interface Scheduler {
  readonly name: string;
  readonly plugins: readonly EnabledPlugin[];
}

/** How many clusters besides the chosen one the summary names. */
export const SUMMARY_CLUSTERS = 8;

const NUMERIC = /^\d+$/;

/**
 * Order of cluster ids, the tie break: numeric ids by value (`2` before `10`) and before other ids,
 * which compare by code unit.
 */
export function compareClusterIds(a: string, b: string): number {
  const numericA = NUMERIC.test(a);
  const numericB = NUMERIC.test(b);
  if (numericA && numericB) {
    const x = a.replace(/^0+(?=\d)/, '');
    const y = b.replace(/^0+(?=\d)/, '');
    if (x.length !== y.length) return x.length - y.length;
    if (x !== y) return x < y ? -1 : 1;
  } else if (numericA !== numericB) return numericA ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/** Runs a scheduler. Plugin results outside the contract (a score out of 0-100) throw: a plugin bug. */
export function runScheduler(
  scheduler: Scheduler,
  clusters: readonly ClusterSnapshot[],
  request: PlacementRequest,
  state: SchedulingState = {},
): Decision {
  const cycle: Cycle = { request, state, data: new Map() };
  const sorted = [...clusters].sort((a, b) => compareClusterIds(a.id, b.id));
  const plugins = scheduler.plugins;

  for (const { plugin } of plugins) {
    const verdict = plugin.preFilter?.(cycle);
    if (verdict && verdict.code !== 'Success')
      return { scheduler: scheduler.name, reasons: [], summary: `no eligible cluster: ${verdict.reason}` };
  }

  const rejected = new Map<string, ClusterVerdict>();
  const feasible: ClusterSnapshot[] = [];
  for (const cluster of sorted) {
    let verdict: ClusterVerdict | undefined;
    for (const { plugin } of plugins) {
      if (!plugin.filter) continue;
      const result = plugin.filter(cycle, cluster);
      if (result.code !== 'Success') {
        verdict = {
          clusterId: cluster.id,
          eligible: false,
          plugin: plugin.name,
          code: result.code,
          reason: result.reason,
        };
        break;
      }
    }
    if (verdict) rejected.set(cluster.id, verdict);
    else feasible.push(cluster);
  }

  if (feasible.length === 0) {
    const reasons = sorted.map((c) => rejected.get(c.id)!);
    const why = reasons.length === 0 ? 'no clusters registered' : listed(reasons.map(rejection));
    return { scheduler: scheduler.name, reasons, summary: `no eligible cluster: ${why}` };
  }

  const totals = scoreFeasible(cycle, plugins, feasible);
  const ranked = rank(totals, SUMMARY_CLUSTERS + 1);
  const chosen = feasible[ranked[0]!]!;

  const scores = new Map(feasible.map((c, i) => [c.id, round2(totals[i]!)]));
  const reasons: ClusterVerdict[] = sorted.map(
    (c) => rejected.get(c.id) ?? { clusterId: c.id, eligible: true, score: scores.get(c.id)! },
  );

  const others = [
    ...ranked.slice(1).map((i) => `${feasible[i]!.id}: ${explain(cycle, plugins, feasible[i]!, totals[i]!)}`),
    ...sorted.filter((c) => rejected.has(c.id)).map((c) => rejection(rejected.get(c.id)!)),
  ];
  const summary = [`chose ${chosen.id}: ${explain(cycle, plugins, chosen, totals[ranked[0]!]!)}`];
  const shown = others.slice(0, SUMMARY_CLUSTERS);
  const more = clusters.length - 1 - shown.length;
  return {
    scheduler: scheduler.name,
    clusterId: chosen.id,
    reasons,
    summary: [...summary, ...shown, ...(more > 0 ? [`and ${more} more`] : [])].join('; '),
  };
}

function rejection(verdict: ClusterVerdict): string {
  return `${verdict.clusterId}: ${verdict.eligible ? 'eligible' : verdict.reason}`;
}

/** At most SUMMARY_CLUSTERS of the texts, then how many more there are. */
function listed(texts: readonly string[]): string {
  const shown = texts.slice(0, SUMMARY_CLUSTERS);
  const more = texts.length - shown.length;
  return [...shown, ...(more > 0 ? [`and ${more} more`] : [])].join('; ');
}

/** Weighted mean of the plugins' scores of each feasible cluster, 0-100 (0 when nothing scores). */
function scoreFeasible(
  cycle: Cycle,
  plugins: readonly EnabledPlugin[],
  feasible: readonly ClusterSnapshot[],
): number[] {
  const totals = new Array<number>(feasible.length).fill(0);
  let weights = 0;
  for (const { plugin, weight = 1 } of plugins) {
    plugin.preScore?.(cycle, feasible);
    if (!plugin.score) continue;
    const raw = feasible.map((c) => plugin.score!(cycle, c));
    const scores = plugin.normalizeScores ? plugin.normalizeScores(cycle, raw) : raw;
    for (let i = 0; i < feasible.length; i++) {
      const score = scores[i]!;
      if (!(score >= 0 && score <= 100))
        throw new Error(`plugin ${plugin.name} scored cluster ${feasible[i]!.id} ${score}, outside 0-100`);
      totals[i]! += weight * score;
    }
    weights += weight;
  }
  return weights > 0 ? totals.map((t) => t / weights) : totals;
}

/**
 * Indices of the best `count` scores, best first: higher score, then lower cluster id (the
 * clusters are in id order, so the lower index).
 */
function rank(totals: readonly number[], count: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < totals.length; i++) {
    const score = totals[i]!;
    if (best.length === count && score <= totals[best[best.length - 1]!]!) continue;
    let at = best.length;
    while (at > 0 && score > totals[best[at - 1]!]!) at--;
    best.splice(at, 0, i);
    if (best.length > count) best.pop();
  }
  return best;
}

function explain(
  cycle: Cycle,
  plugins: readonly EnabledPlugin[],
  cluster: ClusterSnapshot,
  total: number,
): string {
  const words = plugins
    .map(({ plugin }) => plugin.explain?.(cycle, cluster))
    .filter((w): w is string => Boolean(w));
  return words.length > 0 ? words.join(', ') : `score ${round2(total)}`;
}
