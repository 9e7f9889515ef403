/**
 * Scheduler benchmark: the cost of one placement decision by each scheduler over a landscape of
 * many clusters (pure functions, in process), against a baseline measured in the same run: a
 * bare loop over the same snapshots that picks the eligible cluster with the fewest instances.
 *
 *   npm run build && node dist/bench/scheduler.js [clusters] [rounds]
 *
 * Prints microseconds per decision (the median of the rounds) and the ratio to the baseline.
 */
import { performance } from 'node:perf_hooks';
import {
  schedule,
  SCHEDULER_NAMES,
  type ClusterSnapshot,
  type PlacementRequest,
  type SchedulerName,
} from '../src/scheduling/index.js';

const clusterCount = Number(process.argv[2] ?? 1000);
const rounds = Number(process.argv[3] ?? 7);
/** Each round times decisions for at least this long. */
const ROUND_MS = 200;

/** A small deterministic generator (mulberry32), so every run sees the same landscape. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A landscape: most clusters running, some offline, cordoned or not probed yet; five plans' labels
 * and three zones; capacities, requests and reservations in the forms Kubernetes writes them.
 */
function landscape(count: number): ClusterSnapshot[] {
  const next = random(42);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const cpu = 16 + Math.floor(next() * 112);
    const memoryGi = cpu * 4;
    const roll = next();
    const reserved: Record<string, string> =
      next() < 0.3 ? { cpu: `${1 + Math.floor(next() * 4)}`, memory: `${1 + Math.floor(next() * 8)}Gi` } : {};
    return {
      id: String(i + 1),
      labels: { plan: `p${i % 5}`, zone: pick(['eu', 'us', 'ap']), tier: pick(['gold', 'silver']) },
      phase: roll < 0.05 ? 'offline' : roll < 0.07 ? 'pending' : 'running',
      schedulingDisabled: next() < 0.03,
      capacity: { cpu: String(cpu), memory: `${memoryGi}Gi`, pods: '110' },
      allocatable: { cpu: `${cpu * 1000 - 500}m`, memory: `${memoryGi * 1024 - 512}Mi`, pods: '110' },
      requests: {
        cpu: `${Math.floor(next() * cpu * 900)}m`,
        memory: `${Math.floor(next() * memoryGi * 900)}Mi`,
      },
      reserved,
      instances: Math.floor(next() * 200),
    } satisfies ClusterSnapshot;
  });
}

/** In the order a Kubernetes list returns them: by name, as text ("1", "10", "100", "2", ...). */
const clusters = landscape(clusterCount).sort((a, b) => (a.id < b.id ? -1 : 1));
const request: PlacementRequest = {
  instanceId: 'bench',
  planId: 'p1',
  clusterSelector: 'plan=p1,zone in (eu,us),tier!=bronze',
  requests: { cpu: '2', memory: '4Gi' },
};

/** The baseline: the eligible cluster with the fewest instances, lowest index on a tie. */
function bareLeastUtilized(snapshots: readonly ClusterSnapshot[]): string | undefined {
  let best: ClusterSnapshot | undefined;
  for (const c of snapshots) {
    if (c.phase !== 'running' || c.schedulingDisabled) continue;
    if (!best || c.instances < best.instances) best = c;
  }
  return best?.id;
}

let sink = 0;

/** Microseconds per call of `decide`, the median over the rounds. */
function measure(decide: () => string | undefined): number {
  for (let i = 0; i < 50; i++) sink += decide()?.length ?? 0;
  const perRound: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let calls = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < ROUND_MS) {
      for (let i = 0; i < 10; i++) sink += decide()?.length ?? 0;
      calls += 10;
      elapsed = performance.now() - start;
    }
    perRound.push((elapsed * 1000) / calls);
  }
  perRound.sort((a, b) => a - b);
  return perRound[Math.floor(perRound.length / 2)]!;
}

function decider(name: SchedulerName): () => string | undefined {
  let lastClusterId: string | undefined;
  return () => {
    const decision = schedule({ scheduler: name, clusters, request, state: { lastClusterId } });
    lastClusterId = decision.clusterId;
    return decision.clusterId;
  };
}

const baseline = measure(() => bareLeastUtilized(clusters));
console.log(
  `${clusterCount} clusters, ${rounds} rounds of at least ${ROUND_MS} ms each; median per decision`,
);
console.log(`${'baseline (bare loop, fewest instances)'.padEnd(40)} ${baseline.toFixed(2).padStart(9)} µs`);
for (const name of SCHEDULER_NAMES) {
  const cost = measure(decider(name));
  console.log(
    `${name.padEnd(40)} ${cost.toFixed(2).padStart(9)} µs  ${(cost / baseline).toFixed(1).padStart(7)}× baseline`,
  );
}
for (const name of SCHEDULER_NAMES) {
  const summary = schedule({ scheduler: name, clusters, request }).summary;
  console.log(`${name}: ${summary.length > 160 ? `${summary.slice(0, 157)}...` : summary}`);
}
if (sink < 0) console.log(sink);
