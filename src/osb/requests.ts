/**
 * Parsing of OSB requests: the JSON body, the query, the identity header, and the fields of each
 * request body. Pure: strings and parsed JSON in, typed values out, or a 400 OsbError that says
 * what is wrong.
 *
 * Unknown fields are ignored (the spec requires it). Empty strings and `null` count as absent
 * (spec §9.2: generated clients send `""` for unset ids).
 */
import type { MaintenanceInfo } from '../resources/types.js';
import { badRequest } from './errors.js';
import type { BindRequest, OriginatingIdentity, ProvisionRequest, UpdateRequest } from './service-broker.js';

export type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A request body as a JSON object; an empty (or all-whitespace) body is `{}`.
 *
 * @throws OsbError 400 when the text is not JSON, or is JSON but not an object.
 */
export function parseJsonObject(text: string): JsonObject {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('The request body is not valid JSON.');
  }
  if (!isObject(value)) throw badRequest('The request body must be a JSON object.');
  return value;
}

/** A query value as koa gives it. */
export type QueryValue = string | string[] | undefined;

function singleQuery(value: QueryValue, name: string): string | undefined {
  if (Array.isArray(value)) throw badRequest(`The ${name} query parameter must be given once.`);
  return value === undefined || value === '' ? undefined : value;
}

/**
 * `accepts_incomplete`: `true` or `false`; absent (or empty) is `false`.
 *
 * @throws OsbError 400 for any other value.
 */
export function parseAcceptsIncomplete(value: QueryValue): boolean {
  const text = singleQuery(value, 'accepts_incomplete');
  if (text === undefined || text === 'false') return false;
  if (text === 'true') return true;
  throw badRequest(`accepts_incomplete must be true or false, not "${text.slice(0, 20)}".`);
}

/** An optional query parameter (empty counts as absent). @throws OsbError 400 when repeated. */
export const optionalQuery = (value: QueryValue, name: string): string | undefined =>
  singleQuery(value, name);

/** A required query parameter. @throws OsbError 400 when absent, empty or repeated. */
export function requiredQuery(value: QueryValue, name: string): string {
  const text = singleQuery(value, name);
  if (text === undefined) throw badRequest(`The ${name} query parameter is required.`);
  return text;
}

/** A required, non-empty string field. @throws OsbError 400 when absent, empty or not a string. */
export function requiredString(value: unknown, name: string): string {
  if (value === undefined || value === null || value === '') throw badRequest(`${name} is required.`);
  if (typeof value !== 'string') throw badRequest(`${name} must be a string.`);
  return value;
}

/** An optional string field. @throws OsbError 400 when present and not a string. */
export function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw badRequest(`${name} must be a string.`);
  return value;
}

/** An optional object field. @throws OsbError 400 when present and not a JSON object. */
export function optionalObject(value: unknown, name: string): JsonObject | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw badRequest(`${name} must be a JSON object.`);
  return value;
}

/**
 * `maintenance_info`: only `version` counts; without one (`{}` included) it is not provided
 * (spec §9.3).
 *
 * @throws OsbError 400 when it is not an object or its version is not a string.
 */
export function parseMaintenanceInfo(value: unknown, name = 'maintenance_info'): MaintenanceInfo | undefined {
  const info = optionalObject(value, name);
  const version = optionalString(info?.version, `${name}.version`);
  if (version === undefined) return undefined;
  const description = optionalString(info?.description, `${name}.description`);
  return { version, ...(description !== undefined ? { description } : {}) };
}

/** A platform is a plain word (`cloudfoundry`, `kubernetes`); anything else is not recorded as one. */
const PLATFORM_WORD = '[A-Za-z][A-Za-z0-9._-]{0,62}';
const PLATFORM = new RegExp(`^${PLATFORM_WORD}$`);
const IDENTITY = new RegExp(`^(${PLATFORM_WORD})[ \\t]+([A-Za-z0-9+/]+={0,2})$`);

