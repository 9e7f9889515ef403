/**
 * The OSB API (v2.12 to v2.17) as a Koa app. Handlers parse and validate, call the service layer
 * (ServiceBroker), and map its outcome; errors become responses in one place (middleware.ts).
 */
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import type { BindingResponse, CatalogSource, ServiceBroker } from '../broker/types.js';
import type { MaintenanceInfo } from '../resources/types.js';
import { osbCatalog } from '../osb/catalog.js';
import { badRequest, concurrencyError, notFound } from '../osb/errors.js';
import {
  checkBindable,
  checkMaintenanceInfo,
  checkPlanChange,
  requireAsyncSupport,
  resolvePlan,
  type CatalogLookup,
} from '../osb/rules.js';
import { validateParameters } from '../osb/schemas.js';
import {
  basicAuth,
  errorHandler,
  osbHeaders,
  readJsonObject,
  type Logger,
  type OsbState,
} from './middleware.js';

export interface AppOptions {
  readonly broker: ServiceBroker;
  readonly catalog: CatalogSource & CatalogLookup;
  /** Accepted Basic-auth credentials (more than one while rotating). */
  readonly credentials: () => readonly { username: string; password: string }[];
  /** @default 1 MiB */
  readonly maxBodyBytes?: number;
  readonly log?: Logger;
}

const silent: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

// ------------------------------------------------------------------ request parsing

function acceptsIncomplete(ctx: Context): boolean {
  const value = ctx.query.accepts_incomplete;
  if (value === undefined) return false;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw badRequest('accepts_incomplete must be true or false.');
}

function requiredString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw badRequest(`${name} is required.`);
  return value;
}

function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw badRequest(`${name} must be a string.`);
  return value;
}

