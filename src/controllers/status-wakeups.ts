/**
 * Waking the status checks of operations waiting for their operator: a status check that says "in
 * progress" leaves word of the sources it read (its plan's `sources` template, rendered for the
 * instance or binding), and the first change the worker sees to one of them signals the
 * operation's workflow, which checks again at once instead of at its next poll. The kinds watched
 * are learnt from those rendered sources: the first check that reads a kind on a cluster starts a
 * watch of that kind there (kind-watch.ts), kept while the worker runs. Only the operators' own
 * kinds are watched (sources of an API group, not of the core group): an operator reports on its
 * custom resource once it has made the rest, and a watch of the core kinds would stream every
 * Secret of the cluster into the worker, which the chart does not allow it to list.
 *
 * Best effort by design: a change missed (a watch that is reconnecting, a worker that restarted
 * and forgot who waits) only leaves the operation to its poll. Word is kept in this worker's
 * memory, one entry per waiting operation and source, dropped when it wakes the operation or
 * after {@link WAIT_TTL_MS}.
 *
 * A controller, not an activity: it runs beside the activities in the worker, which gives them its
 * {@link StatusWakeupsContract} side (src/activities/deps.ts).
 */
import type { ClusterClient } from '../kube/clients.js';
import { watchKind, type KindWatch, type ObjectKey } from '../kube/kind-watch.js';
import type { AppliedResource } from '../resources/types.js';
import type { StatusWakeups as StatusWakeupsContract, WaitingRun } from '../activities/deps.js';

/** How long word of a waiting operation is kept: longer than the longest poll, so a live wait renews it. */
export const WAIT_TTL_MS = 15 * 60_000;

/** How long a check waits for a new watch to open before it reads its sources (they may change meanwhile). */
const OPEN_WAIT_MS = 2000;

/** The status wake-ups a worker runs: what activities are given, and its own upkeep. */
export interface StatusWakeups extends StatusWakeupsContract {
  /** How many (operation, source) pairs are waited on, and how many kinds are watched. */
  size(): { waiting: number; watches: number };
  stop(): void;
}

export interface StatusWakeupOptions {
  /** Signals the operation's run (a run that ended is no error to report). */
  readonly wake: (run: WaitingRun) => Promise<void>;
  readonly onError?: (err: unknown, what: string) => void;
  /** The one namespace of all instances, where the watches stay; all namespaces when unset. */
  readonly instanceNamespace?: string;
  /** The watch of one kind; kind-watch.ts's by default. */
  readonly watch?: typeof watchKind;
  /** @default WAIT_TTL_MS */
  readonly ttlMs?: number;
}

/** An object of an API group (`group/version`), not of the core group (`v1`). */
const isOperatorKind = (source: AppliedResource) => source.apiVersion.includes('/');

const objectKey = (clusterId: string, apiVersion: string, kind: string, object: ObjectKey) =>
  `${clusterId}|${apiVersion}|${kind}|${object.namespace ?? ''}|${object.name}`;

const runKey = (run: WaitingRun) => `${run.workflowId} ${run.runId}`;

export function statusWakeups(options: StatusWakeupOptions): StatusWakeups {
  const { wake, onError = () => undefined, watch = watchKind, ttlMs = WAIT_TTL_MS } = options;
  const namespace = options.instanceNamespace;
  /** Object key -> the runs waiting on it, by {@link runKey} -> the run and when the word expires. */
  const waiting = new Map<string, Map<string, { run: WaitingRun; expires: number }>>();
  const watches = new Map<string, KindWatch>();

  const changed = (key: string) => {
    const waiters = waiting.get(key);
    if (!waiters) return;
    waiting.delete(key);
    const now = Date.now();
    for (const { run, expires } of waiters.values()) {
      if (expires < now) continue;
      wake(run).catch((err: unknown) => onError(err, `waking ${run.workflowId}`));
    }
  };

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, waiters] of waiting) {
      for (const [key, { expires }] of waiters) if (expires < now) waiters.delete(key);
      if (waiters.size === 0) waiting.delete(key);
    }
  }, 60_000);
  sweep.unref();

  function watched(cluster: ClusterClient, apiVersion: string, kind: string): KindWatch {
    const id = `${cluster.id}|${apiVersion}|${kind}`;
    let kindWatch = watches.get(id);
    if (!kindWatch) {
      kindWatch = watch(
        cluster,
        apiVersion,
        kind,
        namespace,
        (object) => changed(objectKey(cluster.id, apiVersion, kind, object)),
        (err) => onError(err, `watching ${kind} (${apiVersion}) in cluster ${cluster.id}`),
      );
      watches.set(id, kindWatch);
    }
    return kindWatch;
  }

  return {
    async expect(cluster, all, run) {
      const sources = all.filter(isOperatorKind);
      const keys = sources.map((source) =>
        objectKey(cluster.id, source.apiVersion, source.kind, {
          ...(source.namespace ? { namespace: source.namespace } : {}),
          name: source.name,
        }),
      );
      const expires = Date.now() + ttlMs;
      for (const key of keys) {
        let waiters = waiting.get(key);
        if (!waiters) waiting.set(key, (waiters = new Map()));
        waiters.set(runKey(run), { run, expires });
      }
      const opening = sources.map((s) => watched(cluster, s.apiVersion, s.kind).opened);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(opening),
        new Promise((resolve) => (timer = setTimeout(resolve, OPEN_WAIT_MS))),
      ]);
      clearTimeout(timer);
      return {
        release() {
          for (const key of keys) {
            const waiters = waiting.get(key);
            if (waiters?.get(runKey(run))?.expires !== expires) continue;
            waiters.delete(runKey(run));
            if (waiters.size === 0) waiting.delete(key);
          }
        },
      };
    },
    size() {
      let count = 0;
      for (const waiters of waiting.values()) count += waiters.size;
      return { waiting: count, watches: watches.size };
    },
    stop() {
      clearInterval(sweep);
      for (const kindWatch of watches.values()) kindWatch.stop();
      watches.clear();
      waiting.clear();
    },
  };
}
