/**
 * An in-memory AdminService for the tests of the admin API's HTTP layer and of the command line:
 * listings over arrays with the real filter semantics and numbered continue tokens, updates and
 * removals recorded, rollouts whose progress answers come from a list, one a call, and dry runs
 * whose reports come from a list, one a page.
 */
import {
  DEFAULT_ROLLOUT_SETTINGS,
  type AdoptionReport,
  type RolloutControl,
  type RolloutProgress,
  type RolloutSettings,
  type RolloutSummary,
} from '../../src/admin/contract.js';
import type { DryRunControl, PlanDryRunReport, PlanDryRunRequest } from '../../src/admin/dry-run.js';
import type {
  ActionStarted,
  ActionState,
  AdminService,
  BindingSummary,
  ForcedRemoval,
  InstanceSummary,
  InstanceUpdateStarted,
  Page,
  PageRequest,
  RecordFilter,
  RecordKind,
} from '../../src/admin/service.js';
import { concurrencyError, conflict, notFound } from '../../src/osb/errors.js';

/** One call the service received: its name and arguments. */
export interface AdminCall {
  readonly method: string;
  readonly args: readonly unknown[];
}

export const instanceSummary = (id: string, fields: Partial<InstanceSummary> = {}): InstanceSummary => ({
  instanceId: id,
  serviceId: 'svc',
  planId: 'plan',
  clusterId: '1',
  state: 'succeeded',
  operation: 'provision',
  revision: 'rev-1',
  namespace: `sf-${id}`,
  name: id,
  ...fields,
});

export const bindingSummary = (id: string, fields: Partial<BindingSummary> = {}): BindingSummary => ({
  bindingId: id,
  instanceId: 'i-1',
  serviceId: 'svc',
  planId: 'plan',
  clusterId: '1',
  state: 'succeeded',
  operation: 'bind',
  namespace: 'sf-i-1',
  name: id,
  ...fields,
});

/** A rollout's progress, with every count given or 0. */
export const progressOf = (fields: Partial<RolloutProgress> = {}): RolloutProgress => ({
  planId: 'plan',
  revision: 'rev-2',
  state: 'waves',
  settings: DEFAULT_ROLLOUT_SETTINGS,
  total: 10,
  done: 0,
  failed: 0,
  inFlight: 0,
  wave: 0,
  results: {},
  requestedBy: 'admin',
  ...fields,
});

function matches(filter: RecordFilter, r: InstanceSummary | BindingSummary): boolean {
  return (
    (filter.serviceId === undefined || r.serviceId === filter.serviceId) &&
    (filter.planId === undefined || r.planId === filter.planId) &&
    (filter.clusterId === undefined || r.clusterId === filter.clusterId) &&
    (filter.state === undefined || r.state === filter.state) &&
    (filter.revision === undefined || ('revision' in r && r.revision === filter.revision))
  );
}

/** A page of `all`: `continue` is the index of the next record read. */
function pageOf<T extends InstanceSummary | BindingSummary>(
  all: readonly T[],
  filter: RecordFilter,
  page: PageRequest,
): Page<T> {
  const start = page.continue ? Number(page.continue) : 0;
  const end = start + (page.limit ?? 100);
  const items = all.slice(start, end).filter((r) => matches(filter, r));
  return { items, ...(end < all.length ? { continue: String(end) } : {}) };
}

export class MemoryAdmin implements AdminService {
  readonly calls: AdminCall[] = [];
  instances: InstanceSummary[] = [];
  bindings: BindingSummary[] = [];
  /** Instance ids with an operation running: their update is a ConcurrencyError. */
  readonly busy = new Set<string>();
  /** What `actionState` answers, one a call; the last one stays. */
  actionStates: ActionState['state'][] = ['succeeded'];
  /** Custom actions each instance's plan has. */
  readonly actionsOf = new Map<string, readonly string[]>();
  /** What `rollouts.progress` answers, one a call; the last one stays. Empty: no rollout. */
  progressAnswers: RolloutProgress[] = [];
  /** What `rollouts.list` answers. */
  rolloutList: RolloutSummary[] = [];

