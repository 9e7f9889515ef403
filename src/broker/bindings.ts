/**
 * The binding operations: bind and unbind start (or find) the binding's operation workflow; the
 * binding and its last operation are read from the workflow's state and the records. A
 * synchronous bind answers with the credentials its workflow wrote to a Secret.
 */
import { ANNOTATIONS } from '../resources/names.js';
import { concurrencyError, conflict, gone, internalError, notFound } from '../osb/errors.js';
import type { RequestDigest } from './request-digest.js';
import { bindingTimes } from '../osb/binding-lifetime.js';
import { bindingAcceptsIncomplete, checkPredecessorBinding } from '../osb/rules.js';
import type {
  BindOutcome,
  BindRequest,
  BindingView,
  LastOperation,
  OperationOutcome,
  RequestMeta,
  UnbindRequest,
} from '../osb/service-broker.js';
import { parseApiVersion } from '../osb/version.js';
import { isCustomAction } from '../resources/actions.js';
import { bindingWorkflowId, instanceNamespace, instanceWorkflowId } from '../resources/names.js';
import type { SFServiceInstance } from '../resources/types.js';
import { operationString, type BindingRequest, type OperationStatus } from '../workflows/messages.js';
import { catalogPlan, type BrokerParts } from './deps.js';
import { takenElsewhere } from './instances.js';
import { recordAsLeftByRun, recordOfCreate } from './records.js';
import { RanBefore, type Ended, type RunState, type Started } from './workflow-runs.js';

