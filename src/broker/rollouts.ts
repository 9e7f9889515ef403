/**
 * Rollouts of plan revisions, steered through the rollout workflow of each plan (one per plan and
 * registry: `rolloutWorkflowId`), and the rollouts of referenced objects' changes the workers start
 * (one per object and plan: `referenceRolloutWorkflowId`), and the drains of clusters (one per
 * cluster: `drainWorkflowId`), listed and steered by their ids. Starting one signals the revision to the plan's workflow, started
 * if none runs, so a second start redirects the running rollout rather than starting another.
 * Pause, resume and abort are the workflow's Updates: the answer is the rollout's progress once it
 * took the command, or why it refused it.
 */
import {
  ApplicationFailure,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import {
  drainWorkflowId,
  rolloutWorkflowId,
  type RolloutControl,
  type RolloutProgress,
  type RolloutRequest,
  type RolloutSettings,
  type RolloutSummary,
} from '../admin/contract.js';
import type { CatalogCache } from '../kube/catalog-cache.js';
import type { ClusterClient } from '../kube/clients.js';
import { getRecord, patchRecord } from '../kube/custom-objects.js';
import { conflict, notFound } from '../osb/errors.js';
import { planRevision } from '../resources/names.js';
import { SFCLUSTER, type SFCluster, type SFPlan } from '../resources/types.js';
import {
  ROLLOUT_MEMO_KEY,
  ROLLOUT_MESSAGES,
  ROLLOUT_REFUSED,
  rolloutAbortUpdate,
  rolloutPauseUpdate,
  rolloutResumeUpdate,
} from '../workflows/messages.js';
import { refusal, type RolloutCommand } from '../workflows/rollout-plan.js';
import { startRollout } from './plan-revisions.js';

const COMMAND_UPDATES = {
  pause: rolloutPauseUpdate,
  resume: rolloutResumeUpdate,
  abort: rolloutAbortUpdate,
} as const;

/** The plan's current revision: its `status.specHash`, once the workers have written it. */
export function recordedRevision(plan: SFPlan): string | undefined {
  return plan.status?.specHash || undefined;
}

export interface RolloutDeps {
  readonly client: Client;
  readonly taskQueue: string;
  readonly catalog: CatalogCache;
  /** The registry's namespace, which the rollout workflow ids carry, and where the SFClusters are. */
  readonly namespace: string;
  /** The master, whose SFClusters a drain cordons. */
  readonly master: ClusterClient;
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
    // A change the workers have not recorded yet: rolling out the recorded revision would start a
    // rollout of the spec as it was, which ends at once with nothing updated.
    const latest = planRevision(plan.spec);
    if (latest !== revision)
      throw conflict(
        `The plan ${planId} changed (revision ${latest}) and the workers have not recorded it yet (status.specHash ${revision}); try again in a moment.`,
      );
    const request: RolloutRequest = { planId, revision, settings, requestedBy };
    await startRollout(this.deps.client, this.deps, request);
    const handle = this.deps.client.workflow.getHandle(this.workflowId(planId));
    return handle.query<RolloutProgress>(ROLLOUT_MESSAGES.progress);
  }

  /**
   * Cordons the cluster at once (its drain's first step keeps it so), and starts its drain, or
   * redirects the running one to new settings.
   * @throws OsbError 404 for a cluster that is not registered.
   */
  async drain(
    clusterId: string,
    settings: Partial<RolloutSettings>,
    requestedBy: string,
  ): Promise<RolloutProgress> {
    const { master, namespace } = this.deps;
    const cluster = await getRecord<SFCluster>(master, SFCLUSTER, namespace, clusterId);
    if (!cluster) throw notFound(`There is no cluster ${clusterId} registered.`);
    if (!cluster.spec.schedulingDisabled)
      await patchRecord(master, SFCLUSTER, namespace, clusterId, { spec: { schedulingDisabled: true } });
    const request: RolloutRequest = { revision: clusterId, drain: { clusterId }, settings, requestedBy };
    await startRollout(this.deps.client, this.deps, request);
    const handle = this.deps.client.workflow.getHandle(drainWorkflowId(namespace, clusterId));
    return handle.query<RolloutProgress>(ROLLOUT_MESSAGES.progress);
  }

  pause(planId: string): Promise<RolloutProgress> {
    return this.command(planId, 'pause');
  }

  resume(planId: string): Promise<RolloutProgress> {
    return this.command(planId, 'resume');
  }

  abort(planId: string): Promise<RolloutProgress> {
    return this.command(planId, 'abort');
  }

  progress(planId: string): Promise<RolloutProgress | undefined> {
    return this.progressById(this.workflowId(planId));
  }

  async list(limit: number): Promise<RolloutSummary[]> {
    const prefix = this.rolloutPrefix();
    const found: RolloutSummary[] = [];
    for await (const run of this.deps.client.workflow.list({
      query: `WorkflowType = "rolloutWorkflow" AND WorkflowId STARTS_WITH "${prefix}"`,
    })) {
      // A rollout continued as new is listed once per run: its newest run stands for it.
      if (found.some((r) => r.id === run.workflowId)) continue;
      const progress = run.memo?.[ROLLOUT_MEMO_KEY] as Omit<RolloutProgress, 'results'> | undefined;
      const reference = progress?.reference;
      const rest = run.workflowId.slice(prefix.length);
      if (rest.startsWith('drain/')) {
        found.push({
          id: run.workflowId,
          kind: 'drain',
          drain: progress?.drain ?? { clusterId: rest.slice('drain/'.length) },
          running: run.status.name === 'RUNNING',
          startedAt: run.startTime.toISOString(),
          ...(progress ? { progress } : {}),
        });
        if (found.length >= limit) break;
        continue;
      }
      found.push({
        id: run.workflowId,
        kind: rest.startsWith('reference/') ? 'reference' : 'plan',
        planId: progress?.planId ?? rest.split('/').pop()!,
        ...(reference ? { reference } : {}),
        running: run.status.name === 'RUNNING',
        startedAt: run.startTime.toISOString(),
        ...(progress ? { progress } : {}),
      });
      if (found.length >= limit) break;
    }
    return found;
  }

  async progressOf(rolloutId: string): Promise<RolloutProgress | undefined> {
    this.checkRolloutId(rolloutId);
    return this.progressById(rolloutId);
  }

  steer(rolloutId: string, command: RolloutCommand): Promise<RolloutProgress> {
    this.checkRolloutId(rolloutId);
    return this.commandById(rolloutId, command, `There is no rollout ${rolloutId} running.`);
  }

  private command(planId: string, command: RolloutCommand): Promise<RolloutProgress> {
    return this.commandById(this.workflowId(planId), command, `The plan ${planId} has no rollout running.`);
  }

  private async progressById(workflowId: string): Promise<RolloutProgress | undefined> {
    try {
      return await this.deps.client.workflow
        .getHandle(workflowId)
        .query<RolloutProgress>(ROLLOUT_MESSAGES.progress);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  /**
   * Sends `command` to the rollout and answers with its progress once taken.
   * @throws OsbError 409 with why when the rollout refused it, or has ended (a closed rollout
   * refuses every command); 404 (`none`) when there never was such a rollout.
   */
  private async commandById(
    workflowId: string,
    command: RolloutCommand,
    none: string,
  ): Promise<RolloutProgress> {
    try {
      return await this.deps.client.workflow.getHandle(workflowId).executeUpdate(COMMAND_UPDATES[command]);
    } catch (err) {
      if (
        err instanceof WorkflowUpdateFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === ROLLOUT_REFUSED
      )
        throw conflict(err.cause.message);
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    // No run takes Updates: a rollout that ended says how, else there is none.
    const ended = await this.progressById(workflowId);
    const why = ended && refusal(command, ended);
    if (why) throw conflict(why);
    throw notFound(none);
  }

  /** The ids of this registry's rollouts start so: any other id is no rollout's. */
  private rolloutPrefix(): string {
    return `rollout/${this.deps.namespace}/`;
  }

  private checkRolloutId(rolloutId: string): void {
    if (!rolloutId.startsWith(this.rolloutPrefix()) || rolloutId.includes('"'))
      throw notFound(`There is no rollout ${rolloutId}.`);
  }

  private workflowId(planId: string): string {
    return rolloutWorkflowId(this.deps.namespace, planId);
  }
}
