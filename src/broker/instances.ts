/**
 * The instance operations: provision, update and deprovision start (or find) the instance's
 * operation workflow; the instance and its last operation are read from the workflow's state and
 * the record.
 */
import { ANNOTATIONS } from '../resources/names.js';
import { catalogLookup } from '../osb/catalog.js';
import { concurrencyError, conflict, gone, notFound, type OsbError } from '../osb/errors.js';
import { checkPlanOpen, checkUpdate, requireAsyncSupport } from '../osb/rules.js';
import type {
  DeprovisionRequest,
  InstanceView,
  LastOperation,
  OperationOutcome,
  ProvisionRequest,
  RequestMeta,
  UpdateRequest,
} from '../osb/service-broker.js';
import { instanceWorkflowId } from '../resources/names.js';
import type { SFServiceInstanceSpec } from '../resources/types.js';
import { renderDashboardUrl } from '../templates/index.js';
import type { InstanceRequest } from '../workflows/messages.js';
import { catalogPlan, type BrokerParts } from './deps.js';
import { checkQuotas, type QuotaDeps } from './quotas.js';
import { instanceView, recordAsLeftByRun, recordOfCreate, withOwnRun } from './records.js';
import { canonicalJson } from '../osb/canonical-json.js';
import { RanBefore, type Ended, type Started } from './workflow-runs.js';

