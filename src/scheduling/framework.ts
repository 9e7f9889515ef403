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

/** A cluster id as it sorts: numeric ids without leading zeros, by length then digits. */
export interface IdKey {
  readonly id: string;
  /** The digits without leading zeros, for numeric ids. */
  readonly digits?: string;
}

export function idKey(id: string): IdKey {
  let numeric = id.length > 0;
  for (let i = 0; i < id.length && numeric; i++) {
    const c = id.charCodeAt(i);
    numeric = c >= 48 && c <= 57;
  }
  if (!numeric) return { id };
  let start = 0;
  while (start < id.length - 1 && id.charCodeAt(start) === 48) start++;
  return { id, digits: id.slice(start) };
}

export function compareKeys(a: IdKey, b: IdKey): number {
  if (a.digits !== undefined && b.digits !== undefined) {
    if (a.digits.length !== b.digits.length) return a.digits.length - b.digits.length;
    if (a.digits !== b.digits) return a.digits < b.digits ? -1 : 1;
  } else if (a.digits !== undefined) return -1;
  else if (b.digits !== undefined) return 1;
  return a.id === b.id ? 0 : a.id < b.id ? -1 : 1;
}

/**
 * Order of cluster ids, the tie break: numeric ids by value (`2` before `10`) and before other ids,
 * which compare by code unit.
 */
export function compareClusterIds(a: string, b: string): number {
  return compareKeys(idKey(a), idKey(b));
}

/** The clusters in id order. */
export function sortClusters<T extends { readonly id: string }>(clusters: readonly T[]): T[] {
  return clusters
    .map((cluster) => ({ cluster, key: idKey(cluster.id) }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map(({ cluster }) => cluster);
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
  const sorted = sortClusters(clusters);
  const plugins = scheduler.plugins;

  for (const { plugin } of plugins) {
    const verdict = plugin.preFilter?.(cycle);
    if (verdict && verdict.code !== 'Success')
      return { scheduler: scheduler.name, reasons: [], summary: `no eligible cluster: ${verdict.reason}` };
  }

  const filters = plugins.map((p) => p.plugin).filter((p) => p.filter);
  // Each cluster's verdict, by its place in `sorted`; eligible ones get their score below.
  const reasons = new Array<ClusterVerdict>(sorted.length);
  const feasible: ClusterSnapshot[] = [];
  const feasibleAt: number[] = [];
  for (let at = 0; at < sorted.length; at++) {
    const cluster = sorted[at]!;
    let verdict: ClusterVerdict | undefined;
    for (const plugin of filters) {
      const result = plugin.filter!(cycle, cluster);
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
    if (verdict) reasons[at] = verdict;
    else {
      feasible.push(cluster);
      feasibleAt.push(at);
    }
  }

  if (feasible.length === 0) {
    const why = reasons.length === 0 ? 'no clusters registered' : listed(reasons, sorted.length);
    return { scheduler: scheduler.name, reasons, summary: `no eligible cluster: ${why}` };
  }

  const totals = scoreFeasible(cycle, plugins, feasible);
  for (let i = 0; i < feasible.length; i++)
    reasons[feasibleAt[i]!] = { clusterId: feasible[i]!.id, eligible: true, score: round2(totals[i]!) };
  const ranked = rank(totals, SUMMARY_CLUSTERS + 1);
  const chosen = feasible[ranked[0]!]!;

  const summary = [`chose ${chosen.id}: ${explain(cycle, plugins, chosen, totals[ranked[0]!]!)}`];
  for (const i of ranked.slice(1))
    summary.push(`${feasible[i]!.id}: ${explain(cycle, plugins, feasible[i]!, totals[i]!)}`);
  for (let at = 0; at < reasons.length && summary.length <= SUMMARY_CLUSTERS; at++)
    if (!reasons[at]!.eligible) summary.push(rejection(reasons[at]!));
  const more = sorted.length - summary.length;
  if (more > 0) summary.push(`and ${more} more`);
  return { scheduler: scheduler.name, clusterId: chosen.id, reasons, summary: summary.join('; ') };
}

function rejection(verdict: ClusterVerdict): string {
  return `${verdict.clusterId}: ${verdict.eligible ? 'eligible' : verdict.reason}`;
}

/** The first SUMMARY_CLUSTERS rejections, then how many more there are. */
function listed(reasons: readonly ClusterVerdict[], total: number): string {
  const shown = reasons.slice(0, SUMMARY_CLUSTERS).map(rejection);
  const more = total - shown.length;
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
