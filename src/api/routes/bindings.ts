/**
 * The service binding routes. Bindings answer 202 only from API version 2.14, and only when the
 * request sends accepts_incomplete=true (see `bindingAcceptsIncomplete`).
 */
import {
  optionalQuery,
  parseAcceptsIncomplete,
  parseBindFields,
  requiredQuery,
  requiredString,
} from '../../osb/requests.js';
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
  resolvePlan,
} from '../../osb/rules.js';
import { validateParameters } from '../../osb/schemas.js';
import { readJsonBody } from '../body.js';
import type { OsbState } from '../middleware.js';
import type { RouteTable } from '../router.js';
import { lookup, param, send, type RouteDeps } from './shared.js';

const PATH = '/service_instances/:instance_id/service_bindings/:binding_id';

export function bindingRoutes(router: RouteTable<OsbState>, deps: RouteDeps): void {
  const { broker, catalog, maxBodyBytes } = deps;

  /** PUT /v2/service_instances/:instance_id/service_bindings/:binding_id (bind) */
  router.put(PATH, async (ctx) => {
    const requested = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
    const body = await readJsonBody(ctx, maxBodyBytes);
    const serviceId = requiredString(body.service_id, 'service_id');
    const planId = requiredString(body.plan_id, 'plan_id');
    const { service, plan } = resolvePlan(lookup(catalog), serviceId, planId);
    const acceptsIncomplete = bindingAcceptsIncomplete(plan, requested, ctx.state.version);
    checkBindable(service, plan);
    const { predecessorBindingId, ...fields } = parseBindFields(body);
    checkBindingRotation(plan, predecessorBindingId);
    checkRequiresApp(plan, fields.appGuid);
    validateParameters(plan, 'service_binding.create', fields.parameters);
    const outcome = await broker.bind(
      {
        instanceId: param(ctx, 'instance_id'),
        bindingId: param(ctx, 'binding_id'),
        serviceId,
        planId,
        ...fields,
        acceptsIncomplete,
      },
      ctx.state.meta,
    );
    send(ctx, bindReply(outcome, acceptsIncomplete));
  });

  /** DELETE /v2/service_instances/:instance_id/service_bindings/:binding_id (unbind) */
  router.delete(PATH, async (ctx) => {
    const requested = parseAcceptsIncomplete(ctx.query.accepts_incomplete);
    const serviceId = requiredQuery(ctx.query.service_id, 'service_id');
    const planId = requiredQuery(ctx.query.plan_id, 'plan_id');
    const { plan } = resolvePlan(lookup(catalog), serviceId, planId);
    const acceptsIncomplete = bindingAcceptsIncomplete(plan, requested, ctx.state.version);
    const outcome = await broker.unbind(
      {
        instanceId: param(ctx, 'instance_id'),
        bindingId: param(ctx, 'binding_id'),
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
