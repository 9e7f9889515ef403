/**
 * Following the objects the instances' references (`getValueFrom`) read: when one of them changes
 * after an instance's objects were applied, the instance is updated (an ordinary update workflow,
 * as a plan's rollout starts one: its plan, parameters and context as its record holds them), so
 * that its objects are resolved and applied again.
 *
 * Each apply of an instance's objects records what its references read in the record's
 * `status.references` and tells this worker (see src/activities/resources.ts); at its start, the worker reads
 * them from the records, a page at a time. It keeps one map, object -> the instances that read it
 * (and the version each read), and watches each kind read once per cluster, in every namespace
 * (kind-watch.ts), keeping to the objects read: one watch of ConfigMaps on a cluster however many
 * instances, in however many namespaces, read ConfigMaps. A kind the worker may not watch
 * (the chart lets it list no Secrets unless `rbac.referencedResources` grants them) is left: its
 * changes reach the instance at its next update.
 *
 * A change waits a little ({@link SETTLE_MS}) so that one edit seen several times starts one
 * update; an instance busy with an operation (or one of its bindings with one) is tried again
 * after {@link RETRY_MS}. Level-based: the record holds the resourceVersion each object had when it
 * was read, so a change already applied (by an update another worker started, say) starts nothing;
 * and once the kind's watch is open, an object an instance read at a version the watch has not
 * told of is read again, so a change made between that read and the watch (while the worker was
 * down, say) is heard too. After a 410 the watch lists the kind and tells of every object, and the
 * versions the instances read decide again.
 *
 * A controller, not an activity: the worker runs it beside the activities, which hear of it only
 * as the {@link ReferenceFollower} they are given (src/activities/deps.ts).
 */
import type { ClusterClient } from '../kube/clients.js';
import { forEachRecord, getRecord } from '../kube/custom-objects.js';
import { statusCodeOf } from '../kube/errors.js';
import { watchKind, type KindWatch, type ObjectKey } from '../kube/kind-watch.js';
import { readObject } from '../kube/objects.js';
import { instanceNamespace, resourceName } from '../resources/names.js';
import { SFSERVICEINSTANCE, type ReferencedObject, type SFServiceInstance } from '../resources/types.js';
import type { InstanceRequest } from '../workflows/messages.js';
import type { ReferenceFollower } from '../activities/deps.js';
import type { RecordedUpdates } from '../activities/rollouts.js';

/** How long a change settles before the updates start. */
export const SETTLE_MS = 1500;
/** How long before an instance that was busy, or whose update could not start, is tried again. */
export const RETRY_MS = 10_000;

/** A change of a referenced object, as seen: where it is and its new resourceVersion, never what it holds. */
export interface ReferenceChange {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion?: string;
}

/** What came of one instance's update after a change: started, to try again later, or nothing to do. */
export type FollowOutcome = 'started' | 'busy' | 'applied' | 'gone';

export interface FollowedReferences extends ReferenceFollower {
  /** How many objects and instances are followed, kinds watched, and updates waiting to start. */
  size(): { objects: number; instances: number; watches: number; pending: number };
  stop(): void;
}

export interface FollowOptions {
  /** The clients of a cluster. */
  readonly cluster: (clusterId: string) => Promise<ClusterClient>;
  /** Starts the instance's update after `change`, unless it has applied it already. */
  readonly update: (instanceId: string, change: ReferenceChange) => Promise<FollowOutcome>;
  readonly onError?: (err: unknown, what: string) => void;
  /** The watch of one kind in every namespace of a cluster; kind-watch.ts's by default. */
  readonly watch?: typeof watchKind;
  /** The resourceVersion an object has now (undefined when there is none); a read of the apiserver by default. */
  readonly currentVersion?: (client: ClusterClient, object: ReferencedObject) => Promise<string | undefined>;
  /** @default SETTLE_MS */
  readonly settleMs?: number;
  /** @default RETRY_MS */
  readonly retryMs?: number;
}

/** Names a change for people: `<kind> <namespace>/<name>`. */
export const describeChange = (change: ReferenceChange): string =>
  `${change.kind} ${change.namespace}/${change.name}`;

/** A 403, as the list (`code`) or the watch (`statusCode`) reports it. */
const isForbidden = (err: unknown) =>
  statusCodeOf(err) === 403 || (err as { statusCode?: unknown } | null)?.statusCode === 403;

const kindKey = (clusterId: string, apiVersion: string, kind: string) => `${clusterId}|${apiVersion}|${kind}`;
const objectKey = (
  clusterId: string,
  r: { apiVersion: string; kind: string; namespace: string; name: string },
) => `${kindKey(clusterId, r.apiVersion, r.kind)}|${r.namespace}|${r.name}`;

