/**
 * The service instance routes. Each parses and checks the request in the order the spec's clients
 * expect (spec §9.5: version, then AsyncRequired, then the rest of the body, then existence), calls
 * one ServiceBroker method and maps its answer.
 */
import { badRequest, concurrencyError, notFound } from '../../osb/errors.js';
import {
  optionalQuery,
  parseAcceptsIncomplete,
  parseProvisionFields,
  parseUpdateFields,
  requiredQuery,
  requiredString,
} from '../../osb/requests.js';
import { instanceBody, instanceLastOperationBody, operationReply, retryAfter } from '../../osb/responses.js';
import {
  checkContextUpdate,
  checkMaintenanceInfo,
  checkPlanChange,
  requireAsyncSupport,
  resolvePlan,
  resolveService,
} from '../../osb/rules.js';
import { validateParameters } from '../../osb/schemas.js';
import { readJsonBody } from '../body.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import { lookup, param, send, type RouteDeps } from './shared.js';

const PATH = '/service_instances/:instance_id';

export function instanceRoutes(router: RouteTable<OsbState>, deps: RouteDeps): void {
  const { broker, catalog, maxBodyBytes } = deps;

  /** PUT /v2/service_instances/:instance_id (provision) */
  router.put(PATH, async (ctx) => {
    const acceptsIncomplete = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
    const body = await readJsonBody(ctx, maxBodyBytes);
    const serviceId = requiredString(body.service_id, 'service_id');
    const planId = requiredString(body.plan_id, 'plan_id');
    const { plan } = resolvePlan(lookup(catalog), serviceId, planId);
    requireAsyncSupport(plan, acceptsIncomplete);
    const fields = parseProvisionFields(body);
    checkMaintenanceInfo(plan, fields.maintenanceInfo);
    validateParameters(plan, 'service_instance.create', fields.parameters);
    const outcome = await broker.provision(
      { instanceId: param(ctx, 'instance_id'), serviceId, planId, ...fields, acceptsIncomplete },
      ctx.state.meta,
    );
    send(ctx, operationReply('provision', outcome, acceptsIncomplete));
  });

  /** PATCH /v2/service_instances/:instance_id (update) */
  router.patch(PATH, async (ctx) => {
    const instanceId = param(ctx, 'instance_id');
    const acceptsIncomplete = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
    const body = await readJsonBody(ctx, maxBodyBytes);
    const serviceId = requiredString(body.service_id, 'service_id');
    const plans = lookup(catalog);
    const service = resolveService(plans, serviceId);
    const fields = parseUpdateFields(body);
    const target =
      fields.planId === undefined ? undefined : resolvePlan(plans, serviceId, fields.planId).plan;
    if (target) requireAsyncSupport(target, acceptsIncomplete);

    const instance = await broker.getInstance(instanceId);
    if (!instance) throw notFound('The service instance does not exist.');
    if (instance.serviceId !== serviceId) {
      throw badRequest(`The service instance belongs to service_id ${instance.serviceId}, not ${serviceId}.`);
    }
    // A running update may be this very request again (the service layer answers 202 then);
    // a running provision or deprovision never is.
    const running = instance.operation?.state === 'in progress' ? instance.operation.type : undefined;
    if (running === 'provision' || running === 'deprovision') {
      throw concurrencyError(`The service instance is being ${running}ed; update it when that has finished.`);
    }
    const current = plans.plan(instance.planId);
    const plan = target ?? current;
    if (!plan) {
      throw badRequest(
        `The plan ${instance.planId} of the service instance is no longer in the catalog; name a plan_id to move it to.`,
      );
    }
    if (!target) requireAsyncSupport(plan, acceptsIncomplete);
    const planChange = plan.spec.id !== instance.planId;
    if (planChange) checkPlanChange(service, current, plan);
    checkContextUpdate(service, {
      planChange,
      parameters: fields.parameters !== undefined,
      maintenanceInfo: fields.maintenanceInfo !== undefined,
      context: fields.context !== undefined,
    });
    checkMaintenanceInfo(plan, fields.maintenanceInfo);
    validateParameters(plan, 'service_instance.update', fields.parameters);
    const outcome = await broker.update(
      { instanceId, serviceId, ...fields, acceptsIncomplete },
      ctx.state.meta,
    );
    send(ctx, operationReply('update', outcome, acceptsIncomplete));
  });

  /** DELETE /v2/service_instances/:instance_id (deprovision) */
  router.delete(PATH, async (ctx) => {
    const acceptsIncomplete = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
    const serviceId = requiredQuery(ctx.query.service_id, 'service_id');
    const planId = requiredQuery(ctx.query.plan_id, 'plan_id');
    const { plan } = resolvePlan(lookup(catalog), serviceId, planId);
    requireAsyncSupport(plan, acceptsIncomplete);
    const outcome = await broker.deprovision(
      { instanceId: param(ctx, 'instance_id'), serviceId, planId, acceptsIncomplete },
      ctx.state.meta,
    );
    send(ctx, operationReply('deprovision', outcome, acceptsIncomplete));
  });

  /** GET /v2/service_instances/:instance_id (service_id and plan_id in the query are hints, unused) */
  router.get(PATH, async (ctx) => {
    ctx.body = instanceBody(await broker.getInstance(param(ctx, 'instance_id')));
  });

  /** GET /v2/service_instances/:instance_id/last_operation */
  router.get(`${PATH}/last_operation`, async (ctx) => {
    const operation = optionalQuery(ctx.query.operation, 'operation');
    const last = await broker.instanceLastOperation(param(ctx, 'instance_id'), operation);
    const retry = retryAfter(last);
    if (retry !== undefined) ctx.set('Retry-After', retry);
    ctx.body = instanceLastOperationBody(last);
  });
}
