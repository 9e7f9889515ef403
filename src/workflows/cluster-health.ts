/**
 * The cluster health workflow: one per landscape (its id from the registry's namespace), started
 * by the worker when absent. Each round probes every registered cluster, onboards every sister that
 * answers (our CRDs installed there) and writes its SFCluster status, then copies the master's
 * catalog to every running sister that has our CRDs, so a sister that was offline
 * catches up when it answers again. It sleeps between the rounds and continues as new before its
 * history grows long. New settings arrive as a signal (the worker sends them when it starts).
 *
 * A cluster unreachable longer than the evacuation setting (off unless set) has the instances of
 * the plans that allow it rebuilt on other clusters, a few at a time: each a move workflow of its
 * own, started here and left to run. A sister that answers again after it was offline has what it
 * still holds of instances placed elsewhere meanwhile removed. A sister whose SFCluster is deleted
 * while instances are placed there is drained (the drain a `cluster drain` starts), and the deletion
 * finishes once the last of them has moved.
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  defineSignal,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { ClusterActivities, EvacuationActivities, LeftoverActivities } from '../activities/index.js';
import { MOVE_OPERATION } from '../resources/migration.js';
import type { RolloutProgress, RolloutRequest } from '../admin/contract.js';
import {
  CLUSTER_HEALTH_SETTINGS_SIGNAL,
  MOVE_WORKFLOW_TYPE,
  ROLLOUT_WORKFLOW_TYPE,
  type ClusterHealthReport,
  type ClusterHealthSettings,
  type MoveRequest,
  type OperationStatus,
  type RegisteredCluster,
} from './messages.js';
import { clusterWorkerSteps, type ClusterWorker } from './cluster-workers.js';
import { operationStartOptions } from './operation-start.js';
import { rolloutSearchAttributes } from './search-attributes.js';
import { movesToCurrentVersion } from './versioning.js';

/** New settings for the running workflow. */
export const clusterHealthSettingsSignal = defineSignal<[ClusterHealthSettings]>(
  CLUSTER_HEALTH_SETTINGS_SIGNAL,
);

/** Rounds in one run before it continues as new. */
const ROUNDS_PER_RUN = 100;

const STEP_OPTIONS = {
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '30 s',
  retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '10 s', maximumAttempts: 3 },
} as const;

const steps = proxyActivities<ClusterActivities & LeftoverActivities & EvacuationActivities>(STEP_OPTIONS);

/** Most rebuilds in flight per lost cluster unless the settings say. */
const EVACUATION_CONCURRENCY = 5;

/**
 * The steps of a cluster with a worker of its own, on that worker (cluster-workers.ts). One that
 * no worker takes within the probe's time counts as a probe that got no answer.
 */
const stepsThere = (worker: ClusterWorker, settings: ClusterHealthSettings) =>
  clusterWorkerSteps<ClusterActivities & LeftoverActivities>(worker, {
    ...STEP_OPTIONS,
    scheduleToCloseTimeout: Math.max(settings.probeSeconds, 30) * 1000,
  });

/**
 * Probes a cluster and records its health: a cluster with a worker of its own is probed by that
 * worker, and recorded as unreachable here when the worker does not answer.
 */
async function recordHealth(cluster: RegisteredCluster, settings: ClusterHealthSettings) {
  const offlineAfterMs = settings.offlineSeconds * 1000;
  const stabilizeAfterMs = (settings.stabilizationSeconds ?? 0) * 1000;
  if (!cluster.taskQueue)
    return steps.recordClusterHealth(cluster.clusterId, offlineAfterMs, undefined, stabilizeAfterMs);
  const askedAt = new Date().toISOString();
  try {
    return await stepsThere(
      { clusterId: cluster.clusterId, taskQueue: cluster.taskQueue },
      settings,
    ).recordClusterHealth(cluster.clusterId, offlineAfterMs, undefined, stabilizeAfterMs);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    // Unanswered since the probe was asked, not since its step gave up waiting for the worker.
    return steps.recordClusterHealth(
      cluster.clusterId,
      offlineAfterMs,
      `the worker of task queue ${cluster.taskQueue} did not answer`,
      stabilizeAfterMs,
      askedAt,
    );
  }
}

/**
 * Starts the next rebuilds of a lost cluster's instances elsewhere, each a move workflow under its
 * instance's workflow id, left to run on its own; one that finds another operation started first
 * gives its claim back, and the next round takes it again.
 */