  readonly rollouts: RolloutControl = {
    start: async (planId: string, settings: Partial<RolloutSettings>, requestedBy: string) => {
      this.calls.push({ method: 'rollouts.start', args: [planId, settings, requestedBy] });
      return progressOf({
        planId,
        requestedBy,
        state: 'canary',
        settings: { ...DEFAULT_ROLLOUT_SETTINGS, ...settings },
      });
    },
    pause: async (planId: string) => this.command('pause', planId),
    resume: async (planId: string) => this.command('resume', planId),
    abort: async (planId: string) => this.command('abort', planId),
    progress: async (planId: string) => {
      this.calls.push({ method: 'rollouts.progress', args: [planId] });
      const next = this.progressAnswers.length > 1 ? this.progressAnswers.shift() : this.progressAnswers[0];
      return next && { ...next, planId };
    },
    list: async (limit: number) => {
      this.calls.push({ method: 'rollouts.list', args: [limit] });
      return this.rolloutList;
    },
    drain: async (clusterId: string, settings: Partial<RolloutSettings>, requestedBy: string) => {
      this.calls.push({ method: 'rollouts.drain', args: [clusterId, settings, requestedBy] });
      const { planId: _plan, ...progress } = progressOf({ revision: clusterId, drain: { clusterId } });
      return { ...progress, settings: { ...progress.settings, ...settings } };
    },
    progressOf: async (rolloutId: string) => {
      this.calls.push({ method: 'rollouts.progressOf', args: [rolloutId] });
      return this.progressAnswers[0];
    },
    steer: async (rolloutId: string, command: 'pause' | 'resume' | 'abort') => {
      this.calls.push({ method: 'rollouts.steer', args: [rolloutId, command] });
      return progressOf({
        planId: 'p',
        requestedBy: 'reference change',
        state: command === 'pause' ? 'paused' : 'waves',
      });
    },
  };

  /** What `dryRuns.planChange` answers, one a call; the last one stays. Empty: 404, no such plan. */
  dryRunAnswers: PlanDryRunReport[] = [];

  readonly dryRuns: DryRunControl = {
    planChange: async (request: PlanDryRunRequest) => {
      this.calls.push({ method: 'dryRuns.planChange', args: [request] });
      const next = this.dryRunAnswers.length > 1 ? this.dryRunAnswers.shift() : this.dryRunAnswers[0];
      if (!next) throw notFound(`There is no plan ${request.planId} in the catalog.`);
      return next;
    },
  };

  /** Why the next rollout command is refused (a 409), when set; else it is taken. */
  commandRefusal: string | undefined;

  /** A rollout command: 404 without a rollout, 409 when refused, else the progress in its new state. */
  private command(action: 'pause' | 'resume' | 'abort', planId: string): RolloutProgress {
    this.calls.push({ method: `rollouts.${action}`, args: [planId] });
    const current = this.progressAnswers[0];
    if (!current) throw notFound(`The plan ${planId} has no rollout running.`);
    if (this.commandRefusal) throw conflict(this.commandRefusal);
    const state = action === 'pause' ? 'paused' : action === 'abort' ? 'aborted' : 'waves';
    return { ...current, planId, state };
  }

  async listInstances(filter: RecordFilter, page: PageRequest): Promise<Page<InstanceSummary>> {
    this.calls.push({ method: 'listInstances', args: [filter, page] });
    return pageOf(this.instances, filter, page);
  }

  async listBindings(filter: RecordFilter, page: PageRequest): Promise<Page<BindingSummary>> {
    this.calls.push({ method: 'listBindings', args: [filter, page] });
    return pageOf(this.bindings, filter, page);
  }

