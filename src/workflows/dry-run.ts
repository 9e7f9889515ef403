/**
 * The dry run of a plan change: one step on a worker, where the templates are rendered, over the
 * instances of one page. It changes nothing, so its step may run again freely; its few retries
 * cover a worker that stopped mid-way. The broker runs it and waits for its answer.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { DryRunInstances, DryRunResult } from '../admin/dry-run.js';
import type { DryRunActivities } from '../activities/dry-run.js';

const STEP_OPTIONS = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '10 s', maximumAttempts: 3 },
} as const;

const steps = proxyActivities<DryRunActivities>(STEP_OPTIONS);

export async function planDryRunWorkflow(request: DryRunInstances): Promise<DryRunResult> {
  return steps.dryRunPlanChange(request);
}
