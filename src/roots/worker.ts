/**
 * The worker: runs the operation workflows and their activities from the task queue. Scale it
 * horizontally. A worker started for one cluster alone runs only the steps on that cluster, from
 * the task queue its SFCluster names, with that cluster's own credentials.
 */
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import {
  clusterActivities,
  clusterSideActivities,
  evacuationActivities,
  leftoverActivities,
  createActivities,
  dryRunActivities,
  rolloutActivities,
  drainActivities,
  rotationScheduleActivities,
} from '../activities/index.js';
import { operationSinks, stepRetries, timedRenderer } from '../activities/metrics.js';
import {
  followedReferences,
  followRecorded,
  type FollowedReferences,
} from '../controllers/followed-references.js';
import { statusWakeups } from '../controllers/status-wakeups.js';
import { recordStates } from '../controllers/record-states.js';
import { placedInstances } from '../controllers/placed-instances.js';
import type { RecordStateRecorder } from '../metrics/recorders.js';
import { PLAN_CHANGE, startRollout } from '../broker/plan-revisions.js';
import { planRollouts } from '../controllers/plan-rollouts.js';
import { rolloutWorkflowId } from '../admin/contract.js';
import type { ActivityDeps } from '../activities/deps.js';
import type { Config, WorkerVersioning } from '../config.js';
import { clusterClientFromFile, type ClusterClient } from '../kube/clients.js';
import { keepingAcrossSteps, runRecords } from '../activities/run-records.js';
import { getRecord, hearingCustomWrites, patchRecordStatus } from '../kube/custom-objects.js';
import { isNotFound } from '../kube/errors.js';
import { SFCLUSTER, SFPLAN, type SFCluster } from '../resources/types.js';
import { dropBoxNamespace } from '../resources/names.js';
import { startCatalogCache } from '../kube/catalog-cache.js';
import { clusterDirectory } from '../kube/cluster-directory.js';
import type { Logger } from '../log.js';
import type { workerMetrics } from '../metrics/prometheus.js';
import type { OperationRecorder } from '../metrics/recorders.js';
import type { Tracing } from '../tracing.js';
import { closeRenderer, renderObjects, renderValues } from '../templates/index.js';
import { connectClient, connectionOptions, dataConverter } from '../temporal/connection.js';
import { latestRun } from '../temporal/runs.js';
import { workflowBundle } from './workflow-bundle.js';
import type { clusterHealthWorkflow } from '../workflows/cluster-health.js';
import type { secretRotationScheduleWorkflow } from '../workflows/secret-rotation.js';
import {
  CLUSTER_HEALTH_SETTINGS_SIGNAL,
  MEMO_KEY,
  OPERATOR_CHANGED_SIGNAL,
  ROLLOUT_MEMO_KEY,
  ROTATION_SCHEDULE_SETTINGS_SIGNAL,
  clusterHealthWorkflowId,
  rotationScheduleWorkflowId,
  type ClusterHealthSettings,
  type OperationStatus,
  type RotationScheduleSettings,
} from '../workflows/messages.js';

export interface RunningWorker {
  /** The task queue it polls. */
  readonly taskQueue: string;
  /** Resolves when the worker has stopped. */
  readonly done: Promise<void>;
  shutdown(): Promise<void>;
}

/** Where the worker's metrics go and how its readiness is told (see monitoring.ts). */
export interface WorkerMonitoring {
  readonly worker?: ReturnType<typeof workerMetrics>;
  readonly recordStates?: RecordStateRecorder;
  readiness(check: () => boolean): void;
}

/**
 * Starts the worker. With `monitoring`, it reports its operations, steps, renderings, Kubernetes
 * calls and cluster health there, and is ready while it polls its task queue: not before, and no
 * longer once it starts draining. With `tracing`, each workflow and activity is a span of its
 * request's trace.
 */
