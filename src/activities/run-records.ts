/**
 * The records an operation's run last read or wrote, kept by the worker from one step of the run
 * to the next, so that a step does not read again what the step before it left. While an
 * operation runs, its records change only by its own steps: its claim keeps the other operations
 * of the instance off them, and what others write meanwhile (the claims' annotations, the state
 * labels) decides no step. A record is kept a short while ({@link KEPT_MS}) from when it was read
 * or written. Every write of a record through the worker's client of the master drops what any run
 * kept of it (the step that wrote keeps the record as written, when it has it); every record of a
 * run is dropped when a step of the run fails (the step run again reads afresh: a conditional
 * write that lost to another writer, a record that changed under it) and when the run removes its
 * records; and when a step starts that does not follow the last one this worker ran of the run (a
 * step ran elsewhere meanwhile: the run moved to another worker and back). Reads that decide
 * whether a record is gone never use them.
 */
import { Context } from '@temporalio/activity';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
} from '../resources/types.js';
import type { MasterRecords } from './master-records.js';

/** How long a kept record stands for the record, from when it was read or written. */
export const KEPT_MS = 20_000;
/** Runs kept at most; the least recently used go first. */
const MAX_RUNS = 2_000;

/** A kind of record, by the plural of its resource. */
type RecordKind = Pick<ResourceKind, 'plural'>;

export interface RunRecords {
  /** The record of `kind` `namespace/name` as the run last read or wrote it, while it is kept. */
  kept<T extends KubeObject>(run: string, kind: RecordKind, namespace: string, name: string): T | undefined;
  /** Keeps `record` (of `kind`) as the run read or wrote it. */
  keep(run: string, kind: RecordKind, record: KubeObject): void;
  /** Drops what every run kept of the record written (by its resource's plural, namespace and name). */
  written(write: { readonly plural: string; readonly namespace?: string; readonly name: string }): void;
  /** Drops every record the run kept. */
  forget(run: string): void;
  /**
   * A step of the run starts here, the run's `seq`th (its activity id; undefined when it has none
   * that counts): unless it is the one after the last this worker started, the run's records go.
   */
  stepStarts(run: string, seq: number | undefined): void;
}

const keyOf = (plural: string, namespace: string | undefined, name: string) =>
  `${plural}\u0000${namespace ?? ''}\u0000${name}`;

export function runRecords(
  options: { readonly keptMs?: number; readonly maxRuns?: number; readonly now?: () => number } = {},
): RunRecords {
  const keptMs = options.keptMs ?? KEPT_MS;
  const maxRuns = options.maxRuns ?? MAX_RUNS;
  const now = options.now ?? Date.now;
  // In order of use: a Map iterates in insertion order, and a run used is inserted again.
  const runs = new Map<string, Map<string, { readonly record: KubeObject; readonly at: number }>>();
  /** When each run last kept or was asked for a record, in the same order as `runs`. */
  const used = new Map<string, number>();
  /** Marks `run` used now, and lets go the runs unused for longer than a record is kept, and the most. */
  const use = (run: string, records: Map<string, { readonly record: KubeObject; readonly at: number }>) => {
    runs.delete(run);
    runs.set(run, records);
    used.delete(run);
    used.set(run, now());
    for (const [oldest, at] of used) {
      if (runs.size <= maxRuns && now() - at <= keptMs) break;
      runs.delete(oldest);
      used.delete(oldest);
      lastSteps.delete(oldest);
    }
  };
  /** The last step each run started here; kept as long as the run's records (dropped with them). */
  const lastSteps = new Map<string, number>();
  return {
    kept<T extends KubeObject>(run: string, kind: RecordKind, namespace: string, name: string) {
      const key = keyOf(kind.plural, namespace, name);
      const records = runs.get(run);
      const entry = records?.get(key);
      if (!records || !entry) return undefined;
      if (now() - entry.at > keptMs) {
        records.delete(key);
        return undefined;
      }
      use(run, records);
      return entry.record as T;
    },
    keep(run, kind, record) {
      const records = runs.get(run) ?? new Map();
      const { metadata } = record;
      records.set(keyOf(kind.plural, metadata.namespace, metadata.name), { record, at: now() });
      use(run, records);
    },
    written({ plural, namespace, name }) {
      const key = keyOf(plural, namespace, name);
      for (const records of runs.values()) records.delete(key);
    },
    forget(run) {
      runs.delete(run);
      used.delete(run);
    },
    stepStarts(run, seq) {
      const last = lastSteps.get(run);
      if (seq === undefined || last === undefined || seq !== last + 1) {
        runs.delete(run);
        used.delete(run);
      }
      lastSteps.delete(run);
      if (seq !== undefined) lastSteps.set(run, seq);
      if (lastSteps.size > maxRuns) lastSteps.delete(lastSteps.keys().next().value!);
    },
  };
}

/** The run of the operation whose step is running; undefined outside a step. */
export function currentRun(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.runId;
  } catch {
    return undefined;
  }
}

/** The step's place among its run's activities (its activity id, the workflow's sequence number). */
function stepSeq(): number | undefined {
  try {
    const id = Number(Context.current().info.activityId);
    return Number.isSafeInteger(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `activities`, each telling `kept` when it starts ({@link RunRecords.stepStarts}) and dropping its
 * run's kept records when it fails.
 */
export function keepingAcrossSteps<A extends Record<string, (...args: never[]) => Promise<unknown>>>(
  activities: A,
  kept: RunRecords,
): A {
  const wrapped: Record<string, (...args: never[]) => Promise<unknown>> = {};
  for (const [name, activity] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      const run = currentRun();
      if (run) kept.stepStarts(run, stepSeq());
      try {
        return await activity(...args);
      } catch (err) {
        if (run) kept.forget(run);
        throw err;
      }
    };
  }
  return wrapped as A;
}

/**
 * The record `kind` `namespace/name` as the step's run kept it, else as `read` reads it (then
 * kept). Without `kept` or outside a step, as `read` reads it.
 */
export async function keptOrRead<T extends KubeObject>(
  kept: RunRecords | undefined,
  kind: RecordKind,
  namespace: string,
  name: string,
  read: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const run = kept && currentRun();
  const known = run ? kept.kept<T>(run, kind, namespace, name) : undefined;
  if (known) return known;
  const record = await read();
  if (run && record) kept.keep(run, kind, record);
  return record;
}

/** Keeps `record` (of `kind`) as the step's run read or wrote it, when there is a step and a place to keep it. */
export function keepForRun(kept: RunRecords | undefined, kind: RecordKind, record: KubeObject | void): void {
  const run = kept && currentRun();
  if (run && record) kept.keep(run, kind, record);
}

/** `records`, whose writes keep the records as written for the step's run, and whose removals drop the run's. */
export function keepingWrites(records: MasterRecords, kept: RunRecords | undefined): MasterRecords {
  if (!kept) return records;
  return {
    ...records,
    async write(write) {
      const written = await records.write(write);
      const kind =
        write.kind === 'status' && write.record === 'binding' ? SFSERVICEBINDING : SFSERVICEINSTANCE;
      keepForRun(kept, kind, written);
      return written;
    },
    async remove(kind, onMaster) {
      const run = currentRun();
      if (run) kept.forget(run);
      await records.remove(kind, onMaster);
    },
  };
}
