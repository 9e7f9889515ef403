/**
 * What the service layer's results look like on the wire: status codes and OSB response bodies.
 * Pure.
 */
import type {
  BindOutcome,
  BindingResponse,
  BindingView,
  InstanceView,
  LastOperation,
  OperationOutcome,
} from './service-broker.js';
import { concurrencyError, notFound } from './errors.js';

/** A status and a JSON body. */
export interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** The state-changing instance and binding operations that answer with an OperationOutcome. */
export type OperationKind = 'provision' | 'update' | 'deprovision' | 'unbind';

/**
 * The service layer answered 202 to a request that does not allow it. A broken contract, not a
 * client error: the API answers 500 and logs it.
 */
export class UnexpectedAsyncAnswer extends Error {
  constructor(kind: OperationKind | 'bind') {
    super(`The service layer answered a ${kind} asynchronously although the request did not allow it.`);
    this.name = 'UnexpectedAsyncAnswer';
  }
}

const dashboard = (url: string | undefined): Record<string, unknown> => (url ? { dashboard_url: url } : {});
const operation = (op: string): Record<string, unknown> => (op ? { operation: op } : {});

/**
 * The reply to provision, update, deprovision or unbind: 202 `{operation, dashboard_url?}` when
 * accepted; when done, 201 for a provision that created the instance, else 200, with the
 * `dashboard_url` of provision and update, and `{}` for deprovision and unbind.
 *
 * @throws UnexpectedAsyncAnswer when accepted although `asyncAllowed` is false.
 */
export function operationReply(kind: OperationKind, outcome: OperationOutcome, asyncAllowed: boolean): Reply {
  const withDashboard = kind === 'provision' || kind === 'update';
  if (outcome.kind === 'accepted') {
    if (!asyncAllowed) throw new UnexpectedAsyncAnswer(kind);
    return {
      status: 202,
      body: { ...operation(outcome.operation), ...(withDashboard ? dashboard(outcome.dashboardUrl) : {}) },
    };
  }
  return {
    status: kind === 'provision' && outcome.created ? 201 : 200,
    body: withDashboard ? dashboard(outcome.dashboardUrl) : {},
  };
}

/** The OSB fields of a binding response, without those left unset. */
export function bindingFields(response: BindingResponse): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    credentials: response.credentials,
    syslog_drain_url: response.syslog_drain_url,
    route_service_url: response.route_service_url,
    volume_mounts: response.volume_mounts,
    endpoints: response.endpoints,
    metadata: response.metadata,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/** `yyyy-mm-ddThh:mm:ss[.s]Z`, the time format of a binding's `metadata`. */