export async function startWorker(
  config: Config,
  masterClient: ClusterClient,
  log: Logger,
  monitoring?: WorkerMonitoring,
  tracing?: Tracing,
): Promise<RunningWorker> {
  const metrics = monitoring?.worker;
  // What an operation's steps read of its records is kept for its next steps, until written again.
  const kept = runRecords();
  const master = hearingCustomWrites(masterClient, (write) => kept.written(write));
  const connection = await NativeConnection.connect(connectionOptions(config.temporal));
  // The workers keep the plans' revisions and start the rollouts of the plans that change.
  const temporal = await connectClient(config.temporal);
  const revisions = planRollouts({
    writeStatus: async (plan, status) => {
      try {
        await patchRecordStatus(master, SFPLAN, plan.metadata.namespace!, plan.metadata.name, status);
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    },
    startRollout: (plan, revision) =>
      startRollout(
        temporal.client,
        { namespace: config.namespace, taskQueue: config.temporal.taskQueue },
        { planId: plan.spec.id, revision, requestedBy: PLAN_CHANGE },
      ),
    latestRollout: async (plan) => {
      const run = await latestRun(
        temporal.client,
        rolloutWorkflowId(config.namespace, plan.spec.id),
        ROLLOUT_MEMO_KEY,
      );
      return (run?.memo as { revision?: string } | undefined)?.revision;
    },
    onDone: (plan, work, started) =>
      log.info(started ? 'plan rollout started' : 'plan revision recorded', {
        planId: plan.spec.id,
        revision: work.rollout ?? work.record?.specHash,
        previous: plan.status?.specHash,
        autoUpdateInstances: plan.spec.autoUpdateInstances ?? false,
      }),
    onError: (err, what) => log.warn(`plan revisions: ${what} failed`, { error: String(err) }),
  });
  const catalog = await startCatalogCache(
    master,
    config.namespace,
    (err) => log.warn('catalog watch failed; restarting', { error: String(err) }),
    (plan) => revisions.heard(plan),
  );
  const clusters = clusterDirectory(master, config.namespace, {
    masterId: config.masterClusterId,
    ...(metrics ? { clients: { calls: metrics } } : {}),
  });
  const renderer = { renderObjects, renderValues };
  const wakeups = statusWakeups({
    wake: ({ workflowId, runId }) =>
      temporal.client.workflow
        .getHandle(workflowId, runId)
        .signal(OPERATOR_CHANGED_SIGNAL)
        // An operation that ended meanwhile has nothing to wake.
        .catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }),
    onError: (err, what) => log.warn(`status wake-ups: ${what} failed`, { error: String(err) }),
    ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
  });
  const runs = {
    latest: async (workflowId: string) => {
      const run = await latestRun(temporal.client, workflowId, MEMO_KEY);
      return run && { ...run, memo: run.memo as OperationStatus | undefined };
    },
  };
  const states =
    monitoring?.recordStates &&
    recordStates({
      master,
      recorder: monitoring.recordStates,
      ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
      onError: (err, what) => log.warn(`record states: ${what} failed`, { error: String(err) }),
    });
  // The health rounds read the instances placed on each cluster from a watch, not a list each round.
  const placed =
    config.clusterHealth.probeSeconds > 0
      ? placedInstances({
          master,
          ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
          onError: (err, what) => log.warn(`placed instances: ${what} failed`, { error: String(err) }),
        })
      : undefined;
  let followed: FollowedReferences | undefined;
  const deps = {
    clusters,
    catalog,
    renderer: metrics ? timedRenderer(renderer, metrics) : renderer,
    ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
    scheduling: config.scheduling,
    operationTimeoutSeconds: config.operationTimeoutSeconds,
    statusWakeups: wakeups,
    followedReferences: { follow: (...args) => followed?.follow(...args) },
    runRecords: kept,
  } satisfies ActivityDeps;
  if (config.followReferences) {
    followed = followedReferences({
      cluster: (id) => clusters.get(id),
      startRollout: async (request) => {
        await startRollout(
          temporal.client,
          { namespace: config.namespace, taskQueue: config.temporal.taskQueue },
          request,
        );
        log.info('rollout of a change of an object the instances’ references read started', {
          planId: request.planId,
          reference: request.reference,
          revision: request.revision,
        });
      },
      onError: (err, what) => log.warn(`followed references: ${what} failed`, { error: String(err) }),
    });
    // Learnt in the background: the worker polls meanwhile, and each apply tells of its own.
    const ours = (planId: string) => catalog.plan(planId) !== undefined;
    void followRecorded(master, config.instanceNamespace, clusters.masterId, followed, ours).catch(
      (err: unknown) => log.warn('followed references: reading the instances failed', { error: String(err) }),
    );
  }
  const activities = {
    ...keepingAcrossSteps(createActivities(deps), kept),
    ...rolloutActivities(deps, runs),
    ...drainActivities(deps, runs),
    ...dryRunActivities(deps),
    ...rotationScheduleActivities(deps, runs),
    ...evacuationActivities(deps, runs),
  };
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    workflowBundle: config.worker.workflowBundle
      ? { codePath: config.worker.workflowBundle }
      : workflowBundle(tracing !== undefined),
    ...versioned(config.worker.versioning),
    activities: {
      ...activities,
      ...clusterActivities({
        clusters,
        ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
        ...(metrics ? { health: metrics } : {}),
        ...(placed ? { placedInstances: placed } : {}),
      }),
      ...leftoverActivities({
        clusters,
        ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
      }),
    },
    ...observed(metrics, tracing, 'workflows and steps'),
    maxConcurrentWorkflowTaskExecutions: config.worker.concurrentOperations,
    maxConcurrentLocalActivityExecutions: config.worker.concurrentSteps,
    maxConcurrentActivityTaskExecutions: config.worker.concurrentSteps,
    dataConverter: dataConverter(config.temporal),
  });
  if (config.clusterHealth.probeSeconds > 0) await startClusterHealth(config, log);
  if (config.secretRotationCheckSeconds > 0) await startRotationSchedule(config, log);
  monitoring?.readiness(() => worker.getState() === 'RUNNING');
  const done = worker.run().finally(async () => {
    wakeups.stop();
    followed?.stop();
    states?.stop();
    placed?.stop();
    revisions.stop();
    await catalog.stop();
    await temporal.close();
    await closeRenderer();
    await connection.close();
  });
  return {
    taskQueue: config.temporal.taskQueue,
    done,
    shutdown: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

/**
 * Starts a worker for one cluster alone (`config.cluster`): it reaches that cluster with its own
 * credentials, and polls the task queue the cluster's SFCluster names, where the operation
 * workflows send the steps on that cluster and its health probe. It runs no workflows. Of the
 * master (`master`), it needs an identity that reads the catalog and its own SFCluster, writes that
 * SFCluster's status, and writes Secrets in its drop box (resources/names.ts `dropBoxNamespace`),
 * where it leaves the bind responses: its steps are given the instance and binding records and
 * answer what to write there (activities/cluster-steps.ts), so it never reads them.
 */
export async function startClusterWorker(
  config: Config & { readonly cluster: NonNullable<Config['cluster']> },
  master: ClusterClient,
  log: Logger,
  monitoring?: WorkerMonitoring,
  tracing?: Tracing,
): Promise<RunningWorker> {
  const metrics = monitoring?.worker;
  const { id, kubeconfig } = config.cluster;
  const registered = await getRecord<SFCluster>(master, SFCLUSTER, config.namespace, id);
  if (!registered)
    throw new Error(`INTEROP_CLUSTER_ID: no SFCluster ${config.namespace}/${id} is registered in the master`);
  const taskQueue = registered.spec.taskQueue;
  if (!taskQueue)
    throw new Error(
      `SFCluster ${config.namespace}/${id} has no spec.taskQueue: set it to the task queue this worker is to poll`,
    );
  const connection = await NativeConnection.connect(connectionOptions(config.temporal));
  const catalog = await startCatalogCache(master, config.namespace, (err) =>
    log.warn('catalog watch failed; restarting', { error: String(err) }),
  );
  const clusters = clusterDirectory(master, config.namespace, {
    masterId: config.masterClusterId,
    // Its own records alone, as every list of this installation's shows (the copies on its cluster too).
    local: clusterClientFromFile(id, kubeconfig, { owner: config.namespace }),
    ...(metrics ? { clients: { calls: metrics } } : {}),
  });
  const renderer = { renderObjects, renderValues };
  const instanceNamespace = config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {};
  const dropBox = { client: master, namespace: dropBoxNamespace(config.namespace, id) };
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    activities: {
      ...clusterSideActivities(
        {
          clusters,
          catalog,
          renderer: metrics ? timedRenderer(renderer, metrics) : renderer,
          ...instanceNamespace,
        },
        dropBox,
        createActivities,
      ),
      ...clusterActivities({
        clusters,
        ...instanceNamespace,
        ...(metrics ? { health: metrics } : {}),
        // The copies of the instances' records on the cluster, which it reads: not the records on the master.
        instancesCounted: 'on the cluster',
      }),
      ...leftoverActivities({ clusters, ...instanceNamespace }),
    },
    // Its steps are counted and continue the trace of the workflow that sent them (it runs no workflows).
    ...observed(metrics, tracing, 'steps'),
    maxConcurrentActivityTaskExecutions: config.worker.concurrentSteps,
    dataConverter: dataConverter(config.temporal),
  });
  monitoring?.readiness(() => worker.getState() === 'RUNNING');
  const done = worker.run().finally(async () => {
    await catalog.stop();
    await closeRenderer();
    await connection.close();
  });
  return {
    taskQueue,
    done,
    shutdown: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

/**
 * The interceptors and sinks a worker is observed through: its metrics (operations that end, step
 * retries) and its traces (a span per workflow and activity), for what it runs. A worker of the
 * workflows always gives the sink of operation endings, which its bundle's interceptor calls: it
 * drops them when the worker has no metrics.
 */
function observed(
  metrics: WorkerMonitoring['worker'],
  tracing: Tracing | undefined,
  runs: 'workflows and steps' | 'steps',
): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  const workflows = runs === 'workflows and steps';
  const activity = [
    ...(metrics ? [stepRetries(metrics)] : []),
    ...(tracing?.worker.interceptors.activity ?? []),
  ];
  const sinks = workflows
    ? { ...operationSinks(metrics ?? UNRECORDED), ...(tracing?.worker.sinks ?? {}) }
    : {};
  return {
    ...(activity.length > 0 ? { interceptors: { activity } } : {}),
    ...(Object.keys(sinks).length > 0 ? { sinks } : {}),
  };
}