  async updateInstance(instanceId: string, requestedBy: string): Promise<InstanceUpdateStarted> {
    this.calls.push({ method: 'updateInstance', args: [instanceId, requestedBy] });
    if (!this.instances.some((i) => i.instanceId === instanceId))
      throw notFound('The service instance does not exist.');
    if (this.busy.has(instanceId)) throw concurrencyError('Another operation (update) is in progress.');
    return { instanceId, operation: 'update:run-1', revision: 'rev-2' };
  }

  async forceRemove(kind: RecordKind, id: string, requestedBy: string): Promise<ForcedRemoval> {
    this.calls.push({ method: 'forceRemove', args: [kind, id, requestedBy] });
    const found =
      kind === 'instance'
        ? this.instances.find((i) => i.instanceId === id)
        : this.bindings.find((b) => b.bindingId === id);
    if (!found) throw notFound(`There is no ${kind} record of ${id}.`);
    return {
      kind,
      id,
      namespace: found.namespace,
      name: found.name,
      deletionRequested: found.deletionRequestedAt === undefined,
      finalizerRemoved: true,
      operationStopped: false,
      requestedBy,
      at: '2026-01-01T00:00:00.000Z',
    };
  }

  /** The report an adoption answers with; a dry run says so. */
  adoption: AdoptionReport = { dryRun: false, adopted: [], refused: [], alreadyAdopted: 0 };

  async adoptServiceFabrik(dryRun: boolean, requestedBy: string): Promise<AdoptionReport> {
    this.calls.push({ method: 'adoptServiceFabrik', args: [dryRun, requestedBy] });
    return { ...this.adoption, dryRun };
  }

  async runAction(
    instanceId: string,
    action: string,
    parameters: Readonly<Record<string, unknown>> | undefined,
    requestedBy: string,
  ): Promise<ActionStarted> {
    this.calls.push({ method: 'runAction', args: [instanceId, action, parameters, requestedBy] });
    if (!this.instances.some((i) => i.instanceId === instanceId))
      throw notFound('The service instance does not exist.');
    if (!(this.actionsOf.get(instanceId) ?? []).includes(action))
      throw notFound(`Plan plan has no action ${action}; it has no custom actions.`);
    if (this.busy.has(instanceId)) throw concurrencyError('Another operation (update) is in progress.');
    return {
      instanceId,
      action,
      workflowId: `instance/${instanceId}`,
      runId: 'run-1',
      operation: `${action}:run-1`,
    };
  }

  async rotateSecret(instanceId: string, secret: string, requestedBy: string): Promise<ActionStarted> {
    this.calls.push({ method: 'rotateSecret', args: [instanceId, secret, requestedBy] });
    if (!this.instances.some((i) => i.instanceId === instanceId))
      throw notFound('The service instance does not exist.');
    if (this.busy.has(instanceId)) throw concurrencyError('Another operation (update) is in progress.');
    const action = 'x-rotate-secret';
    return {
      instanceId,
      action,
      workflowId: `instance/${instanceId}`,
      runId: 'run-1',
      operation: `${action}:run-1`,
    };
  }

  async moveInstance(
    instanceId: string,
    toClusterId: string | undefined,
    requestedBy: string,
  ): Promise<ActionStarted> {
    this.calls.push({ method: 'moveInstance', args: [instanceId, toClusterId, requestedBy] });
    if (!this.instances.some((i) => i.instanceId === instanceId))
      throw notFound('The service instance does not exist.');
    if (this.busy.has(instanceId)) throw concurrencyError('Another operation (update) is in progress.');
    return {
      instanceId,
      action: 'move',
      workflowId: `instance/${instanceId}`,
      runId: 'run-1',
      operation: 'move:run-1',
    };
  }

  async actionState(instanceId: string, action: string, runId: string): Promise<ActionState> {
    this.calls.push({ method: 'actionState', args: [instanceId, action, runId] });
    const state =
      this.actionStates.length > 1 ? this.actionStates.shift()! : (this.actionStates[0] ?? 'succeeded');
    return {
      instanceId,
      action,
      runId,
      state,
      ...(state === 'failed' ? { description: `${action} failed: the operator said no` } : {}),
    };
  }
}
