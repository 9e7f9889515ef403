/**
 * What Temporal tells of the latest run of a workflow id: whether it runs, when it started, and the
 * value its memo keeps under a key (decoded with the client's data converter).
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

export interface LatestRun {
  readonly running: boolean;
  /** When the run started (ms since the epoch, the Temporal server's clock). */
  readonly startedAt: number;
  readonly memo?: unknown;
}

/** The latest run of `workflowId`, or undefined when it has none. */
export async function latestRun(
  client: Client,
  workflowId: string,
  memoKey: string,
): Promise<LatestRun | undefined> {
  try {
    const info = await client.workflow.getHandle(workflowId).describe();
    const memo = info.memo?.[memoKey];
    return {
      running: info.status.name === 'RUNNING',
      startedAt: info.startTime.getTime(),
      ...(memo !== undefined ? { memo } : {}),
    };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}