/**
 * The worker deployment version the worker polls as, when it has one: an operation stays on the
 * version it started on (the default, PINNED), and the long-lived workflows declare themselves
 * AUTO_UPGRADE (src/workflows/versioning.ts).
 */
export function versioned(
  versioning: WorkerVersioning | undefined,
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!versioning) return {};
  return {
    workerDeploymentOptions: {
      version: { deploymentName: versioning.deploymentName, buildId: versioning.buildId },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    },
  };
}

/** What a worker without metrics records: nothing. */
const UNRECORDED: OperationRecorder = {
  operationFinished: () => undefined,
  stepRetried: () => undefined,
  templateRendered: () => undefined,
};

/**
 * Starts the landscape's rotation schedule of generated secrets unless it runs already, and gives
 * it the current settings either way: one workflow id per registry namespace, so there are never two.
 */
async function startRotationSchedule(config: Config, log: Logger): Promise<void> {
  const settings: RotationScheduleSettings = { checkSeconds: config.secretRotationCheckSeconds };
  const workflowId = rotationScheduleWorkflowId(config.namespace);
  const { client, close } = await connectClient(config.temporal);
  try {
    await client.workflow.signalWithStart<typeof secretRotationScheduleWorkflow, [RotationScheduleSettings]>(
      'secretRotationScheduleWorkflow',
      {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [settings],
        signal: ROTATION_SCHEDULE_SETTINGS_SIGNAL,
        signalArgs: [settings],
      },
    );
    log.info('secret rotation schedule running', { workflowId, ...settings });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  } finally {
    await close();
  }
}

/**
 * Starts the landscape's cluster health workflow unless it runs already, and gives it the current
 * settings either way: one workflow id per registry namespace, so there are never two.
 */
async function startClusterHealth(config: Config, log: Logger): Promise<void> {
  const settings: ClusterHealthSettings = {
    probeSeconds: config.clusterHealth.probeSeconds,
    offlineSeconds: config.clusterHealth.offlineSeconds,
    stabilizationSeconds: config.clusterHealth.stabilizationSeconds,
    evacuateAfterSeconds: config.clusterHealth.evacuateAfterSeconds,
    evacuationConcurrency: config.clusterHealth.evacuationConcurrency,
  };
  const workflowId = clusterHealthWorkflowId(config.namespace);
  const { client, close } = await connectClient(config.temporal);
  try {
    await client.workflow.signalWithStart<typeof clusterHealthWorkflow, [ClusterHealthSettings]>(
      'clusterHealthWorkflow',
      {
        workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [settings],
        signal: CLUSTER_HEALTH_SETTINGS_SIGNAL,
        signalArgs: [settings],
      },
    );
    log.info('cluster health workflow running', { workflowId, ...settings });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  } finally {
    await close();
  }
}
