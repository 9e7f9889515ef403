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
import { checkOfferedOn } from '../../osb/platforms.js';
import {
  checkMaintenanceInfo,
  checkRetrievable,
  requireAsyncSupport,
  resolvePlan,
  resolveService,
} from '../../osb/rules.js';
import { validateParameters } from '../../osb/schemas.js';
import { FEATURES, requireVersion } from '../../osb/version.js';
import { readJsonBody } from '../body.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import {
  lookup,
  operationParam,
  param,
  platformOf,
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
    const platformRoute = platformOf(ctx);
    const { acceptsIncomplete, body, serviceId, planId, service, plan } = await readPlanBody(ctx, deps);
    checkOfferedOn(service, plan, platformRoute);
    requireAsyncSupport(plan, acceptsIncomplete);
    const fields = parseProvisionFields(body);
    checkMaintenanceInfo(plan, fields.maintenanceInfo);
    validateParameters(plan, 'service_instance.create', fields.parameters);
    const outcome = await broker.provision(
      {
        instanceId: operationParam(ctx, 'instance_id'),
        serviceId,
        planId,
        ...fields,
        ...(platformRoute ? { platformRoute } : {}),
        acceptsIncomplete,
      },
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
    const platformRoute = platformOf(ctx);
    const acceptsIncomplete = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
    const body = await readJsonBody(ctx, maxBodyBytes);
    const serviceId = requiredString(body.service_id, 'service_id');
    const plans = lookup(catalog);
    resolveService(plans, serviceId);
    const fields = parseUpdateFields(body);
    if (fields.planId !== undefined) {
      const { service, plan } = resolvePlan(plans, serviceId, fields.planId);
      checkOfferedOn(service, plan, platformRoute);
      requireAsyncSupport(plan, acceptsIncomplete);
    }
    const outcome = await broker.update(
      {
        instanceId: operationParam(ctx, 'instance_id'),
        serviceId,
        ...fields,
        ...(platformRoute ? { platformRoute } : {}),
        acceptsIncomplete,
      },
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

  /**
   * GET /v2/service_instances/:instance_id (service_id and plan_id in the query are hints, unused):
   * from API version 2.14 (412 before), of services with `instances_retrievable` (400 otherwise).
   */
  router.get(PATH, async (ctx) => {
    requireVersion(ctx.state.version, FEATURES.fetchingResources, 'Fetching a service instance');
    const view = await broker.getInstance(param(ctx, 'instance_id'));
    if (view) checkRetrievable(lookup(catalog).service(view.serviceId), 'instance');
    ctx.body = instanceBody(view);
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
