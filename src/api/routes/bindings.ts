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
} from '../../osb/rules.js';
import { validateParameters } from '../../osb/schemas.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import { operationParam, param, readPlanBody, readPlanQuery, send, type RouteDeps } from './shared.js';

const PATH = '/service_instances/:instance_id/service_bindings/:binding_id';

export function bindingRoutes(router: RouteTable<OsbState>, deps: RouteDeps): void {
  const { broker } = deps;

  /** PUT /v2/service_instances/:instance_id/service_bindings/:binding_id (bind) */
  router.put(PATH, async (ctx) => {
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
        acceptsIncomplete,
      },
      ctx.state.meta,
    );
    send(ctx, bindReply(outcome, acceptsIncomplete));
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

  /** GET /v2/service_instances/:instance_id/service_bindings/:binding_id */
  router.get(PATH, async (ctx) => {
    ctx.body = bindingBody(await broker.getBinding(param(ctx, 'instance_id'), param(ctx, 'binding_id')));
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
