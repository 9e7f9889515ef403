/**
 * What a worker did during a benchmark's window, to say where an operation's cost goes: its
 * Kubernetes calls (by verb and outcome), its template renders (by action) and its step retries,
 * from its own /metrics before and after; and its CPU by thread from /proc (the main thread, where
 * the activities run, Temporal's core, and the other threads: the workflows', the renderers' and
 * V8's own).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Counter values by their series (name and labels as /metrics prints them). */
export type Counters = Map<string, number>;

/** The series of the counters that say what the worker did. */
const COUNTED =
  /^(interoperator_kubernetes_requests_total|interoperator_template_render_duration_seconds_count|interoperator_step_retries_total)\{/;

/** The worker's counters, from its operations port. */
export async function workerCounters(metricsPort: number): Promise<Counters> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const counters: Counters = new Map();
  for (const line of text.split('\n')) {
    if (!COUNTED.test(line)) continue;
    const at = line.lastIndexOf(' ');
    counters.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return counters;
}

/** CPU ticks (1/100 s) of each of a process's threads, by thread id, with its name. */
export type ThreadTicks = Map<number, { readonly name: string; readonly ticks: number }>;

export function threadTicks(pid: number): ThreadTicks {
  const threads: ThreadTicks = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`).map(Number)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      threads.set(tid, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // the thread ended meanwhile
    }
  }
  return threads;
}

/** Lines saying, per operation, what the worker did between two readings. */
export function describeWorker(
  pid: number,
  before: { counters: Counters; threads: ThreadTicks },
  after: { counters: Counters; threads: ThreadTicks },
  operations: number,
  per: string,
): string[] {
  const lines: string[] = [];
  const each = (n: number) => (n / operations).toFixed(2);
  const delta = [...after.counters]
    .map(([series, value]) => [series, value - (before.counters.get(series) ?? 0)] as const)
    .filter(([, d]) => d > 0);
  const group = (prefix: string) =>
    delta
      .filter(([series]) => series.startsWith(prefix))
      .map(([series, d]) => `${series.slice(series.indexOf('{'))} ${each(d)}`)
      .sort()
      .join(', ');
  lines.push(
    `  worker per ${per}: Kubernetes calls ${group('interoperator_kubernetes_requests_total')}`,
    `  worker per ${per}: renders ${group('interoperator_template_render_duration_seconds_count')}`,
  );
  const retries = group('interoperator_step_retries_total');
  if (retries) lines.push(`  worker per ${per}: step retries ${retries}`);
  const threads = { main: 0, temporalCore: 0, other: 0 };
  for (const [tid, { name, ticks }] of after.threads) {
    const spent = (ticks - (before.threads.get(tid)?.ticks ?? 0)) * 10;
    if (tid === pid) threads.main += spent;
    else if (name.startsWith('tokio')) threads.temporalCore += spent;
    else threads.other += spent;
  }
  lines.push(
    `  worker CPU per ${per} by thread: main ${each(threads.main)} ms, Temporal core ${each(threads.temporalCore)} ms, other threads (workflows, renderers, V8) ${each(threads.other)} ms`,
  );
  return lines;
}
