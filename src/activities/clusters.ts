/**
 * The activities of the cluster health workflow: list the registry, probe one cluster and write
 * its SFCluster status (keeping the finalizer that refuses the deletion of a cluster still holding
 * instances), and copy the master's catalog to a sister. Each reads what is there and converges
 * on it, so running one twice changes nothing.
 */
import { Context } from '@temporalio/activity';
import {
  PatchStrategy,
  VersionApi,
  type KubernetesObject,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import {
  declaresCapacity,
  onboardingCondition,
  nextClusterStatus,
  nodeResources,
  podFieldSelector,
  clusterFigures,
  keptOnOffboarding,
  kubeconfigSecretToDelete,
  podResources,
  type InstanceNamespaces,
  type NodeResources,
  type PodResources,
  type ProbeResult,
} from '../clusters/index.js';
import { drainWorkflowId } from '../admin/contract.js';
import type { ClusterClient } from '../kube/clients.js';
import { isUnauthorized, type ClusterDirectory } from '../kube/cluster-directory.js';
import { listClusters } from '../kube/cluster-registry.js';
import {
  getRecord,
  countRecords,
  listRecords,
  patchRecord,
  patchRecordStatus,
} from '../kube/custom-objects.js';
import { ensureNamespace } from '../kube/objects.js';
import { apiMessageOf, isConflict, isNotFound, statusCodeOf } from '../kube/errors.js';
import type { ClusterHealthRecorder } from '../metrics/recorders.js';
import type { ConditionFacts } from '../resources/conditions.js';
import {
  CLUSTER_FINALIZER,
  FIELD_MANAGER,
  INSTANCE_NAMESPACE_PREFIX,
  KUBECTL_LAST_APPLIED_ANNOTATION,
  LABELS,
  labelValue,
} from '../resources/names.js';
import {
  CLUSTER_CONDITIONS,
  SFCLUSTER,
  SFPLAN,
  SFSERVICE,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
  type SFCluster,
} from '../resources/types.js';
import type { CatalogReplication, ClusterHealthReport, RegisteredCluster } from '../workflows/messages.js';
import { defaultSisterCrds, onboardSister } from './cluster-onboarding.js';
import type { PlacedInstanceCounts } from './deps.js';

/** Kinds copied to every running sister. */
const CATALOG_KINDS: readonly ResourceKind[] = [SFSERVICE, SFPLAN];

/** Annotations that belong to the original's tooling, not to the copy. */
const UNCOPIED_ANNOTATIONS = new Set([KUBECTL_LAST_APPLIED_ANNOTATION]);

/** How long a probe waits for a cluster's answer. */
const PROBE_TIMEOUT_MS = 10_000;

/** Nodes or pods a probe reads in one request. */
export const PROBE_PAGE_SIZE = 500;

/** How often a probe lists again from the start when a continue token expired between its pages. */
const MAX_LISTINGS = 3;

export interface ClusterActivityDeps {
  readonly clusters: ClusterDirectory;
  /** Namespace of all instance records; each its own `sf-<id>` when unset. */
  readonly instanceNamespace?: string;
  /** Where the phase written to each SFCluster is reported. @default nowhere */
  readonly health?: ClusterHealthRecorder;
  /** Nodes or pods a probe reads in one request. @default {@link PROBE_PAGE_SIZE} */
  readonly probePageSize?: number;
  /**
   * The CRDs every sister gets when it answers a probe (onboarding).
   * @default the `osb.servicefabrik.io` CRDs of the chart (charts/interoperator/crds)
   */
  readonly sisterCrds?: readonly V1CustomResourceDefinition[];
  /**
   * Where the instances on a cluster are counted, which keep it from being deleted: their records
   * on the master, or their records' copies on the cluster (for the worker of a cluster with a
   * worker of its own, which cannot read the records).
   * @default 'on the master'
   */
  readonly instancesCounted?: 'on the master' | 'on the cluster';
  /**
   * The instances placed on each cluster as a watch of the master's records keeps them, read
   * instead of listing the records when they are counted on the master and the count is to be
   * trusted. @default none: the records are listed every round
   */
  readonly placedInstances?: PlacedInstanceCounts;
}

/** Tells the server the activity is alive; a no-op outside an activity (tests call activities directly). */
function heartbeat(): void {
  try {
    Context.current().heartbeat();
  } catch {
    // not running as an activity
  }
}

/** Writes of a cluster's health that find the SFCluster changed since it was read, before the step fails (and is retried). */
const STATUS_WRITE_ATTEMPTS = 5;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** One page of a listing: its items and the token of the next page. */
interface ListPage<T> {
  readonly items: T[];
  readonly metadata?: { readonly _continue?: string };
}

/**
 * Every item of a listing, read a page at a time and each reduced to what is kept, so that a large
 * cluster is never read in one answer nor kept whole. A continue token that expired between pages
 * (410) lists again from the start. Undefined when the identity may not list them: the cluster
 * answered all the same.
 */
async function listPaged<T, U>(
  list: (page: { limit: number; _continue?: string }) => Promise<ListPage<T>>,
  pageSize: number,
  keep: (item: T) => U,
): Promise<U[] | undefined> {
  for (let listing = 1; ; listing++) {
    const kept: U[] = [];
    let next: string | undefined;
    try {
      do {
        const page = await list({ limit: pageSize, ...(next ? { _continue: next } : {}) });
        for (const item of page.items) kept.push(keep(item));
        next = page.metadata?._continue || undefined;
        heartbeat();
      } while (next);
      return kept;
    } catch (err) {
      if (statusCodeOf(err) === 403) return undefined;
      if (statusCodeOf(err) === 410 && next && listing < MAX_LISTINGS) continue;
      throw err;
    }
  }
}

/** What a probe reads of a cluster. */
interface ProbeScope {
  /** Whether the SFCluster declares its capacity: then its nodes are not read. */
  readonly declared: boolean;
  readonly instanceNamespaces: InstanceNamespaces;
  readonly pageSize: number;
}

/**
 * Version, nodes and pods of a cluster, paged: of the nodes what capacity reads (none when the
 * capacity is declared), of the pods that have not finished what requests read.
 */
async function probe(client: ClusterClient, scope: ProbeScope): Promise<ProbeResult> {
  const version = await client.kubeConfig.makeApiClient(VersionApi).getCode();
  const fieldSelector = podFieldSelector(scope.instanceNamespaces);
  const [nodes, pods] = await Promise.all([
    scope.declared
      ? undefined
      : listPaged(
          (page) => client.core.listNode(page),
          scope.pageSize,
          (node) => nodeResources(node as NodeResources),
        ),
    listPaged(
      (page) => client.core.listPodForAllNamespaces({ ...page, fieldSelector }),
      scope.pageSize,
      (pod) => podResources(pod as PodResources),
    ),
  ]);
  return {
    ok: true,
    version: version.gitVersion,
    ...(nodes ? { nodes } : {}),
    ...(pods ? { pods } : {}),
  };
}

/**
 * Probes a cluster through the directory. An authentication failure drops the cached clients and
 * probes once more with the kubeconfig read afresh.
 */
async function probeCluster(
  clusters: ClusterDirectory,
  clusterId: string,
  scope: ProbeScope,
): Promise<ProbeResult> {
  const attempt = async () => probe(await clusters.get(clusterId), scope);
  try {
    try {
      return await withTimeout(attempt(), PROBE_TIMEOUT_MS, `cluster ${clusterId}`);
    } catch (err) {
      if (!isUnauthorized(err)) throw err;
      clusters.forget(clusterId);
      return await withTimeout(attempt(), PROBE_TIMEOUT_MS, `cluster ${clusterId}`);
    }
  } catch (err) {
    return { ok: false, error: apiMessageOf(err) };
  }
}

/**
 * Number of instance records in the master placed on the cluster (by their cluster-id label), or
 * with `label` the leaving label, of those moved away that are still being taken off it: in the
 * one instance namespace when there is one, else in all namespaces.
 */
async function instancesOn(
  master: ClusterClient,
  clusterId: string,
  instanceNamespace: string | undefined,
  label: string = LABELS.clusterId,
): Promise<number> {
  return countRecords(master, SFSERVICEINSTANCE, instanceNamespace, `${label}=${labelValue(clusterId)}`);
}

/**
 * Deletes the kubeconfig Secret of a cluster being offboarded, unless another cluster names it or
 * it asks to be kept; gone already counts as done. A cluster without one (a cluster with a worker
 * of its own, whose identity on the master may list no SFClusters) has nothing to delete.
 */
async function removeKubeconfigSecret(
  master: ClusterClient,
  namespace: string,
  leaving: SFCluster,
): Promise<void> {
  if (!leaving.spec.secretRef) return;
  const name = kubeconfigSecretToDelete(leaving, await listClusters(master, namespace));
  if (!name) return;
  try {
    const secret = await master.core.readNamespacedSecret({ name, namespace });
    if (keptOnOffboarding(secret.metadata?.annotations)) return;
    await master.core.deleteNamespacedSecret({ name, namespace });
  } catch (err) {
    if (isNotFound(err)) return;
    throw new Error(
      `deleting the kubeconfig Secret ${namespace}/${name} of SFCluster ${leaving.metadata.name}: ${apiMessageOf(err)}`,
    );
  }
}

/** The finalizers of the cluster, with ours added or taken away; undefined when nothing changes. */
export function clusterFinalizers(
  cluster: Pick<SFCluster, 'metadata'>,
  instances: number,
): { finalizers: string[]; released: boolean } | undefined {
  const finalizers = cluster.metadata.finalizers ?? [];
  const has = finalizers.includes(CLUSTER_FINALIZER);
  if (!cluster.metadata.deletionTimestamp)
    return has ? undefined : { finalizers: [...finalizers, CLUSTER_FINALIZER], released: false };
  if (!has || instances > 0) return undefined;
  return { finalizers: finalizers.filter((f) => f !== CLUSTER_FINALIZER), released: true };
}

/** A catalog object as copied to a sister: its name, labels, annotations and spec. */
export function catalogCopy(original: KubeObject, masterId: string): KubeObject {
  const annotations = Object.fromEntries(
    Object.entries(original.metadata.annotations ?? {}).filter(([key]) => !UNCOPIED_ANNOTATIONS.has(key)),
  );
  return {
    apiVersion: original.apiVersion,
    kind: original.kind,
    metadata: {
      name: original.metadata.name,
      namespace: original.metadata.namespace,
      labels: { ...original.metadata.labels, [LABELS.replicaOf]: labelValue(masterId) },
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: (original as { spec?: unknown }).spec,
  } as KubeObject;
}

export function clusterActivities({
  clusters,
  instanceNamespace,
  health,
  probePageSize = PROBE_PAGE_SIZE,
  sisterCrds,
  instancesCounted = 'on the master',
  placedInstances,
}: ClusterActivityDeps) {
  const { master, masterId, namespace } = clusters;
  const instanceNamespaces: InstanceNamespaces = {
    prefix: INSTANCE_NAMESPACE_PREFIX,
    ...(instanceNamespace ? { shared: instanceNamespace } : {}),
  };
  return {
    /** The clusters registered in the master. */
    async listRegisteredClusters(): Promise<RegisteredCluster[]> {
      const registered = await listClusters(master, namespace);
      return registered
        .map((c) => ({
          clusterId: c.metadata.name!,
          master: c.metadata.name === masterId,
          ...(c.spec.taskQueue && c.metadata.name !== masterId ? { taskQueue: c.spec.taskQueue } : {}),
        }))
        .sort((a, b) => a.clusterId.localeCompare(b.clusterId));
    },

    /**
     * Probes the cluster and writes its health to its SFCluster's status (a merge patch: the
     * reservations are left alone); keeps the finalizer on it while it exists and removes it once
     * its deletion is requested and no instance is placed there. A sister that answers is
     * onboarded too (our CRDs installed or upgraded there), and its `CrdsInstalled` condition goes
     * in the same patch, so it never turns running without saying whether it can take instances.
     * With `unanswered` (why the worker that serves the cluster alone could not probe it), records
     * the cluster as unreachable.
     */
    async recordClusterHealth(
      clusterId: string,
      offlineAfterMs: number,
      unanswered?: string,
      stabilizeAfterMs = 0,
      askedAt?: string,
    ): Promise<ClusterHealthReport> {
      const cluster = await getRecord<SFCluster>(master, SFCLUSTER, namespace, clusterId);
      if (!cluster) {
        health?.clusterPhase(clusterId, undefined);
        return {};
      }
      const scope: ProbeScope = {
        declared: declaresCapacity(cluster.spec.totalCapacity),
        instanceNamespaces,
        pageSize: probePageSize,
      };
      const probed = async (): Promise<{ probe: ProbeResult; crds?: ConditionFacts }> => {
        if (unanswered)
          return {
            probe: { ok: false, error: unanswered, ...(askedAt ? { askedAt } : {}) },
          };
        const probe = await probeCluster(clusters, clusterId, scope);
        if (!probe.ok || clusterId === masterId) return { probe };
        const onboarded = await onboardSister(
          await clusters.get(clusterId),
          sisterCrds ?? defaultSisterCrds(),
          {
            heartbeat,
          },
        );
        const previous = cluster.status?.conditions?.find((c) => c.type === CLUSTER_CONDITIONS.crdsInstalled);
        const crds = onboardingCondition(onboarded, previous);
        return { probe, ...(crds ? { crds } : {}) };
      };
      const deleting = cluster.metadata.deletionTimestamp !== undefined;
      const onMaster = instancesCounted === 'on the master';
      // Listed only when no watch keeps the count, or while its count is not to be trusted.
      const kept = onMaster ? placedInstances?.of(clusterId) : undefined;
      const listed = (label?: string) => instancesOn(master, clusterId, instanceNamespace, label);
      const [found, instances, leaving] = await Promise.all([
        deleting ? undefined : probed(),
        kept
          ? kept.placed
          : onMaster
            ? listed()
            : clusters.get(clusterId).then((there) => instancesOn(there, clusterId, instanceNamespace)),
        // Its deletion waits for the moves still taking instances off it too (counted by their
        // copies there already when counting on the cluster itself).
        deleting && onMaster ? (kept ? kept.leaving : listed(LABELS.leavingCluster)) : 0,
      ]);
      heartbeat();
      const statusOf = (read: SFCluster) =>
        nextClusterStatus({
          cluster: read,
          probe: found?.probe,
          now: new Date(),
          offlineAfterMs,
          stabilizeAfterMs,
          instances,
          instanceNamespaces,
          ...(found?.crds ? { crds: found.crds } : {}),
        });
      // Written on the condition that the SFCluster is as read: the status holds conditions others
      // write (a drain's `Drained`), which a write computed from an older read would take back.
      // When it changed meanwhile, the status is computed again from it, with this probe's answer.
      let read = cluster;
      let status = statusOf(read);
      let written: SFCluster | undefined;
      for (let attempt = 1; !written; attempt++) {
        try {
          written = await patchRecordStatus<SFCluster>(
            master,
            SFCLUSTER,
            namespace,
            clusterId,
            { ...status },
            read.metadata.resourceVersion,
          );
        } catch (err) {
          if (!isNotFound(err) && !(isConflict(err) && attempt < STATUS_WRITE_ATTEMPTS)) throw err;
          const again = isNotFound(err)
            ? undefined
            : await getRecord<SFCluster>(master, SFCLUSTER, namespace, clusterId);
          if (!again) {
            health?.clusterPhase(clusterId, undefined);
            return {};
          }
          read = again;
          status = statusOf(read);
        }
      }
      health?.clusterPhase(clusterId, status.phase, clusterFigures(written, instances));
      // Decided on the SFCluster as written, so that a deletion requested meanwhile is seen.
      // A deletion requested during this round is decided by the next, which counts the moves leaving.
      let finalizers =
        deleting || !written.metadata.deletionTimestamp
          ? clusterFinalizers(written, instances + leaving)
          : undefined;
      // A cluster is let go on its records as listed: the kept count follows them a moment later,
      // and a cluster let go is gone for good.
      if (finalizers?.released && kept && (await listed()) + (await listed(LABELS.leavingCluster)) > 0)
        finalizers = undefined;
      // The kubeconfig goes before the finalizer: once the SFCluster is gone, nothing names it.
      if (finalizers?.released && clusterId !== masterId)
        await removeKubeconfigSecret(master, namespace, written);
      if (finalizers) {
        try {
          await patchRecord(master, SFCLUSTER, namespace, clusterId, {
            metadata: {
              finalizers: finalizers.finalizers,
              resourceVersion: written.metadata.resourceVersion,
            },
          });
        } catch (err) {
          if (isNotFound(err)) return { phase: status.phase, serviceInstanceCount: instances };
          // A conflict: the SFCluster changed meanwhile; the next round decides again.
          throw new Error(
            `updating the finalizers of SFCluster ${namespace}/${clusterId}: ${apiMessageOf(err)}`,
          );
        }
      }
      const crdsInstalled = status.conditions.find((c) => c.type === CLUSTER_CONDITIONS.crdsInstalled);
      const ready = status.conditions.find((c) => c.type === CLUSTER_CONDITIONS.ready);
      const answered = found?.probe.ok === true;
      const since = !answered && ready?.status === 'False' ? Date.parse(ready.lastTransitionTime ?? '') : NaN;
      return {
        phase: status.phase,
        serviceInstanceCount: instances,
        ...(crdsInstalled ? { crdsInstalled: crdsInstalled.status === 'True' } : {}),
        ...(finalizers?.released ? { released: true } : {}),
        ...(answered && cluster.status?.phase === 'offline' ? { returning: true } : {}),
        ...(Number.isFinite(since) ? { unansweredSeconds: Math.max(0, (Date.now() - since) / 1000) } : {}),
        ...(written.metadata.deletionTimestamp && instances > 0
          ? { offboarding: { drainWorkflowId: drainWorkflowId(namespace, clusterId) } }
          : {}),
      };
    },

    /**
     * Copies the master's catalog (SFServices and SFPlans of the registry's namespace) to a
     * sister, in the same namespace, and deletes the copies there whose original is gone.
     */
    async replicateCatalog(clusterId: string): Promise<CatalogReplication> {
      if (clusterId === masterId) return { applied: 0, deleted: 0 };
      const sister = await clusters.get(clusterId);
      await ensureNamespace(sister, namespace);
      let applied = 0;
      let deleted = 0;
      for (const kind of CATALOG_KINDS) {
        const originals = await listRecords<KubeObject>(master, kind, namespace);
        const names = new Set(originals.map((o) => o.metadata.name));
        for (const original of originals) {
          await sister.objects.patch(
            catalogCopy(original, masterId) as unknown as KubernetesObject,
            undefined,
            undefined,
            FIELD_MANAGER,
            true,
            PatchStrategy.ServerSideApply,
          );
          applied += 1;
          heartbeat();
        }
        const copies = await listRecords<KubeObject>(
          sister,
          kind,
          namespace,
          `${LABELS.replicaOf}=${labelValue(masterId)}`,
        );
        for (const copy of copies) {
          if (names.has(copy.metadata.name)) continue;
          try {
            await sister.custom.deleteNamespacedCustomObject({
              group: kind.group,
              version: kind.version,
              plural: kind.plural,
              namespace,
              name: copy.metadata.name!,
            });
            deleted += 1;
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
          heartbeat();
        }
      }
      return { applied, deleted };
    },
  };
}

export type ClusterActivities = ReturnType<typeof clusterActivities>;
