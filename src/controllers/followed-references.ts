/**
 * Following the objects the instances' references (`getValueFrom`) read: when one of them changes
 * after instances' objects were applied, the change is rolled out to the instances that read it,
 * as a plan's revision is: a rollout (src/workflows/rollout.ts) per object and plan, with the
 * plan's rollout settings (a canary batch, then waves of at most `maxConcurrency`, a soak, pause,
 * resume and abort), whose updates are ordinary update workflows with the plan, parameters and
 * context the instances' records hold.
 *
 * Each apply of an instance's objects records what its references read in the record's
 * `status.references` and tells this worker (see src/activities/resources.ts); at its start, the worker reads
 * them from the records, a page at a time. It keeps one map, object -> the instances that read it
 * (with their plan and the version each read), and watches each kind read once per cluster, in
 * every namespace (kind-watch.ts), keeping to the objects read: one watch of ConfigMaps on a
 * cluster however many instances, in however many namespaces, read ConfigMaps. A kind the worker
 * may not watch (the chart lets it list no Secrets unless `rbac.referencedResources` grants them)
 * is left: its changes reach the instance at its next update.
 *
 * A change waits a little ({@link SETTLE_MS}) so that one edit seen several times starts one
 * rollout, and its rollout is told of it once (the rollout's workflow id is the object's and the
 * plan's, its revision the object's resourceVersion: every worker that sees the change tells the
 * same rollout the same revision, which it takes once; a newer version redirects it). Level-based:
 * a change only the instances that read another version of the object want starts a rollout; once
 * the kind's watch is open, an object an instance read at a version the watch has not told of is
 * read again, so a change made between that read and the watch (while the worker was down, say)
 * is heard too. After a 410 the watch lists the kind and tells of every object, and the versions
 * the instances read decide again.
 *
 * A controller, not an activity: the worker runs it beside the activities, which hear of it only
 * as the {@link ReferenceFollower} they are given (src/activities/deps.ts).
 */
import type { ClusterClient } from '../kube/clients.js';
import { forEachRecord } from '../kube/custom-objects.js';
import { statusCodeOf } from '../kube/errors.js';
import { watchKind, type KindWatch, type ObjectKey } from '../kube/kind-watch.js';
import { readObject } from '../kube/objects.js';
import { SFSERVICEINSTANCE, type ReferencedObject, type SFServiceInstance } from '../resources/types.js';
import type { RolloutReference, RolloutRequest } from '../admin/contract.js';
import type { ReferenceFollower } from '../activities/deps.js';

/** How long a change settles before its rollout starts. */
export const SETTLE_MS = 1500;
/** How long before a rollout that could not be started is started again. */
export const RETRY_MS = 10_000;

/** Who asks for the rollouts of referenced objects' changes. */
export const REFERENCE_CHANGE = 'reference change';

export interface FollowedReferences extends ReferenceFollower {
  /** How many objects and instances are followed, kinds watched (one watch each), and rollouts waiting to start. */
  size(): { objects: number; instances: number; watches: number; pending: number };
  stop(): void;
}