/** The resourceVersion an object has now, undefined when there is none (kube/objects.ts's read). */
async function versionNow(client: ClusterClient, object: ReferencedObject): Promise<string | undefined> {
  const { apiVersion, kind, namespace, name } = object;
  return (await readObject(client, { apiVersion, kind, namespace, name }))?.metadata.resourceVersion;
}

export function followedReferences(options: FollowOptions): FollowedReferences {
  const {
    cluster,
    update,
    onError = () => undefined,
    watch = watchKind,
    currentVersion = versionNow,
    settleMs = SETTLE_MS,
    retryMs = RETRY_MS,
  } = options;
  /** Object key -> the instances whose references read it, each with the resourceVersion it read. */
  const readers = new Map<string, Map<string, string | undefined>>();
  /** Instance id -> the keys of the objects it reads. */
  const reads = new Map<string, string[]>();
  /** Object key -> the newest resourceVersion heard of (from the watch, or read). */
  const latest = new Map<string, string>();
  /** Watches by kind key (one per cluster and kind, in every namespace); undefined until it is made. */
  const watches = new Map<string, KindWatch | undefined>();
  /** Kinds the worker may not watch (by kind key). */
  const forbidden = new Set<string>();
  /** Instances to update, with the change they follow. */
  const pending = new Map<string, ReferenceChange>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const schedule = (ms: number) => {
    if (stopped || timer) return;
    timer = setTimeout(() => void flush(), ms);
    timer.unref();
  };

  async function flush(): Promise<void> {
    timer = undefined;
    const due = [...pending];
    pending.clear();
    let retry = false;
    await Promise.all(
      due.map(async ([instanceId, change]) => {
        let outcome: FollowOutcome;
        try {
          outcome = await update(instanceId, change);
        } catch (err) {
          onError(err, `updating instance ${instanceId} after a change of ${describeChange(change)}`);
          outcome = 'busy';
        }
        if (outcome === 'gone') unfollow(instanceId);
        if (outcome !== 'busy' || stopped) return;
        // A newer change seen meanwhile is the one to follow.
        if (!pending.has(instanceId)) pending.set(instanceId, change);
        retry = true;
      }),
    );
    if (retry) schedule(retryMs);
    else if (pending.size > 0) schedule(settleMs);
  }

  /** An object of a watched kind is at `version` now: its readers that read another version follow. */
  const changed = (
    clusterId: string,
    apiVersion: string,
    kind: string,
    object: ObjectKey,
    version?: string,
  ) => {
    if (!object.namespace) return;
    const change: ReferenceChange = {
      apiVersion,
      kind,
      namespace: object.namespace,
      name: object.name,
      ...(version ? { resourceVersion: version } : {}),
    };
    const key = objectKey(clusterId, change);
    const ids = readers.get(key);
    if (!ids) return;
    if (version) latest.set(key, version);
    let any = false;
    for (const [id, read] of ids)
      if (!version || read !== version) {
        pending.set(id, change);
        any = true;
      }
    if (any) schedule(settleMs);
  };

  /**
   * Reads the object once its kind's watch is open: a change made before (between an instance's
   * read and the watch, or while the worker was down) is heard as if the watch had seen it.
   */
  function check(clusterId: string, object: ReferencedObject): void {
    const kindWatch = watches.get(kindKey(clusterId, object.apiVersion, object.kind));
    const opened = kindWatch ? kindWatch.opened : Promise.resolve();
    void opened
      .then(async () => {
        if (stopped || forbidden.has(kindKey(clusterId, object.apiVersion, object.kind))) return;
        const version = await currentVersion(await cluster(clusterId), object);
        if (version) changed(clusterId, object.apiVersion, object.kind, object, version);
      })
      .catch((err: unknown) =>
        onError(err, `reading ${object.kind} ${object.namespace}/${object.name} in cluster ${clusterId}`),
      );
  }

  /** Watches the kind in every namespace of the cluster: one watch, however many namespaces its objects are in. */
  function watched(clusterId: string, apiVersion: string, kind: string): void {
    const id = kindKey(clusterId, apiVersion, kind);
    if (stopped || forbidden.has(id) || watches.has(id)) return;
    let resolveOpened!: () => void;
    const opening = new Promise<void>((resolve) => (resolveOpened = resolve));
    // Until the cluster's clients are found, a check waits for the watch all the same.
    watches.set(id, { opened: opening, stop: () => undefined });
    const what = `watching ${kind} (${apiVersion}) in cluster ${clusterId}`;
    cluster(clusterId).then(
      (client) => {
        if (stopped || !watches.has(id)) return resolveOpened();
        const kindWatch = watch(
          client,
          apiVersion,
          kind,
          undefined,
          (object, version) => changed(clusterId, apiVersion, kind, object, version),
          (err) => {
            if (!isForbidden(err)) return onError(err, what);
            // Not allowed: no watch of this kind; its changes reach instances at their next update.
            if (!forbidden.has(id))
              onError(err, `${what} (not allowed: its changes reach the instances at their next update)`);
            forbidden.add(id);
            const forbiddenWatch = watches.get(id);
            setImmediate(() => forbiddenWatch?.stop());
            watches.delete(id);
          },
        );
        if (watches.has(id)) watches.set(id, kindWatch);
        void kindWatch.opened.then(resolveOpened);
      },
      (err: unknown) => {
        watches.delete(id);
        resolveOpened();
        onError(err, what);
      },
    );
  }

  function unfollow(instanceId: string): void {
    for (const key of reads.get(instanceId) ?? []) {
      const ids = readers.get(key);
      ids?.delete(instanceId);
      if (ids?.size === 0) {
        readers.delete(key);
        latest.delete(key);
      }
    }
    reads.delete(instanceId);
  }

  return {
    follow(instanceId, clusterId, references) {
      if (stopped) return;
      unfollow(instanceId);
      if (references.length === 0) return;
      const keys = references.map((r) => objectKey(clusterId, r));
      reads.set(instanceId, keys);
      references.forEach((r, i) => {
        const key = keys[i]!;
        let ids = readers.get(key);
        if (!ids) readers.set(key, (ids = new Map()));
        ids.set(instanceId, r.resourceVersion);
        watched(clusterId, r.apiVersion, r.kind);
        // What the watch heard already covers a reader of the version it last heard of.
        if (!r.resourceVersion || latest.get(key) !== r.resourceVersion) check(clusterId, r);
      });
    },
    size() {
      return { objects: readers.size, instances: reads.size, watches: watches.size, pending: pending.size };
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      for (const kindWatch of watches.values()) kindWatch?.stop();
      watches.clear();
      readers.clear();
      reads.clear();
      latest.clear();
      pending.clear();
    },
  };
}

