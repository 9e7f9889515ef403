/**
 * Dry runs of plan changes: the new spec checked as the catalog would check the plan, one page of
 * the plan's instances read from the master, and the dry run workflow run on a worker (where the
 * templates are rendered) and waited for. Nothing is written but the workflow's own history.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  DEFAULT_DRY_RUN_LIMIT,
  dryRunSummary,
  dryRunWorkflowId,
  type DryRunControl,
  type DryRunInstances,
  type PlanDryRunReport,
  type PlanDryRunRequest,
} from '../admin/dry-run.js';
import type { InstanceSummary, Page, PageRequest } from '../admin/service.js';
import type { CatalogCache } from '../kube/catalog-cache.js';
import { checkCatalog } from '../osb/catalog.js';
import { badRequest, notFound } from '../osb/errors.js';
import type { planDryRunWorkflow } from '../workflows/dry-run.js';
import { OsbPlanId } from '../workflows/search-attributes.js';
import { recordedRevision } from './rollouts.js';

/** How long a dry run may take before the broker gives up on it. */
const DRY_RUN_TIMEOUT = '10 minutes';

export interface DryRunDeps {
  readonly client: Client;
  readonly taskQueue: string;
  readonly catalog: CatalogCache;
  /** The registry's namespace, which the workflow ids carry. */
  readonly namespace: string;
  /** One page of the plan's instance records. */
  readonly instances: (planId: string, page: PageRequest) => Promise<Page<InstanceSummary>>;
}

export class TemporalDryRuns implements DryRunControl {
  constructor(private readonly deps: DryRunDeps) {}

  async planChange({ planId, spec, limit, continue: next }: PlanDryRunRequest): Promise<PlanDryRunReport> {
    const plan = this.deps.catalog.plan(planId);
    if (!plan) throw notFound(`There is no plan ${planId} in the catalog.`);
    if (spec.serviceId !== plan.spec.serviceId)
      throw badRequest(`spec.serviceId must stay ${plan.spec.serviceId}: a plan does not change service.`);
    const service = this.deps.catalog.service(plan.spec.serviceId);
    if (!service)
      throw notFound(`The service ${plan.spec.serviceId} of plan ${planId} is not in the catalog.`);
    const [problem] = checkCatalog([service], [{ ...plan, spec }]).problems;
    if (problem) throw badRequest(`The catalog would leave the plan out: ${problem.reason}.`);
    const page = await this.deps.instances(planId, {
      limit: limit ?? DEFAULT_DRY_RUN_LIMIT,
      ...(next ? { continue: next } : {}),
    });
    const input: DryRunInstances = { planId, spec, instanceIds: page.items.map((i) => i.instanceId) };
    const result = await this.deps.client.workflow.execute<typeof planDryRunWorkflow>('planDryRunWorkflow', {
      workflowId: dryRunWorkflowId(this.deps.namespace, planId, randomUUID()),
      taskQueue: this.deps.taskQueue,
      args: [input],
      workflowExecutionTimeout: DRY_RUN_TIMEOUT,
      typedSearchAttributes: [{ key: OsbPlanId, value: planId }],
    });
    const currentRevision = recordedRevision(plan);
    return {
      planId,
      revision: result.revision,
      ...(currentRevision ? { currentRevision } : {}),
      instances: result.instances,
      summary: dryRunSummary(result.instances),
      ...(page.continue ? { continue: page.continue } : {}),
    };
  }
}
