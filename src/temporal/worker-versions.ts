/**
 * The worker deployment's versions, over Temporal's Worker Deployment API: which build is current,
 * making a build current or ramping it, and whether an old build's workers are still needed. Used
 * by `interoperator worker-version` (the chart's upgrade hook runs it) and by the tests.
 */
import os from 'node:os';
import { Connection } from '@temporalio/client';
import { connectionOptions, type TemporalSettings } from './connection.js';
import { deploymentSummary, type WorkerDeploymentSummary } from './worker-version-status.js';

/** The worker deployment the commands act on, and where its Temporal namespace is. */
export interface WorkerDeploymentTarget {
  readonly temporal: Pick<TemporalSettings, 'address' | 'namespace' | 'tls' | 'apiKey'>;
  readonly deploymentName: string;
}

/** What the commands do with a worker deployment. */
export interface WorkerVersions {
  /** The deployment's routing and builds; no version yet when the deployment is unknown. */
  describe(): Promise<WorkerDeploymentSummary>;
  /**
   * Sends every new workflow (and the long-lived ones) to `buildId`, or, with `rampPercent`, that
   * share of the new workflows. Waits up to `waitMs` for the build's workers to poll first.
   */
  promote(
    buildId: string,
    options: { readonly rampPercent?: number; readonly waitMs: number },
  ): Promise<void>;
  close(): Promise<void>;
}

/** gRPC codes of a version whose workers have not polled yet. */
const NOT_YET = new Set([5 /* NOT_FOUND */, 9 /* FAILED_PRECONDITION */]);

const RETRY_MS = 2_000;

/** Connects to the deployment's namespace. */
export async function connectWorkerVersions(target: WorkerDeploymentTarget): Promise<WorkerVersions> {
  const connection = await Connection.connect(connectionOptions(target.temporal));
  const service = connection.workflowService;
  const { namespace } = target.temporal;
  const { deploymentName } = target;
  const identity = `interoperator worker-version@${os.hostname()}`;
  return {
    describe: async () => {
      try {
        const answer = await service.describeWorkerDeployment({ namespace, deploymentName });
        return deploymentSummary(deploymentName, answer.workerDeploymentInfo ?? {});
      } catch (err) {
        if ((err as { code?: number }).code === 5) return { deploymentName, versions: [] };
        throw err;
      }
    },
    promote: async (buildId, { rampPercent, waitMs }) => {
      const deadline = Date.now() + waitMs;
      for (;;) {
        try {
          if (rampPercent === undefined)
            await service.setWorkerDeploymentCurrentVersion({ namespace, deploymentName, buildId, identity });
          else
            await service.setWorkerDeploymentRampingVersion({
              namespace,
              deploymentName,
              buildId,
              percentage: rampPercent,
              identity,
            });
          return;
        } catch (err) {
          const { code, details } = err as { code?: number; details?: string };
          if (!code || !NOT_YET.has(code) || Date.now() + RETRY_MS > deadline)
            throw new Error(
              `making ${deploymentName}.${buildId} ${rampPercent === undefined ? 'current' : `ramp to ${rampPercent}%`} failed: ${details ?? String(err)}`,
            );
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
    },
    close: () => connection.close(),
  };
}
