/**
 * A watch of every object of one kind in a cluster, for whoever needs to hear that an object
 * changed but not what it holds: it starts from the collection's current resourceVersion (a list
 * of one item gives it), so it neither lists nor keeps the objects; it resumes where it was when
 * the apiserver ends it, and backs off after errors. When the apiserver no longer has the history
 * since its version (410 Gone: compacted, or out of its watch cache), the changes in between are
 * not lost: it lists the objects a page at a time, tells of each as changed (with its
 * resourceVersion, for the listener to compare with what it knows), and watches on from the list.
 * A listener that keeps what it hears ({@link Relisting}) is told when such a list begins and
 * ends, so that it can drop the objects the list did not tell of.
 */
import { Watch } from '@kubernetes/client-node';
import type { ClusterClient } from './clients.js';

/** Where an object is: its namespace (absent for a cluster-scoped object) and name. */
export interface ObjectKey {
  readonly namespace?: string;
  readonly name: string;
}

/** What became of an object: an event of the watch, or `LISTED` when a list after a 410 found it. */
export interface ObjectChange {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'LISTED';
  /** Its labels then (as they were last, when it is deleted). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Its `metadata.generation` then, when it has one. */
  readonly generation?: number;
  /** Its `status.observedGeneration` then, when its operator reports one. */
  readonly observedGeneration?: number;
}

/** The generations an object of a watch event or list says it is at. */
function generationsOf(object: {
  metadata?: { generation?: unknown };
  status?: { observedGeneration?: unknown };
}): Pick<ObjectChange, 'generation' | 'observedGeneration'> {
  const generation = object.metadata?.generation;
  const observed = object.status?.observedGeneration;
  return {
    ...(typeof generation === 'number' ? { generation } : {}),
    ...(typeof observed === 'number' ? { observedGeneration: observed } : {}),
  };
}

/**
 * Hears when the watch lists every object because the history since its version is gone: what it
 * told of before may be stale from `listing` on (called again when a list failed and starts over);
 * at `listed`, every object there is has been told of as `LISTED` since, and one not told of is gone.
 */
export interface Relisting {
  listing(): void;
  listed(): void;
}

export interface KindWatch {
  /** Resolves once the watch is open (or has failed once: the caller does not wait for retries). */
  readonly opened: Promise<void>;
  /** Whether the apiserver streams the watch now (accepted, not ended since): a change from now on is heard. */
  isOpen?(): boolean;
  stop(): void;
}

const FIRST_RETRY_MS = 500;
/** Objects per page when it lists them all after a 410. */
const RELIST_PAGE = 500;
const LONGEST_RETRY_MS = 30_000;

/** The collection's path, as the client's own list builds it (the kind's plural from discovery). */
async function collectionPath(
  cluster: ClusterClient,
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
): Promise<string> {
  const objects = cluster.objects as unknown as {
    specUriPath(
      spec: { apiVersion: string; kind: string; metadata: object },
      action: 'list',
    ): Promise<string>;
  };
  return objects.specUriPath({ apiVersion, kind, metadata: namespace ? { namespace } : {} }, 'list');
}

/**
 * Watches the objects of `apiVersion`/`kind` in `namespace` of `cluster` (in all namespaces when
 * undefined); `onChange` hears of every object added, modified or deleted (with its
 * resourceVersion then, and what became of it), `onError` of every failure before a retry. With
 * `since` (a resourceVersion), it starts there and hears the changes since then too; when the
 * apiserver has compacted past it, from a list of the objects. `relisting` hears when such a list
 * begins and ends.
 */
