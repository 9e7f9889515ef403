/**
 * Plan revisions and the rollouts they start. A plan's revision is a digest of its spec, kept in
 * its `status.specHash`; the workers write it whenever the spec changes. When a plan with
 * `autoUpdateInstances` changes, its rollout workflow is told the new revision (signal-with-start:
 * one rollout workflow per plan, so two changes in a row never start two rollouts).
 */
import type { Client } from '@temporalio/client';
import { rolloutWorkflowIdOf, type RolloutRequest } from '../admin/contract.js';
import type { ClusterClient } from '../kube/clients.js';
import { patchRecordStatus } from '../kube/custom-objects.js';
import { isNotFound } from '../kube/errors.js';
import { planRevision } from '../resources/names.js';
import { SFPLAN, type SFPlan } from '../resources/types.js';
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

/**
 * Records the plan's revision when its spec changed, and starts its rollout when the plan has
 * `autoUpdateInstances` and had a revision before (a plan seen for the first time only gets one).
 * Every worker may do it for the same change: the status patch is idempotent and the rollout
 * ignores a revision it is already rolling out. Returns the revision when it changed.
 */
export async function recordPlanRevision(
  deps: {
    readonly master: ClusterClient;
    readonly client: Client;
    readonly namespace: string;
    readonly taskQueue: string;
  },
  plan: SFPlan,
): Promise<string | undefined> {
  const revision = planRevision(plan.spec);
  const recorded = plan.status?.specHash;
  if (recorded === revision || plan.metadata.deletionTimestamp) return undefined;
  try {
    await patchRecordStatus(deps.master, SFPLAN, plan.metadata.namespace!, plan.metadata.name, {
      specHash: revision,
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  if (recorded && plan.spec.autoUpdateInstances)
    await startRollout(deps.client, deps, { planId: plan.spec.id, revision, requestedBy: PLAN_CHANGE });
  return revision;
}