function optionalObject(value: unknown, name: string): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${name} must be an object.`);
  return value as Record<string, unknown>;
}

function maintenanceInfo(value: unknown): MaintenanceInfo | undefined {
  const info = optionalObject(value, 'maintenance_info');
  if (!info || info.version === undefined || info.version === '') return undefined;
  if (typeof info.version !== 'string') throw badRequest('maintenance_info.version must be a string.');
  return {
    version: info.version,
    ...(typeof info.description === 'string' ? { description: info.description } : {}),
  };
}

const queryString = (ctx: Context, name: string): string | undefined => {
  const value = ctx.query[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

const bindingBody = (response: BindingResponse): Record<string, unknown> => ({ ...response });

// ------------------------------------------------------------------ the app

export function createApp(options: AppOptions): Koa {
  const { broker, catalog } = options;
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const log = options.log ?? silent;
  const app = new Koa();
  app.silent = true;
  app.use(errorHandler(log));

  const health = new Router();
  health.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  const osb = new Router<OsbState>({ prefix: '/v2' });
  osb.use(basicAuth(options.credentials), osbHeaders);

  /** GET /v2/catalog */
  let catalogCache: { key: string; json: string } | undefined;
  osb.get('/catalog', (ctx) => {
    // Rebuilt only when a service or plan changed (their resourceVersions say so).
    const services = catalog.services();
    const plans = catalog.plans();
    const key = [...services, ...plans]
      .map((o) => `${o.metadata.uid}@${o.metadata.resourceVersion}`)
      .join(',');
    if (catalogCache?.key !== key) catalogCache = { key, json: JSON.stringify(osbCatalog(services, plans)) };
    ctx.type = 'application/json';
    ctx.body = catalogCache.json;
  });

  /** PUT /v2/service_instances/:instance_id (provision) */
  osb.put('/service_instances/:instance_id', async (ctx) => {
    const incomplete = acceptsIncomplete(ctx);
    const body = await readJsonObject(ctx, maxBody);
    const { service, plan } = resolvePlan(
      catalog,
      requiredString(body.service_id, 'service_id'),
      requiredString(body.plan_id, 'plan_id'),
    );
    requireAsyncSupport(plan, incomplete);
    const parameters = optionalObject(body.parameters, 'parameters');
    const requested = maintenanceInfo(body.maintenance_info);
    checkMaintenanceInfo(plan, requested);
    validateParameters(plan.spec.schemas?.service_instance?.create?.parameters, parameters, 'provision');
    const outcome = await broker.provision(
      {
        instanceId: ctx.params.instance_id!,
        serviceId: service.spec.id,
        planId: plan.spec.id,
        organizationGuid: optionalString(body.organization_guid, 'organization_guid'),
        spaceGuid: optionalString(body.space_guid, 'space_guid'),
        context: optionalObject(body.context, 'context'),
        parameters,
        maintenanceInfo: requested,
        acceptsIncomplete: incomplete,
      },
      ctx.state.meta,
    );
    const dashboard = outcome.dashboardUrl ? { dashboard_url: outcome.dashboardUrl } : {};
    if (outcome.kind === 'accepted') {
      ctx.status = 202;
      ctx.body = { operation: outcome.operation, ...dashboard };
    } else {
      ctx.status = outcome.created ? 201 : 200;
      ctx.body = dashboard;
    }
  });

  /** PATCH /v2/service_instances/:instance_id (update) */
  osb.patch('/service_instances/:instance_id', async (ctx) => {
    const incomplete = acceptsIncomplete(ctx);
    const body = await readJsonObject(ctx, maxBody);
    const serviceId = requiredString(body.service_id, 'service_id');
    const newPlanId = optionalString(body.plan_id, 'plan_id');
    const current = await broker.getInstance(ctx.params.instance_id!);
    if (!current) throw notFound('The service instance does not exist.');
    if (current.operation?.state === 'in progress') {
      throw concurrencyError(
        `Another operation (${current.operation.type}) is in progress on this instance.`,
      );
    }
    const { service, plan } = resolvePlan(catalog, serviceId, newPlanId ?? current.planId);
    requireAsyncSupport(plan, incomplete);
    const currentPlan = catalog.plan(current.planId);
    if (currentPlan) checkPlanChange(service, currentPlan, plan);
    const parameters = optionalObject(body.parameters, 'parameters');
    const context = optionalObject(body.context, 'context');
    const requested = maintenanceInfo(body.maintenance_info);
    const onlyContext = context && !parameters && !requested && (!newPlanId || newPlanId === current.planId);
    if (onlyContext && !service.spec.allowContextUpdates) {
      throw badRequest(`Service ${service.spec.name} does not allow context updates.`);
    }
    checkMaintenanceInfo(plan, requested);
    validateParameters(plan.spec.schemas?.service_instance?.update?.parameters, parameters, 'update');
    const previous = optionalObject(body.previous_values, 'previous_values');
    const outcome = await broker.update(
      {
        instanceId: ctx.params.instance_id!,
        serviceId,
        ...(newPlanId ? { planId: newPlanId } : {}),
        context,
        parameters,
        previousValues: previous,
        maintenanceInfo: requested,
        acceptsIncomplete: incomplete,
      },
      ctx.state.meta,
    );
    if (outcome.kind === 'accepted') {
      ctx.status = 202;
      ctx.body = {
        operation: outcome.operation,
        ...(outcome.dashboardUrl ? { dashboard_url: outcome.dashboardUrl } : {}),
      };
    } else {
      ctx.status = 200;
      ctx.body = outcome.dashboardUrl ? { dashboard_url: outcome.dashboardUrl } : {};
    }
  });

  /** DELETE /v2/service_instances/:instance_id (deprovision) */
  osb.delete('/service_instances/:instance_id', async (ctx) => {
    const incomplete = acceptsIncomplete(ctx);
    const { plan } = resolvePlan(
      catalog,
      requiredString(queryString(ctx, 'service_id'), 'service_id'),
      requiredString(queryString(ctx, 'plan_id'), 'plan_id'),
    );
    requireAsyncSupport(plan, incomplete);
    const outcome = await broker.deprovision(
      {
        instanceId: ctx.params.instance_id!,
        serviceId: plan.spec.serviceId,
        planId: plan.spec.id,
        acceptsIncomplete: incomplete,
      },
      ctx.state.meta,
    );
    ctx.status = outcome.kind === 'accepted' ? 202 : 200;
    ctx.body = outcome.kind === 'accepted' ? { operation: outcome.operation } : {};
  });

  /** GET /v2/service_instances/:instance_id */
  osb.get('/service_instances/:instance_id', async (ctx) => {
    const instance = await broker.getInstance(ctx.params.instance_id!);
    if (!instance || (instance.operation?.type === 'provision' && instance.operation.state !== 'succeeded')) {
      throw notFound('The service instance does not exist or is still being provisioned.');
    }
    if (instance.operation?.type === 'update' && instance.operation.state === 'in progress') {
      throw concurrencyError('The service instance is being updated.');
    }
    ctx.body = {
      service_id: instance.serviceId,
      plan_id: instance.planId,
      ...(instance.dashboardUrl ? { dashboard_url: instance.dashboardUrl } : {}),
      ...(instance.parameters ? { parameters: instance.parameters } : {}),
      ...(instance.maintenanceInfo ? { maintenance_info: instance.maintenanceInfo } : {}),
    };
  });

  /** GET /v2/service_instances/:instance_id/last_operation */
  osb.get('/service_instances/:instance_id/last_operation', async (ctx) => {
    const last = await broker.instanceLastOperation(ctx.params.instance_id!, queryString(ctx, 'operation'));
    if (last.retryAfterSeconds) ctx.set('Retry-After', String(last.retryAfterSeconds));
    ctx.body = {
      state: last.state,
      ...(last.description ? { description: last.description } : {}),
      ...(last.instanceUsable !== undefined ? { instance_usable: last.instanceUsable } : {}),
      ...(last.updateRepeatable !== undefined ? { update_repeatable: last.updateRepeatable } : {}),
    };
  });

  /** PUT /v2/service_instances/:instance_id/service_bindings/:binding_id (bind) */
  osb.put('/service_instances/:instance_id/service_bindings/:binding_id', async (ctx) => {
    const incomplete = acceptsIncomplete(ctx);
    const body = await readJsonObject(ctx, maxBody);
    const { service, plan } = resolvePlan(
      catalog,
      requiredString(body.service_id, 'service_id'),
      requiredString(body.plan_id, 'plan_id'),
    );
    checkBindable(service, plan);
    const parameters = optionalObject(body.parameters, 'parameters');
    validateParameters(plan.spec.schemas?.service_binding?.create?.parameters, parameters, 'bind');
    const bindResource = optionalObject(body.bind_resource, 'bind_resource');
    const outcome = await broker.bind(
      {
        instanceId: ctx.params.instance_id!,
        bindingId: ctx.params.binding_id!,
        serviceId: service.spec.id,
        planId: plan.spec.id,
        appGuid:
          optionalString(body.app_guid, 'app_guid') ??
          optionalString(bindResource?.app_guid, 'bind_resource.app_guid'),
        bindResource,
        context: optionalObject(body.context, 'context'),
        parameters,
        // Async bindings came with 2.14; older platforms get a synchronous answer.
        acceptsIncomplete: incomplete && ctx.state.version.minor >= 14,
      },
      ctx.state.meta,
    );
    if (outcome.kind === 'accepted') {
      ctx.status = 202;
      ctx.body = { operation: outcome.operation };
    } else {
      ctx.status = outcome.created ? 201 : 200;
      ctx.body = bindingBody(outcome.response);
    }
  });

  /** DELETE /v2/service_instances/:instance_id/service_bindings/:binding_id (unbind) */
  osb.delete('/service_instances/:instance_id/service_bindings/:binding_id', async (ctx) => {
    const incomplete = acceptsIncomplete(ctx);
    const { plan } = resolvePlan(
      catalog,
      requiredString(queryString(ctx, 'service_id'), 'service_id'),
      requiredString(queryString(ctx, 'plan_id'), 'plan_id'),
    );
    const outcome = await broker.unbind(
      {
        instanceId: ctx.params.instance_id!,
        bindingId: ctx.params.binding_id!,
        serviceId: plan.spec.serviceId,
        planId: plan.spec.id,
        acceptsIncomplete: incomplete && ctx.state.version.minor >= 14,
      },
      ctx.state.meta,
    );
    ctx.status = outcome.kind === 'accepted' ? 202 : 200;
    ctx.body = outcome.kind === 'accepted' ? { operation: outcome.operation } : {};
  });

  /** GET /v2/service_instances/:instance_id/service_bindings/:binding_id */
  osb.get('/service_instances/:instance_id/service_bindings/:binding_id', async (ctx) => {
    const binding = await broker.getBinding(ctx.params.instance_id!, ctx.params.binding_id!);
    if (!binding || binding.operation?.type !== 'bind' || binding.operation.state !== 'succeeded') {
      throw notFound('The service binding does not exist or is still being created.');
    }
    ctx.body = {
      ...bindingBody(binding.response ?? {}),
      ...(binding.parameters ? { parameters: binding.parameters } : {}),
    };
  });

  /** GET /v2/service_instances/:instance_id/service_bindings/:binding_id/last_operation */
  osb.get('/service_instances/:instance_id/service_bindings/:binding_id/last_operation', async (ctx) => {
    const last = await broker.bindingLastOperation(
      ctx.params.instance_id!,
      ctx.params.binding_id!,
      queryString(ctx, 'operation'),
    );
    if (last.retryAfterSeconds) ctx.set('Retry-After', String(last.retryAfterSeconds));
    ctx.body = { state: last.state, ...(last.description ? { description: last.description } : {}) };
  });

  for (const router of [health, osb]) {
    app.use(router.routes());
    // 405 and 501 keep the Allow header the router sets; the error middleware writes the OSB body.
    app.use(router.allowedMethods());
  }
  return app;
}
