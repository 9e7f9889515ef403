/**
 * The baselines of the provision benchmark: a workflow that runs `count` activities that do
 * nothing, queued (the baseline the provision is measured against) or local (as the provision runs
 * its steps).
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

type Nothing = { nothing(): Promise<void> };
const queued = proxyActivities<Nothing>({ startToCloseTimeout: '1 minute' });
const local = proxyLocalActivities<Nothing>({ startToCloseTimeout: '1 minute' });

export async function trivialWorkflow(count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) await queued.nothing();
}

export async function trivialLocalWorkflow(count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) await local.nothing();
}
