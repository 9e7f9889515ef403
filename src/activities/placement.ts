/**
 * Where an instance runs. Scheduling places a new instance on a registered cluster, once: later
 * operations keep it there. The decision reserves the instance's requests in the chosen
 * SFCluster's `status.reserved`, written with the resourceVersion it was decided on, so
 * concurrent placements never overbook a cluster; releasing it (src/kube/reservations.ts) is safe to repeat.
 * The reservation is the instance's only booking (its pods are not counted besides), so every
 * later placement books it again: a provision repeated after a failure reserves anew, a plan
 * change replaces the reservation with the new plan's requests (refused when they grow beyond
 * what the cluster has free, under the resource-aware scheduler, as a provision would be).
 * Replication copies the instance record to a sister cluster, where the copy owns the operator's
 * resources (owner references cannot cross clusters).
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { recordsOnMaster } from './master-records.js';
import { reservationChange, reserve, unreserve } from '../clusters/reservations.js';
import { parseResourceList, type ResourceListInput } from '../clusters/quantity.js';
import type { ClusterClient } from '../kube/clients.js';
import { listClusters } from '../kube/cluster-registry.js';
import { getRecord, patchRecord } from '../kube/custom-objects.js';
import { apiMessageOf, isAlreadyExists, isNotFound, statusCodeOf } from '../kube/errors.js';
import { applyObject, deleteObject } from '../kube/objects.js';
import { writeReservations } from '../kube/reservations.js';
import { ANNOTATIONS, FIELD_MANAGER, LABELS, labelValue } from '../resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFCluster,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import {
  clusterSnapshot,
  schedule,
  schedulerForPlan,
  shortfall,
  type ClusterSnapshot,
  type Decision,
  type PlacementRequest,
  type SchedulerName,
  type SchedulingConfig,
} from '../scheduling/index.js';
import { findTemplate } from '../templates/index.js';
import { waitingForCluster, type InstanceRef, type Placement } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { ownerReferenceTo } from './desired-objects.js';
import { namespaceReady } from './namespaces.js';
import { FAILURE_TYPES, retryable, terminal } from './failures.js';
import { forTemplate } from '../templates/values.js';

/** The ConfigMap, in the registry's namespace, that keeps what schedulers remember between decisions. */
export const SCHEDULER_STATE_CONFIGMAP = 'interoperator-scheduler-state';

/** Longest pause before deciding again after losing a race to another placement, in ms. */
const CONFLICT_JITTER_MS = 50;

/** The failure type of a placement that found no eligible cluster. */
export const NO_ELIGIBLE_CLUSTER = 'NoEligibleCluster';

/** The longest decision summary kept in an annotation or a description. */
const MAX_SUMMARY = 1000;

/** How often a decision is taken again after another placement changed the clusters meanwhile. */
const MAX_ATTEMPTS = 20;

/** A summary short enough to keep. */
export const trimSummary = (summary: string, max = MAX_SUMMARY): string =>
  summary.length <= max ? summary : `${summary.slice(0, max - 1)}…`;

/** A write that lost a race with another writer (HTTP 409 on a resourceVersion precondition). */
const isConflict = (err: unknown): boolean => statusCodeOf(err) === 409;

const messageOf = (err: unknown): string => (err instanceof Error ? apiMessageOf(err) : String(err));

/**
 * A failure of a call to a sister cluster, retried: a cluster that does not answer says which
 * cluster the operation is waiting for and why.
 */
export function clusterFailure(clusterId: string, err: unknown): Error {
  return retryable(waitingForCluster(clusterId, messageOf(err)));
}

/**
 * The snapshots the scheduler sees: each cluster's instances are at least the placements it holds
 * reservations for (the count the health probe writes lags behind placements in flight).
 */
export function snapshotsOf(clusters: readonly SFCluster[], instanceId: string): ClusterSnapshot[] {
  return clusters.map((cluster) => {
    const snapshot = clusterSnapshot(cluster);
    const placed = Object.keys(cluster.status?.reserved ?? {}).filter((id) => id !== instanceId).length;
    return placed > snapshot.instances ? { ...snapshot, instances: placed } : snapshot;
  });
}

/** The cluster that already holds a reservation for the instance (a placement interrupted before it was recorded). */
export function reservedOn(clusters: readonly SFCluster[], instanceId: string): SFCluster | undefined {
  return clusters.find(
    (cluster) =>
      !cluster.metadata.deletionTimestamp &&
      Object.prototype.hasOwnProperty.call(cluster.status?.reserved ?? {}, instanceId),
  );
}