export function watchKind(
  cluster: ClusterClient,
  apiVersion: string,
  kind: string,
  namespace: string | undefined,
  onChange: (object: ObjectKey, resourceVersion?: string, change?: ObjectChange) => void,
  onError: (err: unknown) => void = () => undefined,
  since?: string,
  relisting?: Relisting,
): KindWatch {
  let stopped = false;
  let abort: AbortController | undefined;
  let timer: NodeJS.Timeout | undefined;
  let resourceVersion: string | undefined = since;
  /** The history since `resourceVersion` is gone: list every object before watching on. */
  let relist = false;
  const historyGone = () => {
    resourceVersion = undefined;
    relist = true;
    relisting?.listing();
  };
  let retryMs = FIRST_RETRY_MS;
  /** The apiserver accepted the current watch request, which has not ended since. */
  let streaming = false;
  let opened!: () => void;
  const openedOnce = new Promise<void>((resolve) => (opened = resolve));

  const retry = (err: unknown) => {
    if (stopped) return;
    if ((err as { statusCode?: number } | null)?.statusCode === 410) historyGone();
    onError(err);
    opened();
    timer = setTimeout(() => void start(), retryMs);
    retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS);
  };

  /** Lists the objects a page at a time, telling of each; resolves with the list's resourceVersion. */
  async function tellOfEveryObject(): Promise<string | undefined> {
    relisting?.listing();
    let listed: string | undefined;
    let next: string | undefined;
    do {
      const page = await cluster.objects.list(
        apiVersion,
        kind,
        namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        RELIST_PAGE,
        next,
      );
      // The first page's version is the snapshot's: the watch goes on from there.
      listed ??= page.metadata?.resourceVersion;
      for (const item of page.items) {
        const meta = item.metadata;
        if (stopped || !meta?.name) continue;
        onChange(
          { ...(meta.namespace ? { namespace: meta.namespace } : {}), name: meta.name },
          meta.resourceVersion,
          {
            type: 'LISTED',
            ...(meta.labels ? { labels: meta.labels } : {}),
            ...generationsOf(item as Parameters<typeof generationsOf>[0]),
          },
        );
      }
      next = page.metadata?._continue;
    } while (next && !stopped);
    return listed;
  }

  async function start(): Promise<void> {
    try {
      const path = await collectionPath(cluster, apiVersion, kind, namespace);
      if (relist) {
        resourceVersion = await tellOfEveryObject();
        if (stopped) return;
        relist = false;
        relisting?.listed();
      } else if (resourceVersion === undefined) {
        const list = await cluster.objects.list(
          apiVersion,
          kind,
          namespace,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          1,
        );
        resourceVersion = list.metadata?.resourceVersion;
      }
      if (stopped) return;
      const since = Date.now();
      let ended = false;
      abort = await new Watch(cluster.kubeConfig).watch(
        path,
        { resourceVersion, allowWatchBookmarks: true },
        (
          type: string,
          object: {
            metadata?: {
              namespace?: string;
              name?: string;
              resourceVersion?: string;
              labels?: Record<string, string>;
              generation?: unknown;
            };
            status?: { observedGeneration?: unknown };
            code?: number;
          },
        ) => {
          if (type === 'ERROR') {
            // 410 Gone: the history since our version is gone; list, then watch on.
            if (object.code === 410) historyGone();
            return;
          }
          // The apiserver answers: the next failure starts the backoff again from its first step.
          retryMs = FIRST_RETRY_MS;
          const meta = object.metadata;
          if (meta?.resourceVersion) resourceVersion = meta.resourceVersion;
          if (type === 'BOOKMARK' || !meta?.name) return;
          onChange(
            { ...(meta.namespace ? { namespace: meta.namespace } : {}), name: meta.name },
            meta.resourceVersion,
            {
              type: type === 'ADDED' || type === 'DELETED' ? type : 'MODIFIED',
              ...(meta.labels ? { labels: meta.labels } : {}),
              ...generationsOf(object),
            },
          );
        },
        (err: unknown) => {
          ended = true;
          streaming = false;
          if (stopped) return;
          if (err) return retry(err);
          // The apiserver ends every watch after a while: resume where it was, at once unless it
          // ended as soon as it began.
          if (Date.now() - since < 1000) return retry(new Error(`the watch of ${kind} ended at once`));
          retryMs = FIRST_RETRY_MS;
          void start();
        },
      );
      // The client reports a refused or failed request through the callback above, not by
      // rejecting: the backoff is reset by what the apiserver sends, not here.
      if (!ended && !stopped) streaming = true;
      opened();
    } catch (err) {
      retry(err);
    }
  }

  void start();
  return {
    opened: openedOnce,
    isOpen: () => streaming,
    stop() {
      stopped = true;
      streaming = false;
      clearTimeout(timer);
      abort?.abort();
    },
  };
}
