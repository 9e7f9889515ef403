/**
 * The count of the instances placed on each cluster, kept from a watch of the master's instance
 * records, so that the cluster health round reads a number instead of listing every record
 * placed on every cluster each round (a list costs the apiserver about as much with labels as
 * without: it reads and decodes every record of the range).
 *
 * It lists the records once, a page of their metadata at a time, then watches them from that
 * list's version (kind-watch.ts): each event moves a record's count from its old labels to its
 * new ones (instance-counts.ts). When the apiserver no longer has the history since the watch's
 * version (410 Gone), the watch lists every record again; meanwhile the count is not given, and
 * the records that list does not find are dropped from it. The count is of this installation's
 * records (the owner label), in the one instance namespace when there is one, else in all: the
 * records the round's list would count. It keeps two label values per record, not the record.
 *
 * A controller, not an activity: it runs beside the activities in the worker, which gives them its
 * {@link PlacedInstanceCounts} side (src/activities/deps.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PlacedInstanceCounts } from '../activities/deps.js';
import type { ClusterClient } from '../kube/clients.js';
import { COUNT_PAGE_SIZE, listRecordPage } from '../kube/custom-objects.js';
import { watchKind, type KindWatch, type ObjectKey } from '../kube/kind-watch.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../resources/types.js';
import { instanceCounts } from './instance-counts.js';

const FIRST_RETRY_MS = 1000;
const LONGEST_RETRY_MS = 30_000;

/** The count a worker keeps: what activities are given, and its own upkeep. */
export interface PlacedInstances extends PlacedInstanceCounts {
  /** Resolves once the first list has ended (or the count was stopped before). */
  readonly ready: Promise<void>;
  /** How many records are kept (those placed on or leaving a cluster). */
  size(): number;
  stop(): void;
}

export interface PlacedInstanceOptions {
  readonly master: ClusterClient;
  /** The one namespace of all instances; all namespaces when unset. */
  readonly instanceNamespace?: string;
  readonly onError?: (err: unknown, what: string) => void;
  /** Records read in one request of the first list. @default COUNT_PAGE_SIZE */
  readonly pageSize?: number;
  /** The watch of one kind; kind-watch.ts's by default. */
  readonly watch?: typeof watchKind;
}

const keyOf = (object: ObjectKey) => `${object.namespace ?? ''}/${object.name}`;

export function placedInstances(options: PlacedInstanceOptions): PlacedInstances {
  const { master, onError = () => undefined, pageSize = COUNT_PAGE_SIZE, watch = watchKind } = options;
  const namespace = options.instanceNamespace;
  const counts = instanceCounts(master.owner);
  const stopping = new AbortController();
  let watching: KindWatch | undefined;

  /** Lists every record's metadata into the count; resolves with the list's version. */
  async function list(): Promise<string | undefined> {
    counts.listing();
    let version: string | undefined;
    let next: string | undefined;
    do {
      const page = await listRecordPage<SFServiceInstance>(master, SFSERVICEINSTANCE, namespace, {
        limit: pageSize,
        metadataOnly: true,
        ...(next ? { continue: next } : {}),
      });
      version ??= page.resourceVersion;
      for (const { metadata } of page.items)
        counts.apply(
          'LISTED',
          keyOf({ namespace: metadata.namespace, name: metadata.name }),
          metadata.labels,
        );
      next = page.continue;
    } while (next && !stopping.signal.aborted);
    return version;
  }

  const ready = (async () => {
    for (let retryMs = FIRST_RETRY_MS; !stopping.signal.aborted;) {
      try {
        const version = await list();
        if (stopping.signal.aborted) return;
        counts.listed();
        watching = watch(
          master,
          SFSERVICEINSTANCE.apiVersion,
          SFSERVICEINSTANCE.kind,
          namespace,
          (object, _version, change) => change && counts.apply(change.type, keyOf(object), change.labels),
          (err) => onError(err, 'watching the instance records'),
          version,
          counts,
        );
        return;
      } catch (err) {
        onError(err, 'listing the instance records');
        await sleep(retryMs, undefined, { signal: stopping.signal }).catch(() => undefined);
        retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS);
      }
    }
  })();

  return {
    ready,
    of: (clusterId) => counts.of(clusterId),
    size: () => counts.size(),
    stop() {
      stopping.abort();
      watching?.stop();
    },
  };
}