export interface FollowOptions {
  /** The clients of a cluster. */
  readonly cluster: (clusterId: string) => Promise<ClusterClient>;
  /** Starts the rollout `request` asks for, or tells the running one of its revision (broker/plan-revisions.ts). */
  readonly startRollout: (request: RolloutRequest) => Promise<void>;
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

/** Names a referenced object for people: `<kind> <namespace>/<name>`. */
export const describeReference = (r: { kind: string; namespace: string; name: string }): string =>
  `${r.kind} ${r.namespace}/${r.name}`;

/** What an instance reads of an object: its plan, and the version it read. */
interface Reader {
  readonly planId: string;
  readonly resourceVersion?: string;
}

/**
 * The rollouts a change of an object to `version` asks for: one per plan of the readers that read
 * another version, towards `version`. Pure.
 */
export function rolloutsOfChange(
  reference: RolloutReference,
  version: string,
  readers: ReadonlyMap<string, Reader>,
): RolloutRequest[] {
  const plans = new Set<string>();
  for (const reader of readers.values()) if (reader.resourceVersion !== version) plans.add(reader.planId);
  return [...plans]
    .sort()
    .map((planId) => ({ planId, revision: version, reference, requestedBy: REFERENCE_CHANGE }));
}

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
    startRollout,
    onError = () => undefined,
    watch = watchKind,
    currentVersion = versionNow,
    settleMs = SETTLE_MS,
    retryMs = RETRY_MS,
  } = options;
  /** Object key -> the instances whose references read it, each with its plan and the version it read. */
  const readers = new Map<string, Map<string, Reader>>();
  /** Instance id -> the keys of the objects it reads. */
  const reads = new Map<string, string[]>();
  /** Object key -> the newest resourceVersion heard of (from the watch, or read). */
  const latest = new Map<string, string>();
  /** Watches by kind key (one per cluster and kind, in every namespace). */
  const watches = new Map<string, KindWatch>();
  /** Kinds the worker may not watch (by kind key). */
  const forbidden = new Set<string>();
  /** Rollouts to start, by object key and plan. */
  const pending = new Map<string, RolloutRequest>();
  /** The revision each rollout (by object key and plan) was last told: told once. */
  const told = new Map<string, string>();
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
      due.map(async ([id, request]) => {
        if (told.get(id) === request.revision) return;
        try {
          await startRollout(request);
          told.set(id, request.revision);
        } catch (err) {
          onError(err, `starting the rollout of the change of ${describeReference(request.reference!)}`);
          // A newer change seen meanwhile is the one to roll out.
          if (!stopped && !pending.has(id)) pending.set(id, request);
          retry = true;
        }
      }),
    );
    if (retry) schedule(retryMs);
    else if (pending.size > 0) schedule(settleMs);
  }

  /** An object of a watched kind is at `version` now: the plans of its readers that read another version roll it out. */
  const changed = (
    clusterId: string,
    apiVersion: string,
    kind: string,
    object: ObjectKey,
    version?: string,
  ) => {
    if (!object.namespace || !version) return;
    const reference: RolloutReference = {
      clusterId,
      apiVersion,
      kind,
      namespace: object.namespace,
      name: object.name,
    };
    const key = objectKey(clusterId, reference);
    const ids = readers.get(key);
    if (!ids) return;
    latest.set(key, version);
    const requests = rolloutsOfChange(reference, version, ids);
    for (const request of requests) pending.set(`${key}|${request.planId}`, request);
    if (requests.length > 0) schedule(settleMs);
  };

  /**
   * Reads the object once its kind's watch is open: a change made before (between an instance's
   * read and the watch, or while the worker was down) is heard as if the watch had seen it.
   */
  function check(clusterId: string, object: ReferencedObject): void {
    const opened =
      watches.get(kindKey(clusterId, object.apiVersion, object.kind))?.opened ?? Promise.resolve();
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
    follow(instanceId, planId, clusterId, references) {
      if (stopped) return;
      unfollow(instanceId);
      if (references.length === 0) return;
      const keys = references.map((r) => objectKey(clusterId, r));
      reads.set(instanceId, keys);
      references.forEach((r, i) => {
        const key = keys[i]!;
        let ids = readers.get(key);
        if (!ids) readers.set(key, (ids = new Map()));
        ids.set(instanceId, { planId, ...(r.resourceVersion ? { resourceVersion: r.resourceVersion } : {}) });
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
      told.clear();
    },
  };
}

/**
 * Follows the references every instance record of the landscape holds (those of the plans its
 * catalog holds, `ours`: another landscape's instances on the same cluster are its own workers'),
 * read a page at a time (in `shared`, the one namespace of all instances, or in all namespaces). An
 * instance without a `spec.clusterId` is on the master, `masterId`.
 */
export async function followRecorded(
  master: ClusterClient,
  shared: string | undefined,
  masterId: string,
  followed: Pick<FollowedReferences, 'follow'>,
  ours: (planId: string) => boolean,
): Promise<void> {
  await forEachRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, shared, '', (record) => {
    const references = record.status?.references;
    if (!references?.length || record.metadata.deletionTimestamp || !record.spec.instanceId) return;
    if (!ours(record.spec.planId)) return;
    followed.follow(
      record.spec.instanceId,
      record.spec.planId,
      record.spec.clusterId ?? masterId,
      references,
    );
  });
}