/**
 * `X-Broker-API-Originating-Identity: <platform> <base64 of a JSON object>` (the platform a plain
 * word); absent or empty is `undefined`, anything else not of that form is `unreadable`. Nothing
 * of an unreadable value is kept: it may be anything a client sent.
 */
export function parseOriginatingIdentity(header: string | undefined): OriginatingIdentity | undefined {
  const text = header?.trim();
  if (!text) return undefined;
  const match = IDENTITY.exec(text);
  let value: unknown;
  try {
    value = match ? JSON.parse(Buffer.from(match[2]!, 'base64').toString('utf8')) : undefined;
  } catch {
    value = undefined;
  }
  if (match && isObject(value)) return { platform: match[1]!, value };
  const named = text.split(/[ \t]/, 1)[0]!;
  return { platform: PLATFORM.test(named) ? named : 'unknown', unreadable: true };
}

/** The fields of a provision body besides `service_id` and `plan_id`. */
export type ProvisionFields = Pick<ProvisionRequest, 'context' | 'parameters' | 'maintenanceInfo'> &
  Required<Pick<ProvisionRequest, 'organizationGuid' | 'spaceGuid'>>;

/**
 * The provision body's other fields. `organization_guid` and `space_guid` are still REQUIRED by
 * the spec, however deprecated.
 *
 * @throws OsbError 400 for a missing required field or a field of the wrong type.
 */
export function parseProvisionFields(body: JsonObject): ProvisionFields {
  const context = optionalObject(body.context, 'context');
  const parameters = optionalObject(body.parameters, 'parameters');
  const maintenanceInfo = parseMaintenanceInfo(body.maintenance_info);
  return {
    organizationGuid: requiredString(body.organization_guid, 'organization_guid'),
    spaceGuid: requiredString(body.space_guid, 'space_guid'),
    ...(context ? { context } : {}),
    ...(parameters ? { parameters } : {}),
    ...(maintenanceInfo ? { maintenanceInfo } : {}),
  };
}

/** The fields of an update body besides `service_id`. */
export type UpdateFields = Omit<UpdateRequest, 'instanceId' | 'serviceId' | 'acceptsIncomplete'>;

/** The update body's other fields. @throws OsbError 400 for a field of the wrong type. */
export function parseUpdateFields(body: JsonObject): UpdateFields {
  const planId = optionalString(body.plan_id, 'plan_id');
  const context = optionalObject(body.context, 'context');
  const parameters = optionalObject(body.parameters, 'parameters');
  const previousValues = optionalObject(body.previous_values, 'previous_values');
  const maintenanceInfo = parseMaintenanceInfo(body.maintenance_info);
  return {
    ...(planId !== undefined ? { planId } : {}),
    ...(context ? { context } : {}),
    ...(parameters ? { parameters } : {}),
    ...(previousValues ? { previousValues } : {}),
    ...(maintenanceInfo ? { maintenanceInfo } : {}),
  };
}

/**
 * The fields of a bind body besides `service_id` and `plan_id`. `appGuid` is
 * `bind_resource.app_guid`, or else the deprecated top-level `app_guid`.
 */
export type BindFields = Pick<BindRequest, 'appGuid' | 'bindResource' | 'context' | 'parameters'> & {
  readonly predecessorBindingId?: string;
};

/** The bind body's other fields. @throws OsbError 400 for a field of the wrong type. */
export function parseBindFields(body: JsonObject): BindFields {
  const bindResource = optionalObject(body.bind_resource, 'bind_resource');
  const appGuid =
    optionalString(bindResource?.app_guid, 'bind_resource.app_guid') ??
    optionalString(body.app_guid, 'app_guid');
  const context = optionalObject(body.context, 'context');
  const parameters = optionalObject(body.parameters, 'parameters');
  const predecessorBindingId = optionalString(body.predecessor_binding_id, 'predecessor_binding_id');
  return {
    ...(appGuid !== undefined ? { appGuid } : {}),
    ...(bindResource ? { bindResource } : {}),
    ...(context ? { context } : {}),
    ...(parameters ? { parameters } : {}),
    ...(predecessorBindingId !== undefined ? { predecessorBindingId } : {}),
  };
}
