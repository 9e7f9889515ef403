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
 * Only news wakes (resources/source-changes.ts): not a change the operation already saw when it
 * read its sources (its own apply's, say), nor, while the operator has not observed the generation
 * the operation saw, a change that does not report it observed (another bind's apply, the
 * operator's "updating"). A change that comes between the word and the read is held until the
 * operation says what it read, then judged. A step may wait for that change itself, a short while
 * (`woken`): the change then ends the step's wait, and the run needs no signal; past that while,
 * the change signals the run as it would have.
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
import { watchKind, type KindWatch, type ObjectChange, type ObjectKey } from '../kube/kind-watch.js';
import { changeIsNews, type SeenSource, type SourceChange } from '../resources/source-changes.js';
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

/**
 * One run's word on one source: until when, what it saw (once told), and the latest change held
 * until then (a source's resourceVersion and observed generation only grow: the latest change is
 * news whenever an earlier one was).
 */
interface Word {
  readonly run: WaitingRun;
  readonly expires: number;
  told: boolean;
  seen?: SeenSource | undefined;
  held?: SourceChange;
  /** Set while the run's step waits for the change itself ({@link WaitingWord.woken}): it is woken instead. */
  awaited?: () => void;
}

export function statusWakeups(options: StatusWakeupOptions): StatusWakeups {
  const { wake, onError = () => undefined, watch = watchKind, ttlMs = WAIT_TTL_MS } = options;
  const namespace = options.instanceNamespace;
  /** Object key -> the runs waiting on it, by {@link runKey} -> their word. */
  const waiting = new Map<string, Map<string, Word>>();
  const watches = new Map<string, KindWatch>();

  const signal = (run: WaitingRun) =>
    wake(run).catch((err: unknown) => onError(err, `waking ${run.workflowId}`));
  /** Wakes the step waiting on `word`, else signals its run. */
  const wakeRun = (word: Word) => (word.awaited ? word.awaited() : void signal(word.run));

  const drop = (key: string, run: string) => {
    const waiters = waiting.get(key);
    waiters?.delete(run);
    if (waiters?.size === 0) waiting.delete(key);
  };

  const changed = (key: string, resourceVersion: string | undefined, what: ObjectChange | undefined) => {
    const waiters = waiting.get(key);
    if (!waiters) return;
    const change: SourceChange = {
      ...(resourceVersion ? { resourceVersion } : {}),
      ...(what?.type === 'DELETED' ? { deleted: true } : {}),
      ...(what?.observedGeneration !== undefined ? { observedGeneration: what.observedGeneration } : {}),
    };
    const now = Date.now();
    for (const [run, word] of [...waiters]) {
      if (word.expires < now) {
        drop(key, run);
        continue;
      }
      if (!word.told) word.held = change;
      else if (changeIsNews(word.seen, change)) {
        drop(key, run);
        wakeRun(word);
      }
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
        (object, resourceVersion, change) =>
          changed(objectKey(cluster.id, apiVersion, kind, object), resourceVersion, change),
        (err) => onError(err, `watching ${kind} (${apiVersion}) in cluster ${cluster.id}`),
      );
      watches.set(id, kindWatch);
    }
    return kindWatch;
  }

  const keyOf = (cluster: ClusterClient, source: AppliedResource) =>
    objectKey(cluster.id, source.apiVersion, source.kind, {
      ...(source.namespace ? { namespace: source.namespace } : {}),
      name: source.name,
    });

  return {
    async expect(cluster, all, run) {
      const sources = all.filter(isOperatorKind);
      const keys = sources.map((source) => keyOf(cluster, source));
      const expires = Date.now() + ttlMs;
      const words = new Map<string, Word>();
      for (const key of keys) {
        let waiters = waiting.get(key);
        if (!waiters) waiting.set(key, (waiters = new Map()));
        const word: Word = { run, expires, told: false };
        waiters.set(runKey(run), word);
        words.set(key, word);
      }
      const kindWatches = sources.map((s) => watched(cluster, s.apiVersion, s.kind));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(kindWatches.map((w) => w.opened)),
        new Promise((resolve) => (timer = setTimeout(resolve, OPEN_WAIT_MS))),
      ]);
      clearTimeout(timer);
      const mine = (key: string, word: Word) => waiting.get(key)?.get(runKey(run)) === word;
      return {
        get heard() {
          return kindWatches.every((w) => w.isOpen?.() === true);
        },
        seen(source, seen) {
          const key = keyOf(cluster, source);
          const word = words.get(key);
          if (!word || word.told || !mine(key, word)) return false;
          word.told = true;
          word.seen = seen;
          const held = word.held;
          delete word.held;
          if (held && changeIsNews(seen, held)) {
            drop(key, runKey(run));
            wakeRun(word);
            return false;
          }
          return true;
        },
        async woken(withinMs) {
          const kept = [...words].filter(([key, word]) => mine(key, word));
          if (kept.length === 0) return false;
          let timer: NodeJS.Timeout | undefined;
          const came = await new Promise<boolean>((resolve) => {
            for (const [, word] of kept) word.awaited = () => resolve(true);
            timer = setTimeout(() => resolve(false), withinMs);
          });
          clearTimeout(timer);
          for (const [key, word] of kept) {
            delete word.awaited;
            if (came && mine(key, word)) drop(key, runKey(run));
          }
          return came;
        },
        release() {
          for (const [key, word] of words) if (mine(key, word)) drop(key, runKey(run));
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