/** The plan's requests the resource-aware scheduler reads (`context.requests`); undefined when it has none. */
export function planRequests(plan: SFPlan | undefined): ResourceListInput | undefined {
  const requests = plan?.spec.context?.requests;
  return requests && typeof requests === 'object' && !Array.isArray(requests)
    ? (requests as ResourceListInput)
    : undefined;
}

/** The label selector a rendered `clusterSelector` template describes: its text, or none. */
export function selectorText(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() || undefined;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Reads what schedulers remember, with the resourceVersion to write it back with. */
async function readSchedulerState(
  master: ClusterClient,
  namespace: string,
): Promise<{ lastClusterId?: string; resourceVersion?: string }> {
  try {
    const cm = await master.core.readNamespacedConfigMap({ name: SCHEDULER_STATE_CONFIGMAP, namespace });
    const last = cm.data?.lastClusterId;
    return { ...(last ? { lastClusterId: last } : {}), resourceVersion: cm.metadata!.resourceVersion! };
  } catch (err) {
    if (isNotFound(err)) return {};
    throw err;
  }
}

/** Writes the round robin's last choice; false when another placement wrote it first. */
async function writeSchedulerState(
  master: ClusterClient,
  namespace: string,
  resourceVersion: string | undefined,
  lastClusterId: string,
): Promise<boolean> {
  const body: V1ConfigMap = {
    metadata: {
      name: SCHEDULER_STATE_CONFIGMAP,
      namespace,
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    data: { lastClusterId },
  };
  try {
    if (resourceVersion)
      await master.core.replaceNamespacedConfigMap({ name: SCHEDULER_STATE_CONFIGMAP, namespace, body });
    else await master.core.createNamespacedConfigMap({ namespace, body });
    return true;
  } catch (err) {
    if (isConflict(err) || isAlreadyExists(err)) return false;
    throw err;
  }
}

/** A pause before deciding again after losing a race to another writer of the clusters. */
const jitter = () => new Promise((resolve) => setTimeout(resolve, Math.random() * CONFLICT_JITTER_MS));

/** What an instance placed on a cluster books there. */
export interface Booking {
  readonly clusterId: string;
  readonly instanceId: string;
  /** Its plan's `context.requests`. */
  readonly requests: ResourceListInput;
  /**
   * The plan's name when a reservation that grows must fit the cluster's free capacity (the
   * resource-aware scheduler); absent when it is written whatever the cluster has free.
   */
  readonly mustFit?: string;
}

/**
 * Books an instance on its cluster: its reservation there becomes its plan's requests (nothing is
 * written when it holds them already, so running it twice changes nothing). With `mustFit`, a
 * reservation that grows must fit in what the cluster has free, the instance's own reservation
 * counted as free: else a terminal failure says what is short, and the reservation stays as it
 * was. A cluster no longer registered books nothing.
 */
export async function bookPlacement(
  master: ClusterClient,
  namespace: string,
  booking: Booking,
): Promise<void> {
  const { clusterId, instanceId, requests, mustFit } = booking;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const cluster = await getRecord<SFCluster>(master, SFCLUSTER, namespace, clusterId);
    if (!cluster) return;
    let change;
    try {
      change = reservationChange(cluster.status?.reserved, instanceId, requests);
    } catch (err) {
      throw terminal(messageOf(err), FAILURE_TYPES.plan);
    }
    if (change.kind === 'none') return;
    if (mustFit !== undefined && change.kind === 'grows') {
      const others: SFCluster = {
        ...cluster,
        status: { ...cluster.status, reserved: unreserve(cluster.status?.reserved, instanceId) },
      };
      const snapshot = clusterSnapshot(others);
      let short: string | undefined;
      try {
        short = shortfall(snapshot, parseResourceList(requests, "the plan's context.requests"));
      } catch (err) {
        throw terminal(`resource-aware: ${messageOf(err)}`, NO_ELIGIBLE_CLUSTER);
      }
      if (snapshot.problem)
        throw terminal(`resource-aware: cluster ${clusterId}: ${snapshot.problem}`, NO_ELIGIBLE_CLUSTER);
      if (short)
        throw terminal(
          `resource-aware: plan ${mustFit} does not fit on cluster ${clusterId}, where the instance is placed: ${short}`,
          NO_ELIGIBLE_CLUSTER,
        );
    }
    if (await writeReservations(master, cluster, { [instanceId]: change.patch })) return;
    await jitter();
  }
  throw retryable(`booking instance ${instanceId} on cluster ${clusterId}: the cluster keeps changing`);
}

/**
 * What an instance of the plan books on its cluster; none under the `default` scheduler (which
 * reserves nothing) or for a plan the catalog no longer has (its reservation is left as it is).
 */
export function bookingOf(
  scheduling: SchedulingConfig | undefined,
  plan: SFPlan | undefined,
  instanceId: string,
  clusterId: string,
): Booking | undefined {
  if (!plan) return undefined;
  const scheduler = schedulerForPlan(scheduling ?? {}, plan.spec.id);
  if (scheduler === 'default') return undefined;
  return {
    clusterId,
    instanceId,
    requests: planRequests(plan) ?? {},
    ...(scheduler === 'resource-aware' ? { mustFit: plan.spec.name } : {}),
  };
}

/** The copy of an instance record on a sister cluster: the same name and namespace, no parameters. */
export function instanceCopy(record: SFServiceInstance, clusterId: string): KubeObject {
  const { spec } = record;
  const kept = {
    instanceId: spec.instanceId,
    serviceId: spec.serviceId,
    planId: spec.planId,
    clusterId,
    organizationGuid: spec.organizationGuid,
    spaceGuid: spec.spaceGuid,
    context: spec.context,
  };
  return {
    apiVersion: SFSERVICEINSTANCE.apiVersion,
    kind: SFSERVICEINSTANCE.kind,
    metadata: {
      name: record.metadata.name,
      namespace: record.metadata.namespace!,
      labels: { ...record.metadata.labels, [LABELS.clusterId]: labelValue(clusterId) },
    },
    spec: Object.fromEntries(Object.entries(kept).filter(([, v]) => v !== undefined)),
  };
}

/**
 * The copy of a binding record on its instance's sister cluster: the same name and namespace,
 * without the request's parameters, owned by the instance's copy there.
 */
export function bindingCopy(record: SFServiceBinding, instanceCopyThere: KubeObject): KubeObject {
  const { spec } = record;
  const kept = {
    id: spec.id,
    instanceId: spec.instanceId,
    serviceId: spec.serviceId,
    planId: spec.planId,
    bindResource: spec.bindResource,
    context: spec.context,
  };
  return {
    apiVersion: SFSERVICEBINDING.apiVersion,
    kind: SFSERVICEBINDING.kind,
    metadata: {
      name: record.metadata.name,
      namespace: record.metadata.namespace!,
      labels: { ...record.metadata.labels },
      ownerReferences: [ownerReferenceTo(instanceCopyThere)],
    },
    spec: Object.fromEntries(Object.entries(kept).filter(([, v]) => v !== undefined)),
  };
}

/** Deletes an object of a sister cluster; gone already means done. */
export async function deleteCopy(cluster: ClusterClient, obj: KubeObject): Promise<void> {
  await deleteObject(cluster, {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
    namespace: obj.metadata.namespace!,
  });
}

export function placementActivities({
  clusters,
  catalog,
  renderer,
  scheduling,
  records: given,
}: ActivityDeps) {
  const master = clusters.master;
  const records = given ?? recordsOnMaster(master);
  const namespace = clusters.namespace;

  /** The plan's `clusterSelector` rendered with the instance's data; undefined when the plan has none. */
  async function clusterSelectorOf(record: SFServiceInstance, plan: SFPlan): Promise<string | undefined> {
    const template = findTemplate(plan, 'clusterSelector');
    if (!template) return undefined;
    const service = catalog.service(plan.spec.serviceId);
    try {
      const value = await renderer.renderValues(template, 'clusterSelector', {
        instance: forTemplate(record),
        plan: forTemplate(plan),
        ...(service ? { service: forTemplate(service) } : {}),
      });
      return selectorText(value);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if ((err as { reason?: unknown }).reason === 'unavailable')
        throw retryable(
          `The clusterSelector template of plan ${plan.spec.name} could not be rendered now: ${message}`,
        );
      throw terminal(
        `The clusterSelector template of plan ${plan.spec.name} failed: ${message}`,
        FAILURE_TYPES.template,
      );
    }
  }

  /**
   * Decides where the instance goes and reserves its requests there, deciding again whenever
   * another placement changed the clusters (or the round robin's turn) meanwhile.
   */
  async function decide(
    scheduler: SchedulerName,
    request: PlacementRequest,
  ): Promise<{ clusterId: string; summary: string }> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const registered = await listClusters(master, namespace);
      const held = reservedOn(registered, request.instanceId);
      if (held)
        return { clusterId: held.metadata.name, summary: `kept ${held.metadata.name}: reserved before` };
      const state = scheduler === 'round-robin' ? await readSchedulerState(master, namespace) : {};
      const decision: Decision = schedule({
        scheduler,
        clusters: snapshotsOf(registered, request.instanceId),
        request,
        state: state.lastClusterId ? { lastClusterId: state.lastClusterId } : {},
        options: { masterClusterId: clusters.masterId },
      });
      const summary = trimSummary(`${decision.scheduler}: ${decision.summary}`);
      if (!decision.clusterId) throw terminal(summary, NO_ELIGIBLE_CLUSTER);
      const chosen = registered.find((c) => c.metadata.name === decision.clusterId)!;
      const turnTaken =
        scheduler !== 'round-robin' ||
        (await writeSchedulerState(master, namespace, state.resourceVersion, chosen.metadata.name));
      const reservations = reserve(chosen.status?.reserved, request.instanceId, request.requests ?? {});
      if (
        turnTaken &&
        (await writeReservations(master, chosen, { [request.instanceId]: reservations[request.instanceId] }))
      )
        return { clusterId: chosen.metadata.name, summary };
      // Another placement wrote first: decide again on what it left, a moment apart from the others.
      await jitter();
    }
    throw retryable(`placing instance ${request.instanceId}: the clusters keep changing; trying again`);
  }

  return {
    /**
     * Places the instance on a cluster (once; later operations keep it there) and says where and
     * why. The landscape's scheduler (or the plan's) decides over the registered clusters;
     * `default` places every instance on the master without reading the registry. The decision
     * and its reasons are kept in the record's placement annotation and in the step's result. No
     * eligible cluster fails the operation with the reasons. An instance placed before is booked
     * again on its cluster with its plan's requests now (see {@link bookPlacement}).
     */
    async scheduleInstance(ref: InstanceRef): Promise<Placement> {
      const kept = async (clusterId: string, record?: SFServiceInstance): Promise<Placement> => {
        const taskQueue = await clusters.taskQueueOf(clusterId);
        return {
          clusterId,
          reasons:
            record?.metadata.annotations?.[ANNOTATIONS.placement] ?? `kept ${clusterId}: placed before`,
          ...(taskQueue ? { taskQueue } : {}),
        };
      };
      const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
      if (!record) {
        if (ref.clusterId) return kept(ref.clusterId);
        throw retryable(`instance ${ref.instanceId} has no record`);
      }
      const plan = catalog.plan(record.spec.planId);
      const placedOn = ref.clusterId ?? record.spec.clusterId;
      if (placedOn) {
        const booking = bookingOf(scheduling, plan, ref.instanceId, placedOn);
        if (booking) await bookPlacement(master, namespace, booking);
        return kept(placedOn, ref.clusterId ? undefined : record);
      }
      const scheduler = schedulerForPlan(scheduling ?? {}, record.spec.planId);
      let placed = {
        clusterId: clusters.masterId,
        summary: `default: chose ${clusters.masterId}: the master`,
      };
      if (scheduler !== 'default') {
        const clusterSelector = plan ? await clusterSelectorOf(record, plan) : undefined;
        const requests = planRequests(plan);
        placed = await decide(scheduler, {
          instanceId: ref.instanceId,
          planId: record.spec.planId,
          ...(clusterSelector ? { clusterSelector } : {}),
          ...(requests ? { requests } : {}),
        });
      }
      const { clusterId, summary } = placed;
      try {
        await patchRecord(master, SFSERVICEINSTANCE, ref.namespace, ref.name, {
          metadata: {
            labels: { [LABELS.clusterId]: labelValue(clusterId) },
            annotations: { [ANNOTATIONS.placement]: summary },
          },
          spec: { clusterId },
        });
      } catch (err) {
        if (isNotFound(err)) throw retryable(`instance ${ref.instanceId} has no record`);
        throw err;
      }
      const taskQueue = await clusters.taskQueueOf(clusterId);
      return { clusterId, reasons: summary, ...(taskQueue ? { taskQueue } : {}) };
    },

    /**
     * Makes the instance record present on its cluster: on a sister, a copy of it (same name and
     * namespace, the namespace made there, without the request's parameters), which owns the
     * operator's resources there. The master already holds the record.
     */
    async replicateInstance(ref: InstanceRef, clusterId: string): Promise<void> {
      if (clusterId === clusters.masterId) return;
      const record = await records.instance(ref.namespace, ref.name);
      if (!record) throw retryable(`instance ${ref.instanceId} has no record`);
      try {
        const sister = await clusters.get(clusterId);
        await namespaceReady(sister, ref.namespace);
        await applyObject(sister, instanceCopy(record, clusterId), FIELD_MANAGER);
      } catch (err) {
        // A namespace still being deleted there is no failure to reach the cluster.
        if (err instanceof Error && /still being deleted/.test(err.message)) throw err;
        throw clusterFailure(clusterId, err);
      }
    },
  };
}
