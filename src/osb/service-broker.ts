/**
 * The broker's contract: one method per OSB endpoint, its requests and results. The API calls it
 * and knows nothing of how it is carried out; src/broker implements it over Temporal and
 * Kubernetes, and the API's unit tests implement it in memory.
 *
 * The API parses and validates what it can from the request alone (headers, body, catalog ids,
 * parameter schemas, plan rules) before it calls a method; a method decides what needs the
 * broker's own records, and maps nothing to HTTP: it returns a result or throws an `OsbError`
 * (src/osb/errors.ts), which the API turns into a response in one place.
 */
import type { MaintenanceInfo, SFPlan, SFService } from '../resources/types.js';
import type { PlatformRoute } from './platforms.js';

/** The catalog as the broker currently knows it (kept in memory by watches). */
export interface CatalogSource {
  services(): readonly SFService[];
  plans(): readonly SFPlan[];
}

/**
 * The decoded `X-Broker-API-Originating-Identity`. A header that is there but cannot be read is
 * `unreadable`, with the platform it names when that is a plain word: it is recorded as such and
 * never refused (platforms MAY send it, and it must not make a request fail).
 */
export type OriginatingIdentity =
  | { readonly platform: string; readonly value: Record<string, unknown> }
  | { readonly platform: string; readonly unreadable: true };

/** Who asked, for audit; from the OSB headers. */
export interface RequestMeta {
  /** `X-Broker-API-Version` as sent, e.g. `2.17`. */
  readonly apiVersion: string;
  /** Decoded `X-Broker-API-Originating-Identity`; `unreadable` when it cannot be decoded. */
  readonly originatingIdentity?: OriginatingIdentity;
  /** `X-Broker-API-Request-Identity`, echoed in the response. */
  readonly requestIdentity?: string;
}

/** What a provision or an update may set on an instance. */
export interface InstanceAttributes {
  /**
   * The platform (and region) of the path the request came on (`/cf/v2`, `/k8s/region/eu10/v2`);
   * absent for `/v2`. A provision's labels the instance's record; it is not part of what makes two
   * requests the same.
   */
  readonly platformRoute?: PlatformRoute;
  readonly context?: Record<string, unknown>;
  readonly parameters?: Record<string, unknown>;
  readonly maintenanceInfo?: MaintenanceInfo;
}

/** PUT /v2/service_instances/:instance_id */
export interface ProvisionRequest extends InstanceAttributes {
  readonly instanceId: string;
  readonly serviceId: string;
  readonly planId: string;
  readonly organizationGuid?: string;
  readonly spaceGuid?: string;
  readonly acceptsIncomplete: boolean;
}

/** PATCH /v2/service_instances/:instance_id: only what the request sends; the rest stays as recorded. */
export interface UpdateRequest extends InstanceAttributes {
  readonly instanceId: string;
  readonly serviceId: string;
  /** The new plan; absent when the plan does not change. */
  readonly planId?: string;
  readonly previousValues?: Record<string, unknown>;
  readonly acceptsIncomplete: boolean;
}

/** DELETE /v2/service_instances/:instance_id */
export interface DeprovisionRequest {
  readonly instanceId: string;
  readonly serviceId: string;
  /** The plan the platform names; the instance's own plan decides how it is deprovisioned. */
  readonly planId: string;
  readonly acceptsIncomplete: boolean;
}

/** PUT /v2/service_instances/:instance_id/service_bindings/:binding_id */
export interface BindRequest {
  /** The platform (and region) of the path the request came on; labels the binding's record. */
  readonly platformRoute?: PlatformRoute;
  readonly instanceId: string;
  readonly bindingId: string;
  readonly serviceId: string;
  readonly planId: string;
  readonly appGuid?: string;
  readonly bindResource?: Record<string, unknown>;
  readonly context?: Record<string, unknown>;
  readonly parameters?: Record<string, unknown>;
  /**
   * The binding this one rotates (OSB 2.17), on a plan with `bindingRotatable`; the service layer
   * checks it with `checkPredecessorBinding` (src/osb/rules.ts) before it creates the binding.
   */
  readonly predecessorBindingId?: string;
  /** Whether the bind may answer 202 (see `bindingAcceptsIncomplete` in src/osb/rules.ts). */
  readonly acceptsIncomplete: boolean;
}

/** DELETE /v2/service_instances/:instance_id/service_bindings/:binding_id */
export interface UnbindRequest extends DeprovisionRequest {
  readonly bindingId: string;
}

