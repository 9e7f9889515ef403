/**
 * What the drain of a cluster reads and writes: the cluster cordoned (`spec.schedulingDisabled`),
 * the instances placed on it (those whose plan says they do not move apart, with why), the move
 * request that takes one of them off it (claimed for the move against its bindings' operations, as
 * a rollout's update is claimed), and the cluster's `Drained` condition. The move itself is the
 * ordinary move workflow, which the drain starts under the instance's workflow id.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { RolloutSettings } from '../admin/contract.js';
import { drainedCondition, type DrainCounts } from '../clusters/drain.js';
import {
  forEachRecord,
  getRecord,
  listRecords,
  patchRecord,
  patchRecordStatus,
} from '../kube/custom-objects.js';
import { InstanceClaims, type ClaimDeps } from '../kube/operation-claims.js';
import { OsbError } from '../osb/errors.js';
import { nextConditions } from '../resources/conditions.js';
import { MOVE_OPERATION, migrationOf } from '../resources/migration.js';
import {
  LABELS,
  instanceNamespace,
  instanceWorkflowId,
  labelValue,
  resourceName,
} from '../resources/names.js';
import type { ClaimSide } from '../resources/operation-claims.js';
import {
  SFCLUSTER,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFCluster,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import type { MoveRequest, RolloutTarget } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { keepOldest, rolledOut, rolloutSettingsOf, type InstancesBehind } from './rollouts.js';

/** States of a record whose operation has not ended. */
const BUSY_STATES = new Set(['in_queue', 'in progress', 'delete']);

/** The side of the instance/binding rule a drain's move is on. */
const MOVE: ClaimSide = { kind: 'instance', operation: MOVE_OPERATION };

/** The failure type of a drain of a cluster that is not registered. */
export const UNKNOWN_CLUSTER = 'UnknownCluster';

/** What a drain may do with one instance now: start its move (claimed at `claimedAt`), wait, or nothing. */
export type DrainMove =
  | { readonly request: MoveRequest; readonly workflowId: string; readonly claimedAt?: string }
  | { readonly busy: string }
  | { readonly gone: true };

/** The instances on a drained cluster: those a drain moves (as {@link InstancesBehind}), and those it cannot, with why. */
export interface InstancesOnCluster extends InstancesBehind {
  /** Per instance id, why it does not move (its plan says so). */
  readonly unmovable: Readonly<Record<string, string>>;
  /** Every instance record placed on the cluster, those being deleted or whose provision failed among them. */
  readonly left: number;
}

/** Why the drain of `clusterId` moves an instance: kept in its placement annotation. */
export const drainReason = (clusterId: string): string => `drain of cluster ${clusterId}`;

