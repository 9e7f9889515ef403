/**
 * How many instance records are placed on each cluster, and how many are leaving each, kept from
 * what a watch of the records tells: each change of a record moves its count from the values of
 * its old labels to those of its new ones. A record counts on the cluster its cluster-id label
 * names, and as leaving the cluster its leaving label names, when it belongs to the installation
 * (by {@link isOwnedBy}): the same records a list of the installation selected by those labels
 * finds.
 *
 * The count is to be trusted ({@link InstanceCounts.synced}) once a listing of every record has
 * ended, and not while one runs again: a listing after the watch lost its history tells of every
 * record there is, and the records it did not tell of are dropped when it ends.
 *
 * Pure: placed-instances.ts feeds it from the watch.
 */
import { isOwnedBy } from '../resources/record-labels.js';
import { LABELS, labelValue } from '../resources/names.js';

/** What happened to a record: added, modified or deleted (a watch's events), or found by a listing. */
export type RecordEvent = 'ADDED' | 'MODIFIED' | 'DELETED' | 'LISTED';

/** The records placed on a cluster and those leaving it. */
export interface ClusterInstanceCount {
  readonly placed: number;
  readonly leaving: number;
}

export interface InstanceCounts {
  /**
   * A record (by a key of its own: its namespace and name) is as `labels` say now, or is gone
   * (`DELETED`).
   */
  apply(event: RecordEvent, key: string, labels: Readonly<Record<string, string>> | undefined): void;
  /** A listing of every record starts (again): the count is not to be trusted until it ends. */
  listing(): void;
  /** The listing ended: each record it did not tell of (nor a watch since it began) is gone. */
  listed(): void;
  /** Whether a listing has ended and none runs now. */
  readonly synced: boolean;
  /** The records placed on the cluster and leaving it; undefined unless {@link synced}. */
  of(clusterId: string): ClusterInstanceCount | undefined;
  /** How many records are kept (those with either label). */
  size(): number;
}

/** The values of a record's two labels, as counted. */
interface Placement {
  readonly on?: string;
  readonly leaving?: string;
}

const add = (counts: Map<string, number>, value: string | undefined, by: 1 | -1) => {
  if (value === undefined) return;
  const next = (counts.get(value) ?? 0) + by;
  if (next === 0) counts.delete(value);
  else counts.set(value, next);
};

/**
 * An empty count of the records of installation `owner` (of every record without one), waiting
 * for its first listing: it is not {@link InstanceCounts.synced} until that ends.
 */
export function instanceCounts(owner?: string): InstanceCounts {
  const records = new Map<string, Placement>();
  const placed = new Map<string, number>();
  const leaving = new Map<string, number>();
  /** The keys told of since the listing began; undefined when none runs. */
  let seen: Set<string> | undefined = new Set();
  let listedOnce = false;
  const synced = () => listedOnce && seen === undefined;

  const forget = (key: string) => {
    const previous = records.get(key);
    if (!previous) return;
    records.delete(key);
    add(placed, previous.on, -1);
    add(leaving, previous.leaving, -1);
  };

  return {
    apply(event, key, labels) {
      forget(key);
      if (event === 'DELETED') {
        seen?.delete(key);
        return;
      }
      seen?.add(key);
      if (!isOwnedBy(labels, owner)) return;
      const on = labels?.[LABELS.clusterId];
      const away = labels?.[LABELS.leavingCluster];
      if (on === undefined && away === undefined) return;
      records.set(key, {
        ...(on !== undefined ? { on } : {}),
        ...(away !== undefined ? { leaving: away } : {}),
      });
      add(placed, on, 1);
      add(leaving, away, 1);
    },
    listing() {
      seen = new Set();
    },
    listed() {
      if (!seen) return;
      for (const key of [...records.keys()]) if (!seen.has(key)) forget(key);
      seen = undefined;
      listedOnce = true;
    },
    get synced() {
      return synced();
    },
    of(clusterId) {
      if (!synced()) return undefined;
      const value = labelValue(clusterId);
      return { placed: placed.get(value) ?? 0, leaving: leaving.get(value) ?? 0 };
    },
    size: () => records.size,
  };
}