async function evacuate(clusterId: string, settings: ClusterHealthSettings): Promise<void> {
  const round = await steps.evacuationMoves(
    clusterId,
    settings.evacuationConcurrency ?? EVACUATION_CONCURRENCY,
  );
  for (const { workflowId, request, claimedAt } of round.moves) {
    try {
      await startChild<(input: MoveRequest) => Promise<OperationStatus>>(MOVE_WORKFLOW_TYPE, {
        workflowId,
        args: [request],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        ...operationStartOptions(MOVE_OPERATION, request),
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      if (claimedAt) await steps.releaseEvacuationClaim(request.instanceId, claimedAt);
    }
  }
  if (round.moves.length > 0 || round.staying > 0)
    log.info('lost cluster evacuating', {
      clusterId,
      started: round.moves.length,
      inFlight: round.inFlight,
      staying: round.staying,
    });
}

/**
 * Drains a sister whose SFCluster is being deleted, with the drain's default settings, unless its
 * drain runs or ran already (an admin's, or one started in an earlier round): a drain that ended
 * blocked by instances that cannot move is not started again and again; its result stays on the
 * SFCluster (`Drained`), and an admin drains again once they can move.
 */
async function drainOffboarded(clusterId: string, workflowId: string): Promise<void> {
  const request: RolloutRequest = {
    revision: clusterId,
    drain: { clusterId },
    requestedBy: `the deletion of SFCluster ${clusterId}`,
  };
  try {
    await startChild<(req: RolloutRequest) => Promise<RolloutProgress>>(ROLLOUT_WORKFLOW_TYPE, {
      workflowId,
      args: [request],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: rolloutSearchAttributes(request),
    });
    log.info('deleted cluster draining', { clusterId });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** Marks the rounds in which the landscape decides what a cluster with a worker of its own holds left over. */
const LEFTOVERS_DECIDED_BY_THE_LANDSCAPE = 'leftovers-decided-by-the-landscape';

/**
 * Removes from a sister that answers again what it holds of instances that left it while it was
 * lost. On a cluster with a worker of its own, which reads no records on the master, that worker
 * lists the copies there, the landscape decides which are left over, and that worker removes them.
 */
async function removeLeftovers(cluster: RegisteredCluster, settings: ClusterHealthSettings): Promise<void> {
  const { clusterId, taskQueue } = cluster;
  if (!taskQueue) {
    await steps.removeLeftovers(clusterId);
    return;
  }
  const there = stepsThere({ clusterId, taskQueue }, settings);
  if (!patched(LEFTOVERS_DECIDED_BY_THE_LANDSCAPE)) {
    await there.removeLeftovers(clusterId);
    return;
  }
  const leftovers = await steps.leftoversAmong(clusterId, await there.instanceCopiesOn(clusterId));
  if (leftovers.length > 0) await there.removeInstanceCopies(clusterId, leftovers);
}

/** Whether the round rebuilds the cluster's instances elsewhere: unreachable past the evacuation setting. */
const lost = (report: ClusterHealthReport, settings: ClusterHealthSettings): boolean =>
  (settings.evacuateAfterSeconds ?? 0) > 0 &&
  report.phase === 'offline' &&
  (report.unansweredSeconds ?? 0) >= settings.evacuateAfterSeconds!;

/** One round: every cluster's health, then the catalog of every running sister. */
export async function clusterHealthRound(settings: ClusterHealthSettings): Promise<void> {
  const clusters = await steps.listRegisteredClusters();
  await Promise.all(
    clusters.map(async (cluster) => {
      const { clusterId, master, taskQueue } = cluster;
      try {
        const report = await recordHealth(cluster, settings);
        const there = taskQueue ? stepsThere({ clusterId, taskQueue }, settings) : steps;
        if (patched('cluster-evacuation')) {
          if (!master && report.returning) await removeLeftovers(cluster, settings);
          if (!master && lost(report, settings)) await evacuate(clusterId, settings);
        }
        if (!master && report.offboarding && patched('cluster-offboarding'))
          await drainOffboarded(clusterId, report.offboarding.drainWorkflowId);
        // The catalog's copies need our CRDs there: a sister not onboarded gets them once it is.
        if (!master && report.phase === 'running' && report.crdsInstalled !== false)
          await there.replicateCatalog(clusterId);
      } catch (err) {
        // The next round tries again; one cluster's failure does not hold up the others.
        log.warn('cluster health round failed for a cluster', { clusterId, error: String(err) });
      }
    }),
  );
}

export async function clusterHealthWorkflow(settings: ClusterHealthSettings): Promise<void> {
  let current = settings;
  let changed = false;
  setHandler(clusterHealthSettingsSignal, (next) => {
    current = next;
    changed = true;
  });
  for (let round = 0; round < ROUNDS_PER_RUN && !workflowInfo().continueAsNewSuggested; round++) {
    try {
      await clusterHealthRound(current);
    } catch (err) {
      log.warn('cluster health round failed', { error: String(err) });
    }
    changed = false;
    await condition(() => changed, current.probeSeconds * 1000);
  }
  await continueAsNew<typeof clusterHealthWorkflow>(current);
}

// Long-lived, continuing as new: it moves to the workers' current version (versioning.ts).
movesToCurrentVersion(clusterHealthWorkflow);