const UTC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/;
const PORTS = /^\d{1,5}(?:-\d{1,5})?$/;

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * What is wrong with a bind response (as a status template's `bind.response` renders it) by the
 * OSB rules for a binding's fields, if anything: said by field, never quoting a value, since the
 * response holds credentials.
 */
export function bindingResponseProblem(response: unknown): string | undefined {
  if (!isObject(response)) return 'is not an object';
  const { credentials, endpoints, metadata, volume_mounts } = response;
  if (credentials !== undefined && !isObject(credentials)) return 'has credentials that are not an object';
  for (const field of ['syslog_drain_url', 'route_service_url'] as const) {
    if (response[field] !== undefined && typeof response[field] !== 'string')
      return `has a ${field} that is not a string`;
  }
  if (volume_mounts !== undefined && !Array.isArray(volume_mounts))
    return 'has volume_mounts that are not a list';
  if (endpoints !== undefined) {
    if (!Array.isArray(endpoints)) return 'has endpoints that are not a list';
    for (const [i, endpoint] of endpoints.entries()) {
      const at = `endpoints[${i}]`;
      if (!isObject(endpoint)) return `has ${at} that is not an object`;
      if (typeof endpoint.host !== 'string' || endpoint.host.trim() === '') return `has ${at} without a host`;
      const ports = endpoint.ports;
      if (!Array.isArray(ports) || ports.length === 0) return `has ${at} without ports`;
      if (!ports.every((port) => typeof port === 'string' && PORTS.test(port))) {
        return `has ${at} with ports that are not strings such as "443" or "9000-9010"`;
      }
      if (endpoint.protocol !== undefined && !['tcp', 'udp', 'all'].includes(endpoint.protocol as string)) {
        return `has ${at} with a protocol other than tcp, udp or all`;
      }
    }
  }
  if (metadata !== undefined) {
    if (!isObject(metadata)) return 'has metadata that is not an object';
    const times: Record<string, number> = {};
    for (const field of ['expires_at', 'renew_before'] as const) {
      const value = metadata[field];
      if (value === undefined) continue;
      if (typeof value !== 'string' || !UTC_TIME.test(value) || Number.isNaN(Date.parse(value))) {
        return `has a metadata.${field} that is not a time such as 2030-01-31T12:00:00.0Z`;
      }
      times[field] = Date.parse(value);
    }
    if (
      times.renew_before !== undefined &&
      times.expires_at !== undefined &&
      times.renew_before > times.expires_at
    ) {
      return 'has a metadata.renew_before after its metadata.expires_at';
    }
  }
  return undefined;
}

/**
 * The reply to a bind: 202 `{operation}` (never credentials) when accepted; 201 with the binding's
 * fields when it was created, 200 when it already existed identically; without its `metadata`
 * when `withMetadata` is false (the broker's `send_binding_metadata`).
 *
 * @throws UnexpectedAsyncAnswer when accepted although `asyncAllowed` is false.
 */
export function bindReply(outcome: BindOutcome, asyncAllowed: boolean, withMetadata = true): Reply {
  if (outcome.kind === 'accepted') {
    if (!asyncAllowed) throw new UnexpectedAsyncAnswer('bind');
    return { status: 202, body: operation(outcome.operation) };
  }
  const { metadata, ...rest } = outcome.response;
  const response = withMetadata && metadata ? { ...rest, metadata } : rest;
  return { status: outcome.created ? 201 : 200, body: bindingFields(response) };
}

/** `Retry-After` in whole seconds, when the service layer gave a usable value. */
export function retryAfter(last: LastOperation): string | undefined {
  const seconds = last.retryAfterSeconds;
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return undefined;
  return String(Math.ceil(seconds));
}

/**
 * The body of an instance's `last_operation`: `{state, description?, instance_usable?,
 * update_repeatable?}`. An empty description is left out (it must be non-empty if present);
 * `instance_usable` and `update_repeatable` only accompany `failed`.
 */
export function instanceLastOperationBody(last: LastOperation): Record<string, unknown> {
  const failed = last.state === 'failed';
  return {
    state: last.state,
    ...(last.description?.trim() ? { description: last.description } : {}),
    ...(failed && last.instanceUsable !== undefined ? { instance_usable: last.instanceUsable } : {}),
    ...(failed && last.updateRepeatable !== undefined ? { update_repeatable: last.updateRepeatable } : {}),
  };
}

/** The body of a binding's `last_operation`: `{state, description?}`. */
export function bindingLastOperationBody(last: LastOperation): Record<string, unknown> {
  return {
    state: last.state,
    ...(last.description?.trim() ? { description: last.description } : {}),
  };
}

/**
 * The body of `GET` instance: `{service_id, plan_id, dashboard_url?, parameters?,
 * maintenance_info?}`.
 *
 * @throws OsbError 404 when the instance does not exist, is still being provisioned, its provision
 *   failed or it is deprovisioned; 422 `ConcurrencyError` while it is being updated.
 */
export function instanceBody(view: InstanceView | undefined): Record<string, unknown> {
  const op = view?.operation;
  if (!view || (op?.type === 'provision' && op.state !== 'succeeded')) {
    throw notFound(
      op?.state === 'in progress'
        ? 'The service instance is still being provisioned.'
        : 'The service instance does not exist.',
    );
  }
  if (op?.type === 'deprovision' && op.state === 'succeeded') {
    throw notFound('The service instance does not exist.');
  }
  if (op?.type === 'update' && op.state === 'in progress') {
    throw concurrencyError('The service instance is being updated; fetch it when the update has finished.');
  }
  return {
    service_id: view.serviceId,
    plan_id: view.planId,
    ...dashboard(view.dashboardUrl),
    ...(view.parameters ? { parameters: view.parameters } : {}),
    ...(view.maintenanceInfo ? { maintenance_info: view.maintenanceInfo } : {}),
  };
}

/**
 * The body of `GET` binding: the binding's fields (credentials, ...) and `parameters`.
 *
 * @throws OsbError 404 when the binding does not exist, is still being created, its bind failed
 *   or it is unbound.
 */
export function bindingBody(view: BindingView | undefined): Record<string, unknown> {
  const op = view?.operation;
  const exists =
    view !== undefined &&
    !(op?.type === 'bind' && op.state !== 'succeeded') &&
    !(op?.type === 'unbind' && op.state === 'succeeded');
  if (!exists) {
    throw notFound(
      op?.type === 'bind' && op.state === 'in progress'
        ? 'The service binding is still being created.'
        : 'The service binding does not exist.',
    );
  }
  return {
    ...bindingFields(view.response ?? {}),
    ...(view.parameters ? { parameters: view.parameters } : {}),
  };
}
