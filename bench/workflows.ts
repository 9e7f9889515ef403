/** The baseline of the provision benchmark: a workflow that runs `count` activities that do nothing. */
import { proxyActivities } from '@temporalio/workflow';

const { nothing } = proxyActivities<{ nothing(): Promise<void> }>({ startToCloseTimeout: '1 minute' });

export async function trivialWorkflow(count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) await nothing();
}