export function drainActivities(
  { clusters, catalog, instanceNamespace: shared, operationTimeoutSeconds }: ActivityDeps,
  runs: Pick<ClaimDeps, 'latest'>,
) {
  const { master, namespace } = clusters;
  const claims = new InstanceClaims({
    master,
    latest: runs.latest,
    ...(shared ? { instanceNamespace: shared } : {}),
  });
  const onCluster = (clusterId: string) => `${LABELS.clusterId}=${labelValue(clusterId)}`;

  return {
    /**
     * Cordons the cluster, so that no new instance is placed there, and says the drain's settings:
     * `overrides` over the defaults. The revision of a drain is the cluster's id.
     * @throws a non-retryable `UnknownCluster` failure when the cluster is not registered.
     */
    async startDrain(clusterId: string, overrides?: Partial<RolloutSettings>): Promise<RolloutTarget> {
      const cluster = await getRecord<SFCluster>(master, SFCLUSTER, namespace, clusterId);
      if (!cluster)
        throw ApplicationFailure.nonRetryable(`The cluster ${clusterId} is not registered.`, UNKNOWN_CLUSTER);
      if (!cluster.spec.schedulingDisabled)
        await patchRecord(master, SFCLUSTER, namespace, clusterId, { spec: { schedulingDisabled: true } });
      return { revision: clusterId, settings: rolloutSettingsOf(undefined, overrides) };
    },

    /**
     * The oldest `limit` of the instances placed on the cluster that the drain moves, leaving out
     * `skip`, and how many there are; those whose plan says they do not move, with why (not left
     * out by `skip`: the drain lists them once); and how many records are on the cluster at all.
     * Instances being deleted and those whose provision failed are not moved.
     */
    async firstInstancesOnCluster(
      clusterId: string,
      limit: number,
      skip: readonly string[],
    ): Promise<InstancesOnCluster> {
      const skipped = new Set(skip);
      const oldest: SFServiceInstance[] = [];
      const unmovable: Record<string, string> = {};
      let total = 0;
      let left = 0;
      await forEachRecord<SFServiceInstance>(
        master,
        SFSERVICEINSTANCE,
        shared,
        onCluster(clusterId),
        (record) => {
          // A record whose plan is not in this landscape's catalog is another landscape's on the
          // same master (a plan stays while an instance holds it).
          const plan = catalog.plan(record.spec.planId);
          if (!plan) return;
          left += 1;
          const id = record.spec.instanceId;
          if (!rolledOut(record) || !id || skipped.has(id)) return;
          const how = migrationOf(plan);
          if ('refusal' in how) {
            unmovable[id] = how.refusal;
            return;
          }
          total += 1;
          keepOldest(oldest, record, limit);
        },
      );
      return { first: oldest.map((r) => r.spec.instanceId!), total, unmovable, left };
    },

    /**
     * The moves of the instances off the cluster, read side by side: each instance that may move
     * now is claimed for the move, so an operation of its own or of a binding waits until the move
     * has run; one busy says with what; one gone, or no longer on the cluster, is gone.
     */
    async drainMoves(
      instanceIds: readonly string[],
      clusterId: string,
      requestedBy: string,
    ): Promise<[string, DrainMove][]> {
      const moveOf = async (instanceId: string): Promise<DrainMove> => {
        const ns = instanceNamespace(instanceId, shared);
        const record = await getRecord<SFServiceInstance>(
          master,
          SFSERVICEINSTANCE,
          ns,
          resourceName(instanceId),
        );
        if (!record || record.metadata.deletionTimestamp) return { gone: true };
        if ((record.spec.clusterId ?? clusters.masterId) !== clusterId) return { gone: true };
        const state = record.status?.state;
        if (state && BUSY_STATES.has(state))
          return { busy: `waiting for its ${record.status?.operation ?? 'operation'} to end` };
        const bindings = await listRecords<SFServiceBinding>(
          master,
          SFSERVICEBINDING,
          ns,
          `${LABELS.instanceId}=${labelValue(instanceId)}`,
        );
        const binding = bindings.find((b) => b.status?.state && BUSY_STATES.has(b.status.state));
        if (binding)
          return {
            busy: `waiting for the ${binding.status?.operation ?? 'operation'} of binding ${binding.spec.id} to end`,
          };
        const plan = catalog.plan(record.spec.planId);
        const request: MoveRequest = {
          instanceId,
          serviceId: record.spec.serviceId,
          planId: record.spec.planId,
          reason: drainReason(clusterId),
          requestHash: `drain/${clusterId}`,
          deadlineSeconds: plan?.spec.maximum_polling_duration ?? operationTimeoutSeconds ?? 3600,
          requestedBy: { platform: 'interoperator', identity: { user: requestedBy, drain: clusterId } },
        };
        const workflowId = instanceWorkflowId(instanceId);
        try {
          const claimedAt = await claims.claimAt(instanceId, MOVE, record);
          return { request, workflowId, ...(claimedAt ? { claimedAt } : {}) };
        } catch (err) {
          if (err instanceof OsbError && err.status === 422) return { busy: err.description };
          throw err;
        }
      };
      return Promise.all(instanceIds.map(async (id): Promise<[string, DrainMove]> => [id, await moveOf(id)]));
    },

    /** Takes back the claims of moves a drain read ahead but did not start. */
    async releaseDrainClaims(claimed: readonly { instanceId: string; claimedAt: string }[]): Promise<void> {
      await Promise.all(
        claimed.map(({ instanceId, claimedAt }) => claims.release(instanceId, MOVE, claimedAt)),
      );
    },

    /**
     * Writes the cluster's `Drained` condition for a drain standing as `progress` says, counting
     * the instance records still placed there; a cluster no longer registered is left alone.
     */
    async recordDrained(clusterId: string, progress: DrainCounts): Promise<void> {
      let left = 0;
      await forEachRecord<SFServiceInstance>(
        master,
        SFSERVICEINSTANCE,
        shared,
        onCluster(clusterId),
        (record) => {
          if (catalog.plan(record.spec.planId)) left += 1;
        },
      );
      const cluster = await getRecord<SFCluster>(master, SFCLUSTER, namespace, clusterId);
      if (!cluster) return;
      const conditions = nextConditions(cluster.status?.conditions, [drainedCondition(progress, left)], {
        now: new Date().toISOString(),
        ...(cluster.metadata.generation !== undefined ? { generation: cluster.metadata.generation } : {}),
      });
      // On the condition that the status is as read, so a health probe's write meanwhile is kept.
      await patchRecordStatus(
        master,
        SFCLUSTER,
        namespace,
        clusterId,
        { conditions },
        cluster.metadata.resourceVersion,
      );
    },
  };
}

export type DrainActivities = ReturnType<typeof drainActivities>;