/** The ServiceBroker methods of bindings. */
export function bindingOperations({ deps, runs, records, digests }: BrokerParts) {
  /**
   * {@link WorkflowRuns.repeatOf} for a bind: the same bind again gets its operation, or, when
   * synchronous, the credentials once the binding is made.
   *
   * @throws OsbError 409 for a bind of the same id with other attributes; 422 `ConcurrencyError`
   *   while an unbind runs.
   */
  async function repeatOf(
    running: RunState,
    workflowId: string,
    digest: RequestDigest,
    req: BindRequest,
    async: boolean,
  ): Promise<BindOutcome> {
    const memo = running.memo;
    if (memo?.operation === 'bind' && !digest.matches(memo.requestHash)) {
      throw conflict('A binding with this id is being created with different attributes.');
    }
    if (memo?.operation === 'bind') {
      if (async) return { kind: 'accepted', operation: operationString('bind', running.runId) };
      const awaited = { operation: 'bind', requestHash: memo.requestHash } as const;
      return bound(await runs.waitSync(runs.handle(workflowId, running.runId), awaited), req, false);
    }
    throw concurrencyError(
      `Another operation (${memo?.operation ?? 'unknown'}) is in progress on this binding.`,
    );
  }

  /** Answers a synchronous bind that ended with `status` with the binding's credentials. */
  async function bound(status: OperationStatus, req: BindRequest, created: boolean): Promise<BindOutcome> {
    const record = await records.binding(req.instanceId, req.bindingId);
    if (!record) throw internalError('The binding record disappeared while the binding was created.');
    return {
      kind: 'done',
      created,
      response: await records.bindingResponse(record, status.responseSecret),
    };
  }

  /**
   * Answers the synchronous bind that made the binding and its record with the credentials its run
   * wrote to `status.responseSecret`: the record keeps the times the run was started with.
   */
  async function made(
    status: OperationStatus,
    req: BindRequest,
    input: BindingRequest,
  ): Promise<BindOutcome> {
    if (!status.responseSecret) return bound(status, req, true);
    const namespace = instanceNamespace(input.instanceId, deps.instanceNamespace);
    return {
      kind: 'done',
      created: true,
      response: await records.responseIn(namespace, status.responseSecret, input),
    };
  }

  /**
   * A new bind waits for a custom action running on the instance (a backup, a restart) to end. The
   * record says when one may run; the instance's workflow says whether it still does.
   *
   * @throws OsbError 422 `ConcurrencyError` while one runs.
   */
  async function refuseWhileActionRuns(instance: SFServiceInstance): Promise<void> {
    if (instance.status?.lastAction?.state !== 'in progress') return;
    const instanceId = instance.spec.instanceId ?? instance.metadata.name;
    const running = await runs.running(instanceWorkflowId(instanceId));
    const action = running?.memo?.operation;
    if (action && isCustomAction(action))
      throw concurrencyError(
        `The action ${action} is in progress on the service instance; bind when it has finished.`,
      );
  }

  /**
   * What a rotation takes over from the binding it rotates, once that binding passes
   * `checkPredecessorBinding`: its parameters and `bind_resource` when the request sends none, so
   * the successor is bound alike with new credentials.
   *
   * @throws OsbError 400 `InvalidPredecessorBinding` when the predecessor cannot be rotated.
   */
  async function takenOver(req: BindRequest, predecessorBindingId: string): Promise<Partial<BindingRequest>> {
    const predecessor = await records.bindingForRotation(req.instanceId, predecessorBindingId);
    checkPredecessorBinding(req.instanceId, predecessorBindingId, predecessor, new Date());
    const { parameters, bindResource } = predecessor.spec;
    const appGuid = bindResource?.app_guid;
    return {
      ...(req.parameters === undefined && parameters ? { parameters } : {}),
      ...(req.bindResource === undefined && req.appGuid === undefined && bindResource
        ? { bindResource, ...(typeof appGuid === 'string' && appGuid ? { appGuid } : {}) }
        : {}),
    };
  }

  /**
   * A bind: decided on the instance, the binding's record and its running operation. Without a
   * record it starts only as the id's first run; when a run of the id ended before that start
   * (`ranBefore`), the record that run left decides instead.
   */
  async function bind(req: BindRequest, meta: RequestMeta, ranBefore = false): Promise<BindOutcome> {
    const instance = await records.instance(req.instanceId);
    if (!instance || instance.metadata.deletionTimestamp)
      throw notFound('The service instance does not exist.');
    if (instance.status?.operation === 'provision' && instance.status.state === 'failed') {
      // As GET instance says: a failed provision leaves no instance to bind to (retrying will not help).
      throw notFound('The service instance failed to provision; it cannot be bound.');
    }
    if (instance.status?.state !== 'succeeded' && instance.status?.operation === 'provision') {
      throw concurrencyError('The service instance is still being provisioned.');
    }
    const plan = catalogPlan(deps.catalog, req.planId);
    const digest = digests.bind(req);
    const workflowId = bindingWorkflowId(req.instanceId, req.bindingId);
    const async = Boolean(plan.spec.manager?.asyncBinding) && req.acceptsIncomplete;
    const [{ record, elsewhere }, running] = await recordOfCreate(
      () => records.findBinding(req.instanceId, req.bindingId),
      () => runs.running(workflowId),
    );
    if (elsewhere) throw takenElsewhere('binding');
    if (running) return repeatOf(running, workflowId, digest, req, async);
    if (record?.metadata.deletionTimestamp) throw concurrencyError('The binding is being deleted.');
    if (record) {
      if (!digest.matches(record.metadata.annotations?.[ANNOTATIONS.requestHash])) {
        throw conflict('A binding with this id already exists with different attributes.');
      }
      if (record.status?.state === 'succeeded') {
        return { kind: 'done', created: false, response: await records.bindingResponse(record) };
      }
    }
    await refuseWhileActionRuns(instance);
    // Checked only for a binding still to be made: a repeat of a rotation is answered above,
    // even once its predecessor is unbound.
    const rotation = req.predecessorBindingId ? await takenOver(req, req.predecessorBindingId) : {};
    const { acceptsIncomplete: _, ...request } = req;
    const input: BindingRequest = {
      ...request,
      ...rotation,
      ...bindingTimes(plan, new Date()),
      ...runs.envelope(meta, digest, plan),
    };
    let started: Started | Ended;
    try {
      started = await runs.start('bind', workflowId, input, {
        instance,
        wait: !async,
        firstOfItsId: !record && !ranBefore,
      });
    } catch (err) {
      if (err instanceof RanBefore) return bind(req, meta, true);
      throw err;
    }
    if (started.running) return repeatOf(started.running, workflowId, digest, req, async);
    if ('ended' in started)
      return record ? bound(started.ended!, req, true) : made(started.ended!, req, input);
    return { kind: 'accepted', operation: operationString('bind', started.handle!.firstExecutionRunId) };
  }

  return {
    bind,

    async unbind(req: UnbindRequest, meta: RequestMeta): Promise<OperationOutcome> {
      const workflowId = bindingWorkflowId(req.instanceId, req.bindingId);
      const [{ record, elsewhere }, running] = await recordAsLeftByRun(
        () => records.findBinding(req.instanceId, req.bindingId),
        () => runs.running(workflowId),
      );
      if (elsewhere) throw gone('The service binding does not exist.');
      // The binding's own plan decides, not the one the request names (which may be another).
      const plan = deps.catalog.plan(record?.spec.planId ?? req.planId);
      if (plan) bindingAcceptsIncomplete(plan, req.acceptsIncomplete, parseApiVersion(meta.apiVersion));
      const async = Boolean(plan?.spec.manager?.asyncBinding) && req.acceptsIncomplete;
      const digest = digests.unbind(req.bindingId);
      const envelope = runs.envelope(meta, digest, plan);
      const ids = { instanceId: req.instanceId, bindingId: req.bindingId };
      return runs.deletion('unbind', workflowId, { ids, running, record }, { envelope, digest }, async);
    },

    async getBinding(instanceId: string, bindingId: string): Promise<BindingView | undefined> {
      const record = await records.binding(instanceId, bindingId);
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
        ...(type === 'bind' && settled === 'succeeded'
          ? { response: await records.bindingResponse(record) }
          : {}),
      };
    },

    bindingLastOperation(instanceId: string, bindingId: string, operation?: string): Promise<LastOperation> {
      // As the instance's last_operation: a read of the record a moment behind serves.
      return runs.lastOperation('binding', bindingWorkflowId(instanceId, bindingId), operation, () =>
        records.findBinding(instanceId, bindingId, 'cached'),
      );
    },
  };
}