/**
 * The result of a state-changing request.
 * - `accepted`: the operation runs on (202, with `operation`);
 * - `done`: it finished within the request (201 when it created something new, else 200).
 */
export type OperationOutcome =
  | { readonly kind: 'accepted'; readonly operation: string; readonly dashboardUrl?: string }
  | { readonly kind: 'done'; readonly created: boolean; readonly dashboardUrl?: string };

/** What a binding returns to the platform (credentials and friends). */
export interface BindingResponse {
  readonly credentials?: Record<string, unknown>;
  readonly syslog_drain_url?: string;
  readonly route_service_url?: string;
  readonly volume_mounts?: unknown[];
  readonly endpoints?: unknown[];
  /** When the credentials expire and when the platform should renew them (OSB 2.16). */
  readonly metadata?: { readonly expires_at?: string; readonly renew_before?: string };
}

/** The result of a bind: as {@link OperationOutcome}, with the binding's response once it is made. */
export type BindOutcome =
  | { readonly kind: 'accepted'; readonly operation: string }
  | { readonly kind: 'done'; readonly created: boolean; readonly response: BindingResponse };

/** State of the last operation, as OSB `last_operation` reports it. */
export interface LastOperation {
  readonly state: 'in progress' | 'succeeded' | 'failed';
  readonly description?: string;
  readonly instanceUsable?: boolean;
  readonly updateRepeatable?: boolean;
  /** Seconds the platform should wait before polling again (`Retry-After`). */
  readonly retryAfterSeconds?: number;
}

/** An instance as the broker records it. */
export interface InstanceView {
  readonly instanceId: string;
  readonly serviceId: string;
  readonly planId: string;
  readonly parameters?: Record<string, unknown>;
  readonly context?: Record<string, unknown>;
  readonly maintenanceInfo?: MaintenanceInfo;
  readonly dashboardUrl?: string;
  /** The last operation (provision, update, deprovision) and whether it still runs. */
  readonly operation?: {
    readonly type: 'provision' | 'update' | 'deprovision';
    readonly state: LastOperation['state'];
  };
}

/** A binding as the broker records it. */
export interface BindingView {
  readonly bindingId: string;
  readonly instanceId: string;
  readonly serviceId: string;
  readonly planId: string;
  readonly parameters?: Record<string, unknown>;
  readonly operation?: { readonly type: 'bind' | 'unbind'; readonly state: LastOperation['state'] };
  /** Present once the bind succeeded. */
  readonly response?: BindingResponse;
}

/**
 * One method per OSB endpoint. Methods throw `OsbError` for the spec's error cases they decide
 * (409 conflicting repeat, 410 gone, 422 ConcurrencyError, 404 unknown instance or binding, and
 * the update rules that need the instance: see `checkUpdate` in src/osb/rules.ts).
 */
export interface ServiceBroker {
  /** PUT /v2/service_instances/:instance_id */
  provision(req: ProvisionRequest, meta: RequestMeta): Promise<OperationOutcome>;
  /** PATCH /v2/service_instances/:instance_id */
  update(req: UpdateRequest, meta: RequestMeta): Promise<OperationOutcome>;
  /** DELETE /v2/service_instances/:instance_id */
  deprovision(req: DeprovisionRequest, meta: RequestMeta): Promise<OperationOutcome>;
  /** GET /v2/service_instances/:instance_id (undefined: 404) */
  getInstance(instanceId: string): Promise<InstanceView | undefined>;
  /** GET /v2/service_instances/:instance_id/last_operation */
  instanceLastOperation(instanceId: string, operation?: string): Promise<LastOperation>;
  /** PUT /v2/service_instances/:instance_id/service_bindings/:binding_id */
  bind(req: BindRequest, meta: RequestMeta): Promise<BindOutcome>;
  /** DELETE /v2/service_instances/:instance_id/service_bindings/:binding_id */
  unbind(req: UnbindRequest, meta: RequestMeta): Promise<OperationOutcome>;
  /** GET /v2/service_instances/:instance_id/service_bindings/:binding_id (undefined: 404) */
  getBinding(instanceId: string, bindingId: string): Promise<BindingView | undefined>;
  /** GET /v2/service_instances/:instance_id/service_bindings/:binding_id/last_operation */
  bindingLastOperation(instanceId: string, bindingId: string, operation?: string): Promise<LastOperation>;
}
