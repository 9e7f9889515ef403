/**
 * The evacuation of a lost cluster: which of the instances placed there are rebuilt elsewhere
 * next. Only those of plans that allow it (`migrate.evacuate`), at most a number in flight at
 * once, each claimed against its bindings' operations as a move started by an admin is. The
 * rebuild is the move workflow with `sourceLost` (src/workflows/move.ts).
 */
import { forEachRecord } from '../kube/custom-objects.js';
import { InstanceClaims, type ClaimDeps } from '../kube/operation-claims.js';
import { OsbError } from '../osb/errors.js';
import { MOVE_OPERATION, migrationOf } from '../resources/migration.js';
import { LABELS, instanceWorkflowId, labelValue } from '../resources/names.js';
import type { ClaimSide } from '../resources/operation-claims.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../resources/types.js';
import type { MoveRequest } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { BUSY_STATES, rolledOut } from './rollouts.js';

const MOVE: ClaimSide = { kind: 'instance', operation: MOVE_OPERATION };

/** A rebuild to start: the move's request under the instance's workflow id, and when it was claimed. */
export interface EvacuationMove {
  readonly workflowId: string;
  readonly request: MoveRequest;
  readonly claimedAt?: string;
}

/** What an evacuation round found on a lost cluster. */
export interface EvacuationRound {
  /** The rebuilds to start now. */
  readonly moves: readonly EvacuationMove[];
  /** Rebuilds already in flight. */
  readonly inFlight: number;
  /** Instances whose plan does not allow a rebuild elsewhere, or that have no backup to restore: they wait for the cluster. */
  readonly staying: number;
}

/** The request hash of an evacuation's moves: tells them from an admin's. */
export const evacuationRequestHash = (clusterId: string): string => `evacuation/${clusterId}`;

export function evacuationActivities(
  { clusters, catalog, instanceNamespace: shared, operationTimeoutSeconds }: ActivityDeps,
  runs: Pick<ClaimDeps, 'latest'>,
) {
  const master = clusters.master;
  const claims = new InstanceClaims({
    master,
    latest: runs.latest,
    ...(shared ? { instanceNamespace: shared } : {}),
  });

  return {
    /**
     * The next rebuilds of the lost cluster's instances, at most `concurrency` in flight with
     * those running: each of an instance not being deleted, whose provision did not fail, whose
     * plan allows it and that no operation holds, claimed for its move.
     */
    async evacuationMoves(clusterId: string, concurrency: number): Promise<EvacuationRound> {
      const candidates: SFServiceInstance[] = [];
      let inFlight = 0;
      let staying = 0;
      await forEachRecord<SFServiceInstance>(
        master,
        SFSERVICEINSTANCE,
        shared,
        `${LABELS.clusterId}=${labelValue(clusterId)}`,
        (record) => {
          if (!rolledOut(record) || (record.spec.clusterId ?? clusters.masterId) !== clusterId) return;
          // A record whose plan is not in this landscape's catalog is another landscape's on the same master.
          const plan = catalog.plan(record.spec.planId);
          if (!plan) return;
          const last = record.status?.lastAction;
          if (last?.operation === MOVE_OPERATION && last.state === 'in progress') {
            inFlight += 1;
            return;
          }
          const how = migrationOf(plan);
          // A plan that restores needs a backup to restore: without one the instance waits for its cluster.
          if (
            !('migration' in how) ||
            !how.migration.evacuate ||
            (how.migration.restore && !record.status?.lastBackup)
          ) {
            staying += 1;
            return;
          }
          if (!BUSY_STATES.has(record.status?.state ?? '')) candidates.push(record);
        },
      );
      const moves: EvacuationMove[] = [];
      for (const record of candidates.slice(0, Math.max(0, concurrency - inFlight))) {
        const instanceId = record.spec.instanceId!;
        const plan = catalog.plan(record.spec.planId);
        const request: MoveRequest = {
          instanceId,
          serviceId: record.spec.serviceId,
          planId: record.spec.planId,
          sourceLost: true,
          reason: `evacuation of lost cluster ${clusterId}`,
          requestHash: evacuationRequestHash(clusterId),
          deadlineSeconds: plan?.spec.maximum_polling_duration ?? operationTimeoutSeconds ?? 3600,
          requestedBy: { platform: 'interoperator', identity: { evacuation: clusterId } },
        };
        try {
          const claimedAt = await claims.claimAt(instanceId, MOVE, record);
          moves.push({
            workflowId: instanceWorkflowId(instanceId),
            request,
            ...(claimedAt ? { claimedAt } : {}),
          });
        } catch (err) {
          // A binding's operation holds it: the next round takes it.
          if (!(err instanceof OsbError && err.status === 422)) throw err;
        }
      }
      return { moves, inFlight, staying };
    },

    /** Takes back the claim of a rebuild that could not start (another operation started first). */
    async releaseEvacuationClaim(instanceId: string, claimedAt: string): Promise<void> {
      await claims.release(instanceId, MOVE, claimedAt);
    },
  };
}

export type EvacuationActivities = ReturnType<typeof evacuationActivities>;