/**
 * Follows the references every instance record holds, read a page at a time (in `shared`, the one
 * namespace of all instances, or in all namespaces). An instance without a `spec.clusterId` is on
 * the master, `masterId`.
 */
export async function followRecorded(
  master: ClusterClient,
  shared: string | undefined,
  masterId: string,
  followed: Pick<FollowedReferences, 'follow'>,
): Promise<void> {
  await forEachRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, shared, '', (record) => {
    const references = record.status?.references;
    if (!references?.length || record.metadata.deletionTimestamp || !record.spec.instanceId) return;
    followed.follow(record.spec.instanceId, record.spec.clusterId ?? masterId, references);
  });
}

/** Whether the record's last operation succeeded and has not applied `change` yet. */
export function wantsUpdate(record: SFServiceInstance, change: ReferenceChange): boolean {
  if (record.status?.state !== 'succeeded') return false;
  const read = record.status.references?.find(
    (r) =>
      r.apiVersion === change.apiVersion &&
      r.kind === change.kind &&
      r.namespace === change.namespace &&
      r.name === change.name,
  );
  if (!read) return false;
  return !change.resourceVersion || read.resourceVersion !== change.resourceVersion;
}

export interface FollowingUpdateDeps {
  readonly master: ClusterClient;
  readonly instanceNamespace?: string;
  readonly updates: Pick<RecordedUpdates, 'updateOf' | 'release'>;
  /** Starts the update workflow `workflowId`; false when an operation of the instance runs already. */
  readonly start: (workflowId: string, request: InstanceRequest) => Promise<boolean>;
}

/**
 * The update an instance makes after `change`, started as a rollout starts one: claimed against
 * its bindings' operations, with the plan, parameters and context its record holds; asked for by
 * the interoperator, naming the change (never a value).
 */
export function followingUpdate(deps: FollowingUpdateDeps) {
  return async (instanceId: string, change: ReferenceChange): Promise<FollowOutcome> => {
    const record = await getRecord<SFServiceInstance>(
      deps.master,
      SFSERVICEINSTANCE,
      instanceNamespace(instanceId, deps.instanceNamespace),
      resourceName(instanceId),
    );
    if (!record || record.metadata.deletionTimestamp) return 'gone';
    const state = record.status?.state;
    if (state === 'in_queue' || state === 'in progress' || state === 'delete') return 'busy';
    if (!wantsUpdate(record, change)) return 'applied';
    const update = await deps.updates.updateOf(instanceId, record.status?.planRevision ?? 'unknown', true, {
      platform: 'interoperator',
      identity: { referenceChanged: describeChange(change) },
    });
    if ('gone' in update) return 'gone';
    if ('busy' in update) return 'busy';
    let started = false;
    try {
      started = await deps.start(update.workflowId, update.request);
    } finally {
      if (!started && update.claimedAt)
        await deps.updates.release([{ instanceId, claimedAt: update.claimedAt }]);
    }
    return started ? 'started' : 'busy';
  };
}
