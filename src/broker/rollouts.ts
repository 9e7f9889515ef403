/**
 * Rollouts of plan revisions, steered through the rollout workflow of each plan (one per plan and
 * registry: `rolloutWorkflowId`). Starting one signals the revision to the plan's workflow, started
 * if none runs, so a second start redirects the running rollout rather than starting another.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  ROLLOUT_MESSAGES,
  rolloutWorkflowId,
  type RolloutControl,
  type RolloutProgress,
  type RolloutRequest,
  type RolloutSettings,
} from '../admin/contract.js';
import type { CatalogCache } from '../kube/catalog-cache.js';
import { conflict, notFound } from '../osb/errors.js';
import type { SFPlan } from '../resources/types.js';
import { startRollout } from './plan-revisions.js';

/** The plan's current revision: its `status.specHash`, once the workers have written it. */
export function recordedRevision(plan: SFPlan): string | undefined {
  return plan.status?.specHash || undefined;
}

export interface RolloutDeps {
  readonly client: Client;
  readonly taskQueue: string;
  readonly catalog: CatalogCache;
  /** The registry's namespace, which the rollout workflow ids carry. */
  readonly namespace: string;
}

export class TemporalRollouts implements RolloutControl {
  constructor(private readonly deps: RolloutDeps) {}

  /**
   * @throws OsbError 404 for a plan not in the catalog; 409 for a plan without a revision yet.
   */
  async start(
    planId: string,
    settings: Partial<RolloutSettings>,
    requestedBy: string,
  ): Promise<RolloutProgress> {
    const plan = this.deps.catalog.plan(planId);
    if (!plan) throw notFound(`There is no plan ${planId} in the catalog.`);
    const revision = recordedRevision(plan);
    if (!revision)
      throw conflict(`The plan ${planId} has no revision yet (status.specHash); try again in a moment.`);
    const request: RolloutRequest = { planId, revision, settings, requestedBy };
    await startRollout(this.deps.client, this.deps, request);
    const handle = this.deps.client.workflow.getHandle(this.workflowId(planId));
    return handle.query<RolloutProgress>(ROLLOUT_MESSAGES.progress);
  }

  pause(planId: string): Promise<void> {
    return this.signal(planId, ROLLOUT_MESSAGES.pause);
  }

  resume(planId: string): Promise<void> {
    return this.signal(planId, ROLLOUT_MESSAGES.resume);
  }

  abort(planId: string): Promise<void> {
    return this.signal(planId, ROLLOUT_MESSAGES.abort);
  }

  async progress(planId: string): Promise<RolloutProgress | undefined> {
    try {
      return await this.deps.client.workflow
        .getHandle(this.workflowId(planId))
        .query<RolloutProgress>(ROLLOUT_MESSAGES.progress);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  /** @throws OsbError 404 when the plan has no rollout running. */
  private async signal(planId: string, name: string): Promise<void> {
    try {
      await this.deps.client.workflow.getHandle(this.workflowId(planId)).signal(name);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw notFound(`The plan ${planId} has no rollout running.`);
      throw err;
    }
  }

  private workflowId(planId: string): string {
    return rolloutWorkflowId(this.deps.namespace, planId);
  }
}
