/**
 * The service instance routes. Each parses and checks the request in the order the spec's clients
 * expect (spec §9.5: version, then AsyncRequired, then the rest of the body, then existence), calls
 * one ServiceBroker method and maps its answer. What needs the instance is the service's to decide.
 */
import {
  optionalQuery,
  parseAcceptsIncomplete,
  parseProvisionFields,
  parseUpdateFields,
  requiredString,
} from '../../osb/requests.js';
import { instanceBody, instanceLastOperationBody, operationReply, retryAfter } from '../../osb/responses.js';
import { checkMaintenanceInfo, requireAsyncSupport, resolvePlan, resolveService } from '../../osb/rules.js';
import { validateParameters } from '../../osb/schemas.js';
import { readJsonBody } from '../body.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import {
  lookup,
  operationParam,
  param,
  readPlanBody,
  readPlanQuery,
  send,
  type RouteDeps,
} from './shared.js';

const PATH = '/service_instances/:instance_id';

export function instanceRoutes(router: RouteTable<OsbState>, deps: RouteDeps): void {
  const { broker, catalog, maxBodyBytes } = deps;

  /** PUT /v2/service_instances/:instance_id (provision) */
  router.put(PATH, async (ctx) => {
    const { acceptsIncomplete, body, serviceId, planId, plan } = await readPlanBody(ctx, deps);
    requireAsyncSupport(plan, acceptsIncomplete);
    const fields = parseProvisionFields(body);
    checkMaintenanceInfo(plan, fields.maintenanceInfo);
    validateParameters(plan, 'service_instance.create', fields.parameters);
    const outcome = await broker.provision(
      { instanceId: operationParam(ctx, 'instance_id'), serviceId, planId, ...fields, acceptsIncomplete },
      ctx.state.meta,
    );
    send(ctx, operationReply('provision', outcome, acceptsIncomplete));
  });

  /**
   * PATCH /v2/service_instances/:instance_id (update). What the request alone decides comes first
   * (AsyncRequired for the plan it names before the rest); what needs the instance, the service
   * decides on the instance it reads (`checkUpdate`).
   */
  router.patch(PATH, async (ctx) => {
    const acceptsIncomplete = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
    const body = await readJsonBody(ctx, maxBodyBytes);
    const serviceId = requiredString(body.service_id, 'service_id');
    const plans = lookup(catalog);
    resolveService(plans, serviceId);
    const fields = parseUpdateFields(body);
    if (fields.planId !== undefined) {
      requireAsyncSupport(resolvePlan(plans, serviceId, fields.planId).plan, acceptsIncomplete);
    }
    const outcome = await broker.update(
      { instanceId: operationParam(ctx, 'instance_id'), serviceId, ...fields, acceptsIncomplete },
      ctx.state.meta,
    );
    send(ctx, operationReply('update', outcome, acceptsIncomplete));
  });

  /** DELETE /v2/service_instances/:instance_id (deprovision) */
  router.delete(PATH, async (ctx) => {
    const { acceptsIncomplete, serviceId, planId, plan } = readPlanQuery(ctx, deps);
    requireAsyncSupport(plan, acceptsIncomplete);
    const outcome = await broker.deprovision(
      { instanceId: operationParam(ctx, 'instance_id'), serviceId, planId, acceptsIncomplete },
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
