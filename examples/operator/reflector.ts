/**
 * A reflector: keeps an in-memory copy of one kind of object of one cluster by list + watch, the
 * way client-go's reflector does, and reports every change by key (`namespace/name`).
 *
 * Client-node's own informer stops on any error other than 410 and can leak a watch when it is
 * stopped while connecting, so this one is written out: it relists on 410 Gone (the watch expired),
 * re-watches from the last resourceVersion when the server closes a watch, retries every other
 * failure (apiserver restarts, refused connections, 5xx) with exponential backoff, and restarts a
 * watch that has been open longer than its server-side timeout (a dead TCP connection is silent).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Watch, type KubeConfig } from '@kubernetes/client-node';

/** The part of an object a reflector reads. */
export interface Reflectable {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** What a list call returns. */
export interface ReflectorList<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

export interface ReflectorOptions<T extends Reflectable> {
  /** Names the reflector in log lines, e.g. `postgresqls in cluster 1`. */
  readonly name: string;
  readonly kubeConfig: KubeConfig;
  /** Watch path of the collection, e.g. `/apis/acid.zalan.do/v1/postgresqls` for all namespaces. */
  readonly path: string;
  /** Applied to the watch; the `list` function must apply the same selector itself. */
  readonly labelSelector?: string;
  /** Lists the collection (with the same scope and selector as the watch). */
  readonly list: () => Promise<ReflectorList<T>>;
  /** Called with the key, the new object (undefined when it is gone) and the one it replaces. */
  readonly onChange: (key: string, current: T | undefined, previous: T | undefined) => void;
  /** Stops the reflector. */
  readonly signal: AbortSignal;
  readonly log?: (message: string) => void;
  /** Server-side timeout of one watch request; a jitter of up to 20% is added. @default 300 */
  readonly watchTimeoutSeconds?: number;
  /** First delay after a failure; it doubles up to `maxBackoffMs`. @default 250 */
  readonly minBackoffMs?: number;
  /** @default 10000 */
  readonly maxBackoffMs?: number;
}

/** The key of an object in a reflector's store. */
export const keyOf = (obj: Reflectable): string =>
  `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;

/** Raised inside the loop when the watch's resourceVersion has expired: relist. */
class Expired extends Error {
  override readonly name = 'Expired';
}

const statusOf = (err: unknown): number | undefined => {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
  if (typeof statusCode === 'number') return statusCode;
  return typeof code === 'number' ? code : undefined;
};

export class Reflector<T extends Reflectable> {
  /** The objects as last seen, by key. */
  readonly store = new Map<string, T>();
  private readonly watch: Watch;
  private readonly log: (message: string) => void;
  private synced = false;
  private readonly syncedWaiters: (() => void)[] = [];

  constructor(private readonly options: ReflectorOptions<T>) {
    this.watch = new Watch(options.kubeConfig);
    this.log = options.log ?? (() => undefined);
  }

  /** Resolves once the first list has been stored (or when the reflector stops). */
  hasSynced(): Promise<void> {
    if (this.synced || this.options.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.syncedWaiters.push(resolve));
  }

  /** Lists and watches until the signal aborts; never rejects. */
  async run(): Promise<void> {
    const { signal } = this.options;
    const minBackoff = this.options.minBackoffMs ?? 250;
    const maxBackoff = this.options.maxBackoffMs ?? 10_000;
    let failures = 0;
    signal.addEventListener('abort', () => this.markSynced(), { once: true });
    while (!signal.aborted) {
      try {
        let resourceVersion = await this.relist();
        failures = 0;
        for (;;) {
          resourceVersion = await this.watchOnce(resourceVersion);
          if (signal.aborted) return;
          failures = 0;
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof Expired) {
          this.log(`${this.options.name}: watch expired, relisting`);
          continue;
        }
        const delay = Math.min(maxBackoff, minBackoff * 2 ** failures);
        failures += 1;
        this.log(`${this.options.name}: ${describe(err)}; retrying in ${delay} ms`);
        try {
          await sleep(delay, undefined, { signal });
        } catch {
          return;
        }
      }
    }
  }

  private markSynced(): void {
    this.synced = true;
    for (const resolve of this.syncedWaiters.splice(0)) resolve();
  }

  /** Replaces the store with a fresh list, reporting what appeared, changed or went; returns its version. */
  private async relist(): Promise<string> {
    const list = await this.options.list();
    const seen = new Set<string>();
    for (const item of list.items) {
      const key = keyOf(item);
      seen.add(key);
      const old = this.store.get(key);
      this.store.set(key, item);
      if (!old || old.metadata?.resourceVersion !== item.metadata?.resourceVersion) {
        this.options.onChange(key, item, old);
      }
    }
    for (const [key, old] of [...this.store]) {
      if (!seen.has(key)) {
        this.store.delete(key);
        this.options.onChange(key, undefined, old);
      }
    }
    this.markSynced();
    return list.metadata?.resourceVersion ?? '';
  }

  /**
   * One watch request from `resourceVersion`. Resolves with the last version seen when the server
   * closes it (or the watchdog ends it); rejects with Expired on 410, or with the failure.
   */
  private watchOnce(resourceVersion: string): Promise<string> {
    const { signal } = this.options;
    const timeoutSeconds = Math.round((this.options.watchTimeoutSeconds ?? 300) * (1 + Math.random() * 0.2));
    let last = resourceVersion;
    let expired = false;
    return new Promise<string>((resolve, reject) => {
      let controller: AbortController | undefined;
      let watchdogFired = false;
      const abort = () => controller?.abort();
      const watchdog = setTimeout(
        () => {
          watchdogFired = true;
          abort();
        },
        (timeoutSeconds + 30) * 1000,
      );
      signal.addEventListener('abort', abort, { once: true });
      const finish = (err: unknown) => {
        clearTimeout(watchdog);
        signal.removeEventListener('abort', abort);
        if (signal.aborted || watchdogFired) resolve(last);
        else if (expired || statusOf(err) === 410) reject(new Expired('resourceVersion expired'));
        else if (err) reject(err instanceof Error ? err : new Error(String(err)));
        else resolve(last);
      };
      const onEvent = (type: string, obj: unknown) => {
        if (type === 'ERROR') {
          // A Status object; 410 means our resourceVersion is too old. The server closes the watch next.
          if (statusOf(obj) === 410) expired = true;
          else this.log(`${this.options.name}: watch error event ${JSON.stringify(obj)}`);
          return;
        }
        const item = obj as T;
        const version = item.metadata?.resourceVersion;
        if (version) last = version;
        if (type === 'BOOKMARK') return;
        const key = keyOf(item);
        const previous = this.store.get(key);
        if (type === 'DELETED') {
          this.store.delete(key);
          this.options.onChange(key, undefined, previous ?? item);
        } else if (type === 'ADDED' || type === 'MODIFIED') {
          this.store.set(key, item);
          this.options.onChange(key, item, previous);
        }
      };
      this.watch
        .watch(
          this.options.path,
          {
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds,
            ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
          },
          onEvent,
          finish,
        )
        .then(
          (c) => {
            controller = c;
            // Stopped while the request was connecting: end it now.
            if (signal.aborted) c.abort();
          },
          (err: unknown) => finish(err ?? new Error('watch failed')),
        );
    });
  }
}

function describe(err: unknown): string {
  const status = statusOf(err);
  const message = err instanceof Error ? err.message : String(err);
  return status ? `HTTP ${status}: ${message}` : message;
}
