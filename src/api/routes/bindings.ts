/**
 * The service binding routes. Bindings answer 202 only from API version 2.14, and only when the
 * request sends accepts_incomplete=true (see `bindingAcceptsIncomplete`).
 */
import { optionalQuery, parseBindFields } from '../../osb/requests.js';
import {
  bindReply,
  bindingBody,
  bindingLastOperationBody,
  operationReply,
  retryAfter,
} from '../../osb/responses.js';
import {
  bindingAcceptsIncomplete,
  checkBindable,
  checkBindingRotation,
  checkRequiresApp,
  checkRetrievable,
} from '../../osb/rules.js';
import { validateParameters } from '../../osb/schemas.js';
import { FEATURES, requireVersion } from '../../osb/version.js';
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

const PATH = '/service_instances/:instance_id/service_bindings/:binding_id';

export function bindingRoutes(router: RouteTable<OsbState>, deps: RouteDeps): void {
  const { broker, catalog } = deps;
  const sendBindingMetadata = deps.sendBindingMetadata ?? true;

  /** PUT /v2/service_instances/:instance_id/service_bindings/:binding_id (bind) */
  router.put(PATH, async (ctx) => {
    const platformRoute = platformOf(ctx);
    const named = await readPlanBody(ctx, deps);
    const { body, serviceId, planId, service, plan } = named;
    const acceptsIncomplete = bindingAcceptsIncomplete(plan, named.acceptsIncomplete, ctx.state.version);
    checkBindable(service, plan);
    const { predecessorBindingId, ...fields } = parseBindFields(body);
    checkBindingRotation(plan, predecessorBindingId);
    checkRequiresApp(plan, fields.appGuid);
    validateParameters(plan, 'service_binding.create', fields.parameters);
    const outcome = await broker.bind(
      {
        instanceId: operationParam(ctx, 'instance_id'),
        bindingId: operationParam(ctx, 'binding_id'),
        serviceId,
        planId,
        ...fields,
        ...(predecessorBindingId !== undefined ? { predecessorBindingId } : {}),
        ...(platformRoute ? { platformRoute } : {}),
        acceptsIncomplete,
      },
      ctx.state.meta,
    );
    send(ctx, bindReply(outcome, acceptsIncomplete, sendBindingMetadata));
  });

  /** DELETE /v2/service_instances/:instance_id/service_bindings/:binding_id (unbind) */
  router.delete(PATH, async (ctx) => {
    const named = readPlanQuery(ctx, deps);
    const { serviceId, planId, plan } = named;
    const acceptsIncomplete = bindingAcceptsIncomplete(plan, named.acceptsIncomplete, ctx.state.version);
    const outcome = await broker.unbind(
      {
        instanceId: operationParam(ctx, 'instance_id'),
        bindingId: operationParam(ctx, 'binding_id'),
        serviceId,
        planId,
        acceptsIncomplete,
      },
      ctx.state.meta,
    );
    send(ctx, operationReply('unbind', outcome, acceptsIncomplete));
  });

  /**
   * GET /v2/service_instances/:instance_id/service_bindings/:binding_id: from API version 2.14
   * (412 before), of services with `bindings_retrievable` (400 otherwise).
   */
  router.get(PATH, async (ctx) => {
    requireVersion(ctx.state.version, FEATURES.fetchingResources, 'Fetching a service binding');
    const view = await broker.getBinding(param(ctx, 'instance_id'), param(ctx, 'binding_id'));
    if (view) checkRetrievable(lookup(catalog).service(view.serviceId), 'binding');
    ctx.body = bindingBody(view);
  });

  /** GET /v2/service_instances/:instance_id/service_bindings/:binding_id/last_operation */
  router.get(`${PATH}/last_operation`, async (ctx) => {
    const operation = optionalQuery(ctx.query.operation, 'operation');
    const last = await broker.bindingLastOperation(
      param(ctx, 'instance_id'),
      param(ctx, 'binding_id'),
      operation,
    );
    const retry = retryAfter(last);
    if (retry !== undefined) ctx.set('Retry-After', retry);
    ctx.body = bindingLastOperationBody(last);
  });
}
