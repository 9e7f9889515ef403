/**
 * Starting a plan's rollout. A plan's revision is a digest of its spec, kept in its
 * `status.specHash`; the workers write it whenever the spec changes, and start the rollout of a
 * plan with `autoUpdateInstances` (src/controllers/plan-rollouts.ts); an admin starts one through
 * the admin API. Either way it is signal-with-start: one rollout workflow per plan, so two changes
 * in a row never start two rollouts, and starting the same revision again only tells the running
 * rollout what it knows.
 */
import type { Client } from '@temporalio/client';
import { rolloutWorkflowIdOf, type RolloutRequest } from '../admin/contract.js';
import type { rolloutWorkflow } from '../workflows/rollout.js';
import { ROLLOUT_MESSAGES } from '../workflows/messages.js';
import { rolloutSearchAttributes } from '../workflows/search-attributes.js';

/** Who asks for the rollouts a plan change starts. */
export const PLAN_CHANGE = 'plan change';

/**
 * Starts the rollout towards `request.revision` (of the plan, or with `request.reference` of the
 * change of a referenced object), or tells the running one about it.
 */
export async function startRollout(
  client: Client,
  where: { readonly namespace: string; readonly taskQueue: string },
  request: RolloutRequest,
): Promise<void> {
  await client.workflow.signalWithStart<typeof rolloutWorkflow, [RolloutRequest]>('rolloutWorkflow', {
    workflowId: rolloutWorkflowIdOf(where.namespace, request),
    taskQueue: where.taskQueue,
    args: [request],
    signal: ROLLOUT_MESSAGES.revision,
    signalArgs: [request],
    typedSearchAttributes: rolloutSearchAttributes(request),
  });
}
