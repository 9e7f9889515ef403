/**
 * How the workflows cross a new version of the workers, when the workers run with Worker Versioning
 * (INTEROP_WORKER_BUILD_ID; docs/operations.md, "Upgrading workers"). An operation (provision,
 * update, deprovision, bind, unbind, action, secret rotation, dry run) is pinned, the workers'
 * default: it ends on the version it started on, so its code never changes under it. The long-lived
 * workflows, which never end, move to the current version at their next task: their code must
 * replay the history of their current run, which stays short as they continue as new.
 */
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import type { WorkerDeploymentVersion, WorkflowDefinitionOptions } from '@temporalio/common';

/**
 * The options of a long-lived workflow whose run began (or, replayed, was begun) by a worker of
 * `version`: it moves to the current version. An unversioned worker (no version, or one without a
 * deployment name: its build id alone) may declare no behaviour: the server refuses its tasks.
 */
export function longLivedOptions(version: WorkerDeploymentVersion | undefined): WorkflowDefinitionOptions {
  return version?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' } : {};
}

/** Marks a long-lived workflow: it moves to the workers' current version at its next task. */
export function movesToCurrentVersion<A extends unknown[], R>(workflow: (...args: A) => Promise<R>): void {
  setWorkflowOptions(() => longLivedOptions(workflowInfo().currentDeploymentVersion), workflow);
}
