/**
 * Following the objects the instances' references (`getValueFrom`) read: when one of them changes
 * after an instance's objects were applied, the instance is updated (an ordinary update workflow,
 * as a plan's rollout starts one: its plan, parameters and context as its record holds them), so
 * that its objects are resolved and applied again.
 *
 * Each apply of an instance's objects records what its references read in the record's
 * `status.references` and tells this worker (see src/activities/resources.ts); at its start, the worker reads
 * them from the records, a page at a time. It keeps one map, object -> the instances that read it,
 * and watches each kind in each namespace read (kind-watch.ts). A kind the worker may not watch
 * (the chart lets it list no Secrets unless `rbac.referencedResources` grants them) is left: its
 * changes reach the instance at its next update.
 *
 * A change waits a little ({@link SETTLE_MS}) so that one edit seen several times starts one
 * update; an instance busy with an operation (or one of its bindings with one) is tried again
 * after {@link RETRY_MS}. Level-based: the record holds the resourceVersion each object had when it
 * was read, so a change already applied (by an update another worker started, say) starts nothing;
 * and a watch starts from the version the instance read, so a change made between that read and
 * the watch (while the worker was down, say) is heard too, unless the apiserver has compacted its
 * history past it.
 *
 * A controller, not an activity: the worker runs it beside the activities, which hear of it only
 * as the {@link ReferenceFollower} they are given (src/activities/deps.ts).
 */
import type { ClusterClient } from '../kube/clients.js';
import { forEachRecord, getRecord } from '../kube/custom-objects.js';
import { statusCodeOf } from '../kube/errors.js';
import { watchKind, type KindWatch, type ObjectKey } from '../kube/kind-watch.js';
import { instanceNamespace, resourceName } from '../resources/names.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../resources/types.js';
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
  /** The watch of one kind in one namespace; kind-watch.ts's by default. */
  readonly watch?: typeof watchKind;
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

export function followedReferences(options: FollowOptions): FollowedReferences {
  const {
    cluster,
    update,
    onError = () => undefined,
    watch = watchKind,
    settleMs = SETTLE_MS,
    retryMs = RETRY_MS,
  } = options;
  /** Object key -> the ids of the instances whose references read it. */
  const readers = new Map<string, Set<string>>();
  /** Instance id -> the keys of the objects it reads. */
  const reads = new Map<string, string[]>();
  /** Watches by kind key and namespace; undefined while the cluster's clients are found. */
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
    const ids = readers.get(objectKey(clusterId, change));
    if (!ids) return;
    for (const id of ids) pending.set(id, change);
    schedule(settleMs);
  };

  /** Watches the kind in the namespace, from `since` (the version an instance read) when it starts the watch. */
  function watched(
    clusterId: string,
    apiVersion: string,
    kind: string,
    namespace: string,
    since: string | undefined,
  ): void {
    const kinds = kindKey(clusterId, apiVersion, kind);
    const id = `${kinds}|${namespace}`;
    if (stopped || forbidden.has(kinds) || watches.has(id)) return;
    watches.set(id, undefined);
    const what = `watching ${kind} (${apiVersion}) in ${namespace} in cluster ${clusterId}`;
    cluster(clusterId).then(
      (client) => {
        if (stopped || !watches.has(id)) return;
        const kindWatch = watch(
          client,
          apiVersion,
          kind,
          namespace,
          (object, version) => changed(clusterId, apiVersion, kind, object, version),
          (err) => {
            if (!isForbidden(err)) return onError(err, what);
            // Not allowed: no watch of this kind anywhere; its changes reach instances at their next update.
            if (!forbidden.has(kinds))
              onError(err, `${what} (not allowed: its changes reach the instances at their next update)`);
            forbidden.add(kinds);
            for (const [key, other] of watches)
              if (key.startsWith(`${kinds}|`)) {
                setImmediate(() => other?.stop());
                watches.delete(key);
              }
          },
          since,
        );
        watches.set(id, kindWatch);
      },
      (err: unknown) => {
        watches.delete(id);
        onError(err, what);
      },
    );
  }

  function unfollow(instanceId: string): void {
    for (const key of reads.get(instanceId) ?? []) {
      const ids = readers.get(key);
      ids?.delete(instanceId);
      if (ids?.size === 0) readers.delete(key);
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
      for (const key of keys) {
        let ids = readers.get(key);
        if (!ids) readers.set(key, (ids = new Set()));
        ids.add(instanceId);
      }
      for (const r of references) watched(clusterId, r.apiVersion, r.kind, r.namespace, r.resourceVersion);
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