/** The ServiceBroker methods of instances. */
export function instanceOperations({ deps, runs, records, digests }: BrokerParts) {
  const quotas: QuotaDeps = {
    records,
    plans: () => deps.catalog.plans(),
    ...(deps.entitlements ? { entitlements: deps.entitlements } : {}),
    ...(deps.onEntitlementUnanswered ? { onUnanswered: deps.onEntitlementUnanswered } : {}),
  };
  /**
   * A provision: decided on the instance's record and its running operation. Without a record it
   * starts only as the id's first run; when a run of the id ended before that start (`ranBefore`),
   * the record that run left decides instead.
   */
  async function provision(
    req: ProvisionRequest,
    meta: RequestMeta,
    ranBefore = false,
  ): Promise<OperationOutcome> {
    const plan = catalogPlan(deps.catalog, req.planId);
    const digest = digests.instance(req);
    const workflowId = instanceWorkflowId(req.instanceId);
    const [{ record, elsewhere }, running] = await recordOfCreate(
      () => records.findInstance(req.instanceId),
      () => runs.running(workflowId),
    );
    if (elsewhere) throw takenElsewhere('instance');
    const async = Boolean(plan.spec.manager?.async);
    if (running) return runs.repeatOf(running, workflowId, 'provision', digest, async);
    if (record?.metadata.deletionTimestamp) throw concurrencyError('The instance is being deleted.');
    if (record) {
      if (!digest.matches(record.metadata.annotations?.[ANNOTATIONS.requestHash])) {
        throw conflict('An instance with this id already exists with different attributes.');
      }
      if (record.status?.state === 'succeeded') {
        const { dashboardUrl } = record.status;
        return { kind: 'done', created: false, ...(dashboardUrl ? { dashboardUrl } : {}) };
      }
      // Identical, but the last attempt failed: provision again.
    }
    const service = deps.catalog.service(plan.spec.serviceId);
    if (service) checkPlanOpen(service, plan);
    await checkQuotas(quotas, {
      operation: 'provision',
      instanceId: req.instanceId,
      serviceId: req.serviceId,
      plan,
      ...(req.organizationGuid ? { organizationGuid: req.organizationGuid } : {}),
      ...(req.spaceGuid ? { spaceGuid: req.spaceGuid } : {}),
      ...(req.context ? { context: req.context } : {}),
      ...(req.platformRoute ? { platformRoute: req.platformRoute } : {}),
    });
    const dashboardUrl = renderDashboardUrl(plan, service, req);
    const { acceptsIncomplete: _, ...request } = req;
    const input: InstanceRequest = {
      ...request,
      ...(dashboardUrl ? { dashboardUrl } : {}),
      ...runs.envelope(meta, digest, plan),
    };
    let started: Started | Ended;
    try {
      started = await runs.start('provision', workflowId, input, {
        wait: !async,
        firstOfItsId: !record && !ranBefore,
      });
    } catch (err) {
      if (err instanceof RanBefore) return provision(req, meta, true);
      throw err;
    }
    return runs.answer(started, workflowId, 'provision', digest, async, dashboardUrl);
  }

  return {
    provision,

    /**
     * Reads the instance once, decides on it ({@link checkUpdate}), and starts the update with what
     * the request sends over what the record holds.
     */
    async update(req: UpdateRequest, meta: RequestMeta): Promise<OperationOutcome> {
      const workflowId = instanceWorkflowId(req.instanceId);
      const [{ record }, running] = await recordAsLeftByRun(
        () => records.findInstance(req.instanceId),
        () => runs.running(workflowId),
      );
      const catalog = catalogLookup(deps.catalog.services(), deps.catalog.plans());
      const plan = checkUpdate(catalog, instanceView(req.instanceId, record, running), req);
      if (!record || record.metadata.deletionTimestamp)
        throw notFound('The service instance does not exist.');
      const recorded = record.spec;
      const updated = updateOf(recorded, req);
      const digest = digests.instance(updated);
      const async = Boolean(plan.spec.manager?.async);
      if (running) return runs.repeatOf(running, workflowId, 'update', digest, async);
      if (updated.planId !== recorded.planId) {
        await checkQuotas(quotas, {
          operation: 'update',
          instanceId: req.instanceId,
          serviceId: updated.serviceId,
          plan,
          previousPlanId: recorded.planId,
          ...(updated.organizationGuid ? { organizationGuid: updated.organizationGuid } : {}),
          ...(updated.spaceGuid ? { spaceGuid: updated.spaceGuid } : {}),
          ...(updated.context ? { context: updated.context } : {}),
          ...(req.platformRoute ? { platformRoute: req.platformRoute } : {}),
        });
      }
      if (
        digest.matches(record.metadata.annotations?.[ANNOTATIONS.requestHash]) &&
        record.status?.state === 'succeeded' &&
        (req.context === undefined || canonicalJson(req.context) === canonicalJson(recorded.context))
      ) {
        return { kind: 'done', created: false };
      }
      const input: InstanceRequest = {
        instanceId: req.instanceId,
        ...updated,
        previousValues: req.previousValues,
        ...runs.envelope(meta, digest, plan),
      };
      const started = await runs.start('update', workflowId, input, { instance: record, wait: !async });
      return runs.answer(started, workflowId, 'update', digest, async);
    },

    /**
     * An update of the instance with the request its record holds (plan, parameters, context), run
     * even when nothing in it changed: what brings an instance to its plan's current templates.
     * Never waits: the answer is the operation started, or the same update already running.
     *
     * @throws OsbError 404 without the instance (or while it is deleted); 422 `ConcurrencyError`
     *   while another operation runs on it; 400 when its plan left the catalog.
     */
    async updateAsRecorded(instanceId: string, meta: RequestMeta): Promise<OperationOutcome> {
      const workflowId = instanceWorkflowId(instanceId);
      const [{ record }, running] = await recordAsLeftByRun(
        () => records.findInstance(instanceId),
        () => runs.running(workflowId),
      );
      if (!record || record.metadata.deletionTimestamp)
        throw notFound('The service instance does not exist.');
      const plan = catalogPlan(deps.catalog, record.spec.planId);
      const updated = updateOf(record.spec, {});
      const digest = digests.instance(updated);
      if (running) return runs.repeatOf(running, workflowId, 'update', digest, true);
      const input: InstanceRequest = { instanceId, ...updated, ...runs.envelope(meta, digest, plan) };
      const started = await runs.start('update', workflowId, input, { instance: record });
      return runs.answer(started, workflowId, 'update', digest, true);
    },

    async deprovision(req: DeprovisionRequest, meta: RequestMeta): Promise<OperationOutcome> {
      const workflowId = instanceWorkflowId(req.instanceId);
      const [{ record, elsewhere }, running] = await recordAsLeftByRun(
        () => records.findInstance(req.instanceId),
        () => runs.running(workflowId),
      );
      if (elsewhere) throw gone('The service instance does not exist.');
      // The instance's own plan decides, not the one the request names (which may be another).
      const plan = deps.catalog.plan(record?.spec.planId ?? req.planId);
      if (plan) requireAsyncSupport(plan, req.acceptsIncomplete);
      const digest = digests.deprovision(req.instanceId);
      const envelope = runs.envelope(meta, digest, plan);
      const found = { ids: { instanceId: req.instanceId }, running, record };
      return runs.deletion(
        'deprovision',
        workflowId,
        found,
        { envelope, digest },
        Boolean(plan?.spec.manager?.async),
      );
    },

    async getInstance(instanceId: string): Promise<InstanceView | undefined> {
      const [{ record, elsewhere }, running] = await withOwnRun(
        records.findInstance(instanceId),
        runs.running(instanceWorkflowId(instanceId)),
      );
      return elsewhere ? undefined : instanceView(instanceId, record, running);
    },

    instanceLastOperation(instanceId: string, operation?: string): Promise<LastOperation> {
      // The record tells whose the instance is (that never changes), and answers only when its run
      // cannot: a read a moment behind the latest write serves.
      return runs.lastOperation('instance', instanceWorkflowId(instanceId), operation, () =>
        records.findInstance(instanceId, 'cached'),
      );
    },
  };
}

/**
 * 409 for a create whose id another installation sharing the master holds: its record has the
 * name this one's would have, so this one can neither make it nor answer for it.
 */
export const takenElsewhere = (kind: 'instance' | 'binding'): OsbError =>
  conflict(`A service ${kind} with this id exists, made through another installation of the broker.`);

/** An update's request: what it sends replaces what the record holds; the rest stays. */
function updateOf(
  recorded: SFServiceInstanceSpec,
  req: Pick<UpdateRequest, 'planId' | 'context' | 'parameters' | 'maintenanceInfo'>,
) {
  return {
    serviceId: recorded.serviceId,
    planId: req.planId ?? recorded.planId,
    organizationGuid: recorded.organizationGuid,
    spaceGuid: recorded.spaceGuid,
    context: req.context ?? recorded.context,
    parameters: req.parameters ?? recorded.parameters,
    maintenanceInfo: req.maintenanceInfo ?? recorded.maintenanceInfo,
  };
}
