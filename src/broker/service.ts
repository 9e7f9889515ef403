/**
 * The service layer over Temporal and Kubernetes: each state-changing OSB call starts (or finds)
 * the operation's workflow; reads answer from the records in the master and from workflow state.
 *
 * One workflow id per instance and per binding (src/resources/names.ts) makes a retried request
 * find the running operation and keeps two operations on one instance from running at once. The
 * operation's state lives in the workflow's memo, so `last_operation` is one describe call that
 * works with no worker running; once history is gone, the record's status answers.
 */
import { createHmac } from 'node:crypto';
import {
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import Mustache from 'mustache';
import type { ClusterClient } from '../kube/clients.js';
import type { CatalogCache } from '../kube/catalog-cache.js';
import { getRecord } from '../kube/custom-objects.js';
import { isNotFound } from '../kube/errors.js';
import { bindingAcceptsIncomplete, requireAsyncSupport } from '../osb/rules.js';
import { parseApiVersion } from '../osb/version.js';
import {
  badRequest,
  concurrencyError,
  conflict,
  gone,
  internalError,
  notFound,
  OsbError,
} from '../osb/errors.js';
import {
  bindingSecretName,
  bindingWorkflowId,
  instanceNamespace,
  instanceWorkflowId,
  resourceName,
} from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import { ANNOTATIONS } from '../resources/names.js';
import {
  MEMO_KEY,
  WORKFLOW_TYPES,
  operationString,
  startingStatus,
  parseOperationString,
  type BindingRequest,
  type InstanceRequest,
  type OperationStatus,
  type OperationType,
  type RequestedBy,
} from '../workflows/messages.js';
import {
  OsbBindingId,
  OsbInstanceId,
  OsbOperation,
  OsbPlanId,
  OsbServiceId,
} from '../workflows/search-attributes.js';
import type {
  BindOutcome,
  BindRequest,
  BindingResponse,
  BindingView,
  DeprovisionRequest,
  InstanceView,
  LastOperation,
  OperationOutcome,
  ProvisionRequest,
  RequestMeta,
  ServiceBroker,
  UnbindRequest,
  UpdateRequest,
} from './types.js';

export interface BrokerDeps {
  readonly client: Client;
  readonly taskQueue: string;
  readonly master: ClusterClient;
  readonly catalog: CatalogCache;
  /** One namespace for all instances; each its own when unset. */
  readonly instanceNamespace?: string;
  /** How long a synchronous request waits for its workflow before it rolls the operation back. */
  readonly syncTimeoutMs: number;
  /** Deadline of an operation whose plan sets no maximum_polling_duration. */
  readonly operationTimeoutSeconds: number;
  /** Key of the request digests (so a digest reveals nothing of the parameters). */
  readonly hashKey: Buffer;
}

/** What a describe call tells of the latest (or a given) run of an operation workflow. */
interface RunState {
  readonly runId: string;
  readonly serviceId?: string;
  readonly planId?: string;
  readonly running: boolean;
  readonly statusName: string;
  readonly memo?: OperationStatus;
}

/** Seconds a platform should wait before polling a running operation again. */
const RETRY_AFTER_SECONDS = 2;

/** JSON with sorted keys: equal requests give equal digests whatever the key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const requestedBy = ({ originatingIdentity: who }: RequestMeta): RequestedBy | undefined => {
  if (!who) return undefined;
  return 'value' in who
    ? { platform: who.platform, identity: who.value }
    : { platform: who.platform, unreadable: true };
};

/**
 * `instance_usable` only for a failed update or deprovision, `update_repeatable` only for a failed
 * update (OSB: a failed provision leaves no instance to speak of).
 */
const toLastOperation = (status: OperationStatus): LastOperation => {
  const failed = status.state === 'failed';
  const usable = failed && (status.operation === 'update' || status.operation === 'deprovision');
  return {
    state: status.state,
    ...(status.description ? { description: status.description } : {}),
    ...(usable && status.instanceUsable !== undefined ? { instanceUsable: status.instanceUsable } : {}),
    ...(failed && status.operation === 'update' && status.updateRepeatable !== undefined
      ? { updateRepeatable: status.updateRepeatable }
      : {}),
    ...(status.state === 'in progress' ? { retryAfterSeconds: RETRY_AFTER_SECONDS } : {}),
  };
};

/** Deprovision and unbind: given up on, they stop where they are rather than roll back. */
const isDeletion = (type: OperationType): boolean => type === 'deprovision' || type === 'unbind';

/** How many settled runs the broker remembers: a closed run never changes, so last_operation needs no call. */
const SETTLED_CACHE_SIZE = 10_000;

export class TemporalServiceBroker implements ServiceBroker {
  private readonly settledRuns = new Map<string, RunState>();

  constructor(private readonly deps: BrokerDeps) {}

  // ------------------------------------------------------------------ instances

  async provision(req: ProvisionRequest, meta: RequestMeta): Promise<OperationOutcome> {
    const plan = this.plan(req.planId);
    const requestHash = this.digest({
      serviceId: req.serviceId,
      planId: req.planId,
      organizationGuid: req.organizationGuid,
      spaceGuid: req.spaceGuid,
      parameters: req.parameters,
      maintenanceInfo: req.maintenanceInfo?.version,
    });
    const workflowId = instanceWorkflowId(req.instanceId);
    // A new instance has no record: starting the workflow finds any operation already running.
    const record = await this.instanceRecord(req.instanceId);
    const running = record ? await this.runningOperation(workflowId) : undefined;
    const async = Boolean(plan.spec.manager?.async);
    if (running) return this.repeatOf(running, workflowId, 'provision', requestHash, async);
    if (record?.metadata.deletionTimestamp) throw concurrencyError('The instance is being deleted.');
    if (record) {
      if (record.metadata.annotations?.[ANNOTATIONS.requestHash] !== requestHash) {
        throw conflict('An instance with this id already exists with different attributes.');
      }
      if (record.status?.state === 'succeeded') {
        return {
          kind: 'done',
          created: false,
          ...(record.status.dashboardUrl ? { dashboardUrl: record.status.dashboardUrl } : {}),
        };
      }
      // Identical, but the last attempt failed: provision again.
    }
    const dashboardUrl = this.dashboardUrl(plan, req.instanceId, req);
    const input: InstanceRequest = {
      instanceId: req.instanceId,
      serviceId: req.serviceId,
      planId: req.planId,
      ...(req.organizationGuid ? { organizationGuid: req.organizationGuid } : {}),
      ...(req.spaceGuid ? { spaceGuid: req.spaceGuid } : {}),
      ...(req.context ? { context: req.context } : {}),
      ...(req.parameters ? { parameters: req.parameters } : {}),
      ...(req.maintenanceInfo ? { maintenanceInfo: req.maintenanceInfo } : {}),
      ...(dashboardUrl ? { dashboardUrl } : {}),
      ...(requestedBy(meta) ? { requestedBy: requestedBy(meta)! } : {}),
      requestHash,
      deadlineSeconds: this.deadline(plan),
    };
    const started = await this.start('provision', workflowId, input, {
      instanceId: req.instanceId,
      serviceId: req.serviceId,
      planId: req.planId,
    });
    if (!started.handle) return this.repeatOf(started.running, workflowId, 'provision', requestHash, async);
    return this.outcome(
      started.handle,
      started.handle.firstExecutionRunId,
      'provision',
      async,
      true,
      dashboardUrl,
    );
  }

  async update(req: UpdateRequest, meta: RequestMeta): Promise<OperationOutcome> {
    const record = await this.instanceRecord(req.instanceId);
    if (!record || record.metadata.deletionTimestamp) throw notFound('The service instance does not exist.');
    const planId = req.planId ?? record.spec.planId;
    const plan = this.plan(planId);
    const parameters = req.parameters ?? record.spec.parameters;
    const requestHash = this.digest({
      serviceId: record.spec.serviceId,
      planId,
      organizationGuid: record.spec.organizationGuid,
      spaceGuid: record.spec.spaceGuid,
      parameters,
      maintenanceInfo: (req.maintenanceInfo ?? record.spec.maintenanceInfo)?.version,
    });
    const workflowId = instanceWorkflowId(req.instanceId);
    const running = await this.runningOperation(workflowId);
    const async = Boolean(plan.spec.manager?.async);
    if (running) return this.repeatOf(running, workflowId, 'update', requestHash, async);
    if (
      record.metadata.annotations?.[ANNOTATIONS.requestHash] === requestHash &&
      record.status?.state === 'succeeded' &&
      (req.context === undefined || canonical(req.context) === canonical(record.spec.context))
    ) {
      return { kind: 'done', created: false };
    }
    const input: InstanceRequest = {
      instanceId: req.instanceId,
      serviceId: record.spec.serviceId,
      planId,
      ...(record.spec.organizationGuid ? { organizationGuid: record.spec.organizationGuid } : {}),
      ...(record.spec.spaceGuid ? { spaceGuid: record.spec.spaceGuid } : {}),
      ...((req.context ?? record.spec.context) ? { context: req.context ?? record.spec.context } : {}),
      ...(parameters ? { parameters } : {}),
      ...(req.previousValues ? { previousValues: req.previousValues } : {}),
      ...((req.maintenanceInfo ?? record.spec.maintenanceInfo)
        ? { maintenanceInfo: req.maintenanceInfo ?? record.spec.maintenanceInfo }
        : {}),
      ...(requestedBy(meta) ? { requestedBy: requestedBy(meta)! } : {}),
      requestHash,
      deadlineSeconds: this.deadline(plan),
    };
    const started = await this.start('update', workflowId, input, {
      instanceId: req.instanceId,
      serviceId: record.spec.serviceId,
      planId,
    });
    if (!started.handle) return this.repeatOf(started.running, workflowId, 'update', requestHash, async);
    return this.outcome(started.handle, started.handle.firstExecutionRunId, 'update', async, false);
  }

  async deprovision(req: DeprovisionRequest, meta: RequestMeta): Promise<OperationOutcome> {
    const requestHash = this.digest({ deprovision: req.instanceId });
    const workflowId = instanceWorkflowId(req.instanceId);
    const [running, record] = await Promise.all([
      this.runningOperation(workflowId),
      this.instanceRecord(req.instanceId),
    ]);
    // The instance's own plan decides, not the one the request names (which may be another).
    const plan = this.deps.catalog.plan(record?.spec.planId ?? req.planId);
    if (plan) requireAsyncSupport(plan, req.acceptsIncomplete);
    const async = Boolean(plan?.spec.manager?.async);
    if (running) return this.repeatOf(running, workflowId, 'deprovision', requestHash, async);
    if (!record) throw gone('The service instance does not exist.');
    const input: InstanceRequest = {
      instanceId: req.instanceId,
      serviceId: record.spec.serviceId,
      planId: record.spec.planId,
      ...(requestedBy(meta) ? { requestedBy: requestedBy(meta)! } : {}),
      requestHash,
      deadlineSeconds: this.deadline(plan),
    };
    const started = await this.start('deprovision', workflowId, input, {
      instanceId: req.instanceId,
      serviceId: record.spec.serviceId,
      planId: record.spec.planId,
    });
    if (!started.handle) return this.repeatOf(started.running, workflowId, 'deprovision', requestHash, async);
    return this.outcome(started.handle, started.handle.firstExecutionRunId, 'deprovision', async, false);
  }

  async getInstance(instanceId: string): Promise<InstanceView | undefined> {
    const [record, running] = await Promise.all([
      this.instanceRecord(instanceId),
      this.runningOperation(instanceWorkflowId(instanceId)),
    ]);
    if (!record) {
      // Provisioning, but not yet recorded: the workflow's search attributes know the ids.
      if (!running?.memo || !running.serviceId || !running.planId) return undefined;
      return {
        instanceId,
        serviceId: running.serviceId,
        planId: running.planId,
        operation: { type: 'provision', state: 'in progress' },
      };
    }
    const type = running?.memo?.operation ?? record.status?.operation;
    const state = running ? 'in progress' : (record.status?.state ?? 'in progress');
    return {
      instanceId,
      serviceId: record.spec.serviceId,
      planId: record.spec.planId,
      ...(record.spec.parameters ? { parameters: record.spec.parameters } : {}),
      ...(record.spec.context ? { context: record.spec.context } : {}),
      ...(record.spec.maintenanceInfo ? { maintenanceInfo: record.spec.maintenanceInfo } : {}),
      ...(record.status?.dashboardUrl ? { dashboardUrl: record.status.dashboardUrl } : {}),
      ...(type === 'provision' || type === 'update' || type === 'deprovision'
        ? { operation: { type, state: state === 'succeeded' || state === 'failed' ? state : 'in progress' } }
        : {}),
    };
  }

  async instanceLastOperation(instanceId: string, operation?: string): Promise<LastOperation> {
    const parsed = this.parseOperation(operation);
    const run = await this.describe(instanceWorkflowId(instanceId), parsed?.runId);
    if (run?.memo) return toLastOperation(this.settled(run));
    const record = await this.instanceRecord(instanceId);
    if (!record) {
      if (parsed?.type === 'deprovision' || run?.memo === undefined) {
        if (parsed?.type === 'deprovision') throw gone('The service instance is deleted.');
        throw notFound('The service instance does not exist.');
      }
    }
    // History is gone: the record's status is the last word.
    return this.fromRecordStatus(record!.status);
  }

  // ------------------------------------------------------------------ bindings

  async bind(req: BindRequest, meta: RequestMeta): Promise<BindOutcome> {
    const instance = await this.instanceRecord(req.instanceId);
    if (!instance || instance.metadata.deletionTimestamp)
      throw notFound('The service instance does not exist.');
    if (instance.status?.operation === 'provision' && instance.status.state === 'failed') {
      // As GET instance says: a failed provision leaves no instance to bind to (retrying will not help).
      throw notFound('The service instance failed to provision; it cannot be bound.');
    }
    if (instance.status?.state !== 'succeeded' && instance.status?.operation === 'provision') {
      throw concurrencyError('The service instance is still being provisioned.');
    }
    const plan = this.plan(req.planId);
    const requestHash = this.digest({
      serviceId: req.serviceId,
      planId: req.planId,
      appGuid: req.appGuid,
      bindResource: req.bindResource,
      parameters: req.parameters,
    });
    const workflowId = bindingWorkflowId(req.instanceId, req.bindingId);
    const async = Boolean(plan.spec.manager?.asyncBinding) && req.acceptsIncomplete;
    const running = await this.runningOperation(workflowId);
    if (running) return this.bindRepeatOf(running, workflowId, requestHash, req, async);
    const record = await this.bindingRecord(req.instanceId, req.bindingId);
    if (record?.metadata.deletionTimestamp) throw concurrencyError('The binding is being deleted.');
    if (record) {
      if (record.metadata.annotations?.[ANNOTATIONS.requestHash] !== requestHash) {
        throw conflict('A binding with this id already exists with different attributes.');
      }
      if (record.status?.state === 'succeeded') {
        return { kind: 'done', created: false, response: await this.bindingResponse(record) };
      }
    }
    const input: BindingRequest = {
      instanceId: req.instanceId,
      bindingId: req.bindingId,
      serviceId: req.serviceId,
      planId: req.planId,
      ...(req.appGuid ? { appGuid: req.appGuid } : {}),
      ...(req.bindResource ? { bindResource: req.bindResource } : {}),
      ...(req.context ? { context: req.context } : {}),
      ...(req.parameters ? { parameters: req.parameters } : {}),
      ...(requestedBy(meta) ? { requestedBy: requestedBy(meta)! } : {}),
      requestHash,
      deadlineSeconds: this.deadline(plan),
    };
    const started = await this.start('bind', workflowId, input, {
      instanceId: req.instanceId,
      bindingId: req.bindingId,
      serviceId: req.serviceId,
      planId: req.planId,
    });
    if (!started.handle) return this.bindRepeatOf(started.running, workflowId, requestHash, req, async);
    if (async)
      return { kind: 'accepted', operation: operationString('bind', started.handle.firstExecutionRunId) };
    return this.bound(started.handle, req, true);
  }

  async unbind(req: UnbindRequest, meta: RequestMeta): Promise<OperationOutcome> {
    const requestHash = this.digest({ unbind: req.bindingId });
    const workflowId = bindingWorkflowId(req.instanceId, req.bindingId);
    const [running, record] = await Promise.all([
      this.runningOperation(workflowId),
      this.bindingRecord(req.instanceId, req.bindingId),
    ]);
    // The binding's own plan decides, not the one the request names (which may be another).
    const plan = this.deps.catalog.plan(record?.spec.planId ?? req.planId);
    if (plan) bindingAcceptsIncomplete(plan, req.acceptsIncomplete, parseApiVersion(meta.apiVersion));
    const async = Boolean(plan?.spec.manager?.asyncBinding) && req.acceptsIncomplete;
    if (running) return this.repeatOf(running, workflowId, 'unbind', requestHash, async);
    if (!record) throw gone('The service binding does not exist.');
    const input: BindingRequest = {
      instanceId: req.instanceId,
      bindingId: req.bindingId,
      serviceId: record.spec.serviceId,
      planId: record.spec.planId,
      ...(requestedBy(meta) ? { requestedBy: requestedBy(meta)! } : {}),
      requestHash,
      deadlineSeconds: this.deadline(plan),
    };
    const started = await this.start('unbind', workflowId, input, {
      instanceId: req.instanceId,
      bindingId: req.bindingId,
      serviceId: record.spec.serviceId,
      planId: record.spec.planId,
    });
    if (!started.handle) return this.repeatOf(started.running, workflowId, 'unbind', requestHash, async);
    return this.outcome(started.handle, started.handle.firstExecutionRunId, 'unbind', async, false);
  }

  async getBinding(instanceId: string, bindingId: string): Promise<BindingView | undefined> {
    const record = await this.bindingRecord(instanceId, bindingId);
    if (!record) return undefined;
    const state = record.status?.state;
    const type = record.status?.operation === 'unbind' ? 'unbind' : 'bind';
    const settled = state === 'succeeded' || state === 'failed' ? state : 'in progress';
    return {
      bindingId,
      instanceId,
      serviceId: record.spec.serviceId,
      planId: record.spec.planId,
      ...(record.spec.parameters ? { parameters: record.spec.parameters } : {}),
      operation: { type, state: settled },
      ...(type === 'bind' && settled === 'succeeded' ? { response: await this.bindingResponse(record) } : {}),
    };
  }

  async bindingLastOperation(
    instanceId: string,
    bindingId: string,
    operation?: string,
  ): Promise<LastOperation> {
    const parsed = this.parseOperation(operation);
    const run = await this.describe(bindingWorkflowId(instanceId, bindingId), parsed?.runId);
    if (run?.memo) return toLastOperation(this.settled(run));
    const record = await this.bindingRecord(instanceId, bindingId);
    if (!record) {
      if (parsed?.type === 'unbind') throw gone('The service binding is deleted.');
      throw notFound('The service binding does not exist.');
    }
    return this.fromRecordStatus(record.status);
  }

  // ------------------------------------------------------------------ helpers

  private plan(planId: string): SFPlan {
    const plan = this.deps.catalog.plan(planId);
    if (!plan) throw badRequest(`Unknown plan_id ${planId}.`);
    return plan;
  }

  private deadline(plan: SFPlan | undefined): number {
    return plan?.spec.maximum_polling_duration ?? this.deps.operationTimeoutSeconds;
  }

  private digest(attributes: Record<string, unknown>): string {
    return createHmac('sha256', this.deps.hashKey).update(canonical(attributes)).digest('hex');
  }

  /** The dashboard URL from the plan's `manager.dashboardUrlTemplate`, when it has one. */
  private dashboardUrl(plan: SFPlan, instanceId: string, req: ProvisionRequest): string | undefined {
    const template = plan.spec.manager?.dashboardUrlTemplate;
    if (!template) return undefined;
    const view = {
      instance: { metadata: { name: resourceName(instanceId) }, spec: { ...req, instanceId } },
      plan,
      service: this.deps.catalog.service(plan.spec.serviceId),
    };
    return Mustache.render(template, view, {}, { escape: (s: string) => encodeURIComponent(s) });
  }

  private parseOperation(operation: string | undefined) {
    if (operation === undefined || operation === '') return undefined;
    const parsed = parseOperationString(operation);
    if (!parsed) throw badRequest(`Unknown operation "${operation.slice(0, 100)}".`);
    return parsed;
  }

  private async instanceRecord(instanceId: string): Promise<SFServiceInstance | undefined> {
    return getRecord<SFServiceInstance>(
      this.deps.master,
      SFSERVICEINSTANCE,
      instanceNamespace(instanceId, this.deps.instanceNamespace),
      resourceName(instanceId),
    );
  }

  private async bindingRecord(instanceId: string, bindingId: string): Promise<SFServiceBinding | undefined> {
    return getRecord<SFServiceBinding>(
      this.deps.master,
      SFSERVICEBINDING,
      instanceNamespace(instanceId, this.deps.instanceNamespace),
      resourceName(bindingId),
    );
  }

  /** The binding's response, from the Secret its bind wrote. */
  private async bindingResponse(record: SFServiceBinding, secretName?: string): Promise<BindingResponse> {
    const name = secretName ?? record.status?.response?.secretRef ?? bindingSecretName(record.metadata.name);
    try {
      const secret = await this.deps.master.core.readNamespacedSecret({
        name,
        namespace: record.metadata.namespace!,
      });
      const raw = secret.data?.response;
      return raw ? (JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as BindingResponse) : {};
    } catch (err) {
      if (isNotFound(err)) return {};
      throw err;
    }
  }

  private async describe(workflowId: string, runId?: string): Promise<RunState | undefined> {
    const cached = runId ? this.settledRuns.get(`${workflowId}/${runId}`) : undefined;
    if (cached) return cached;
    const run = await this.describeRun(workflowId, runId);
    if (run && runId && !run.running) {
      if (this.settledRuns.size >= SETTLED_CACHE_SIZE)
        this.settledRuns.delete(this.settledRuns.keys().next().value!);
      this.settledRuns.set(`${workflowId}/${runId}`, run);
    }
    return run;
  }

  private async describeRun(workflowId: string, runId?: string): Promise<RunState | undefined> {
    try {
      const info = await this.deps.client.workflow.getHandle(workflowId, runId).describe();
      const memo = info.memo?.[MEMO_KEY] as OperationStatus | undefined;
      // describe() leaves the typed view empty for values stored without type metadata.
      const attributes = info.searchAttributes ?? {};
      const attribute = (name: string): string | undefined => {
        const value = attributes[name]?.[0];
        return typeof value === 'string' ? value : undefined;
      };
      const serviceId = attribute(OsbServiceId.name);
      const planId = attribute(OsbPlanId.name);
      return {
        ...(serviceId ? { serviceId } : {}),
        ...(planId ? { planId } : {}),
        runId: info.runId,
        running: info.status.name === 'RUNNING',
        statusName: info.status.name,
        ...(memo ? { memo } : {}),
      };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  private async runningOperation(workflowId: string): Promise<RunState | undefined> {
    const run = await this.describe(workflowId);
    return run?.running ? run : undefined;
  }

  /** A run that stopped without recording its outcome (terminated, timed out, cancelled) failed. */
  private settled(run: RunState): OperationStatus {
    const memo = run.memo!;
    if (run.running || memo.state !== 'in progress') return memo;
    const reason =
      run.statusName !== 'CANCELLED'
        ? `stopped (${run.statusName.toLowerCase()})`
        : isDeletion(memo.operation)
          ? 'was stopped before it finished'
          : 'was cancelled and rolled back';
    return { ...memo, state: 'failed', description: `The ${memo.operation} ${reason}.` };
  }

  private fromRecordStatus(
    status: { state?: string; description?: string; error?: string } | undefined,
  ): LastOperation {
    const state = status?.state === 'succeeded' || status?.state === 'failed' ? status.state : 'in progress';
    const description = status?.error || status?.description;
    return {
      state,
      ...(description ? { description } : {}),
      ...(state === 'in progress' ? { retryAfterSeconds: RETRY_AFTER_SECONDS } : {}),
    };
  }

  /**
   * The answer to a request that finds an operation already running on the same instance or
   * binding. The same request again gets the same operation: asynchronously its operation string,
   * synchronously the wait for its outcome, as the first request does.
   */
  private async repeatOf(
    running: RunState,
    workflowId: string,
    type: OperationType,
    requestHash: string,
    async: boolean,
  ): Promise<OperationOutcome> {
    const memo = running.memo;
    if (memo?.operation === type && memo.requestHash === requestHash) {
      const handle = this.deps.client.workflow.getHandle(workflowId, running.runId);
      return this.outcome(handle, running.runId, type, async, false, memo.dashboardUrl);
    }
    if (memo?.operation === type && type === 'provision') {
      throw conflict('An instance with this id is being provisioned with different attributes.');
    }
    throw concurrencyError(`Another operation (${memo?.operation ?? 'unknown'}) is in progress.`);
  }

  /** {@link repeatOf} for a bind: a synchronous repeat gets the credentials once the binding is made. */
  private async bindRepeatOf(
    running: RunState,
    workflowId: string,
    requestHash: string,
    req: BindRequest,
    async: boolean,
  ): Promise<BindOutcome> {
    const memo = running.memo;
    if (memo?.operation === 'bind' && memo.requestHash !== requestHash) {
      throw conflict('A binding with this id is being created with different attributes.');
    }
    if (memo?.operation === 'bind') {
      if (async) return { kind: 'accepted', operation: operationString('bind', running.runId) };
      return this.bound(this.deps.client.workflow.getHandle(workflowId, running.runId), req, false);
    }
    throw concurrencyError(
      `Another operation (${memo?.operation ?? 'unknown'}) is in progress on this binding.`,
    );
  }

  /** Waits for a synchronous bind and answers with the binding's credentials. */
  private async bound(handle: WorkflowHandle, req: BindRequest, created: boolean): Promise<BindOutcome> {
    const status = await this.waitSync(handle, 'bind');
    const record = await this.bindingRecord(req.instanceId, req.bindingId);
    if (!record) throw internalError('The binding record disappeared while the binding was created.');
    return { kind: 'done', created, response: await this.bindingResponse(record, status.responseSecret) };
  }

  private async start(
    type: OperationType,
    workflowId: string,
    input: InstanceRequest | BindingRequest,
    ids: { instanceId: string; bindingId?: string; serviceId: string; planId: string },
  ): Promise<
    | { handle: WorkflowHandleWithFirstExecutionRunId; running?: undefined }
    | { handle?: undefined; running: RunState }
  > {
    const memo = startingStatus(type, input);
    try {
      const handle = await this.deps.client.workflow.start(WORKFLOW_TYPES[type], {
        workflowId,
        taskQueue: this.deps.taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        memo: { [MEMO_KEY]: memo },
        typedSearchAttributes: [
          { key: OsbInstanceId, value: ids.instanceId },
          ...(ids.bindingId ? [{ key: OsbBindingId, value: ids.bindingId }] : []),
          { key: OsbServiceId, value: ids.serviceId },
          { key: OsbPlanId, value: ids.planId },
          { key: OsbOperation, value: type },
        ],
      });
      return { handle };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      // Another broker started an operation on the same id a moment ago.
      const running = await this.runningOperation(workflowId);
      if (!running) throw concurrencyError('Another operation finished just now; retry the request.');
      return { running };
    }
  }

  /** 202 when asynchronous; else waits for the workflow (bounded) and answers with its outcome. */
  private async outcome(
    handle: WorkflowHandle,
    runId: string,
    type: OperationType,
    async: boolean,
    created: boolean,
    dashboardUrl?: string,
  ): Promise<OperationOutcome> {
    if (async) {
      return {
        kind: 'accepted',
        operation: operationString(type, runId),
        ...(dashboardUrl ? { dashboardUrl } : {}),
      };
    }
    const status = await this.waitSync(handle, type);
    const url = status.dashboardUrl ?? dashboardUrl;
    return { kind: 'done', created, ...(url ? { dashboardUrl: url } : {}) };
  }

  /**
   * Waits for a synchronous operation. Past the bound it cancels the workflow, which rolls back
   * what it created, so a request that gave up leaves no orphan behind.
   */
  private async waitSync(handle: WorkflowHandle, type: OperationType): Promise<OperationStatus> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.deps.syncTimeoutMs);
    });
    try {
      const result = await Promise.race([handle.result() as Promise<OperationStatus>, timeout]);
      if (result === 'timeout') {
        await handle.cancel();
        const undone = isDeletion(type)
          ? 'was stopped; send the request again to finish it'
          : 'was rolled back';
        throw new OsbError(
          504,
          `The ${type} did not finish within ${Math.round(this.deps.syncTimeoutMs / 1000)} s and ${undone}.`,
          'Timeout',
        );
      }
      if (result.state === 'failed') {
        throw new OsbError(500, result.description ?? `The ${type} failed.`, 'OperationFailed');
      }
      return result;
    } finally {
      clearTimeout(timer);
    }
  }
}
