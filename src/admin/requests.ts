/**
 * Reading the admin API's requests: the filter and page of a listing from the query, the settings
 * of a rollout and the parameters of a custom action from the body. Bad input is an OsbError 400 naming the field.
 *
 * Pure: no I/O.
 */
import { badRequest } from '../osb/errors.js';
import { OSB_TEMPLATE_ACTIONS, isTemplateActionName } from '../resources/actions.js';
import { RESOURCE_STATES, TEMPLATE_TYPES, type ResourceState, type SFPlanSpec } from '../resources/types.js';
import type { RolloutSettings } from './contract.js';
import type { PageRequest, RecordFilter } from './service.js';

/** Most records one page may ask for. */
export const MAX_PAGE_LIMIT = 1000;

type Query = Readonly<Record<string, string | string[] | undefined>>;

/** One value of a query parameter; absent when missing or empty. */
function single(query: Query, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw badRequest(`The query parameter ${name} may be given once.`);
  return value === undefined || value === '' ? undefined : value;
}

/** The filter of a listing: `service`, `plan`, `cluster`, `state` and `revision`. */
export function parseRecordFilter(query: Query): RecordFilter {
  const state = single(query, 'state');
  if (state !== undefined && !(RESOURCE_STATES as readonly string[]).includes(state)) {
    throw badRequest(`state must be one of ${RESOURCE_STATES.join(', ')}, not "${state}".`);
  }
  const fields = {
    serviceId: single(query, 'service'),
    planId: single(query, 'plan'),
    clusterId: single(query, 'cluster'),
    state: state as ResourceState | undefined,
    revision: single(query, 'revision'),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as RecordFilter;
}

/** The page of a listing: `limit` (1 to `max`, by default {@link MAX_PAGE_LIMIT}) and `continue`. */
export function parsePageRequest(query: Query, max: number = MAX_PAGE_LIMIT): PageRequest {
  const limit = single(query, 'limit');
  const next = single(query, 'continue');
  let parsed: number | undefined;
  if (limit !== undefined) {
    parsed = Number(limit);
    if (!/^\d+$/.test(limit) || parsed < 1 || parsed > max) {
      throw badRequest(`limit must be a whole number from 1 to ${max}, not "${limit}".`);
    }
  }
  return { ...(parsed !== undefined ? { limit: parsed } : {}), ...(next ? { continue: next } : {}) };
}

/**
 * The `dryRun` query of an adoption: absent or `false` adopts, `true` only lists.
 *
 * @throws OsbError 400 for any other value.
 */
export function parseDryRun(query: Query): boolean {
  const value = single(query, 'dryRun');
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw badRequest(`dryRun must be true or false, not "${value.slice(0, 100)}".`);
}

/** The least value of each rollout setting. */
const SETTING_MINIMUM: Readonly<Record<keyof RolloutSettings, number>> = {
  canary: 0,
  maxConcurrency: 1,
  soakSeconds: 0,
  maxFailures: 0,
};

/**
 * The settings a rollout request overrides: `canary`, `maxConcurrency`, `soakSeconds` and
 * `maxFailures`, each a whole number (`maxConcurrency` 1 or more, the others 0 or more); unknown
 * fields are refused, so a misspelt setting is not silently ignored.
 */
export function parseRolloutSettings(body: Readonly<Record<string, unknown>>): Partial<RolloutSettings> {
  const settings: Partial<Record<keyof RolloutSettings, number>> = {};
  for (const [key, value] of Object.entries(body)) {
    if (!Object.hasOwn(SETTING_MINIMUM, key)) {
      throw badRequest(`Unknown rollout setting ${key}; known: ${Object.keys(SETTING_MINIMUM).join(', ')}.`);
    }
    if (value === undefined || value === null) continue;
    const name = key as keyof RolloutSettings;
    const min = SETTING_MINIMUM[name];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
      throw badRequest(`${name} must be a whole number, ${min} or more.`);
    }
    settings[name] = value;
  }
  return settings;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The new spec of a plan's dry run, from the body `{"spec": {...}}`: an object with the plan's
 * `id`, a `serviceId`, a `name` and `templates` (each with an `action` and a `type`). Other fields
 * of the body are refused. The catalog's rules for a plan are checked against the catalog after.
 */
export function parseDryRunSpec(body: Readonly<Record<string, unknown>>, planId: string): SFPlanSpec {
  const unknown = Object.keys(body).filter((key) => key !== 'spec');
  if (unknown.length > 0)
    throw badRequest(`Unknown field ${unknown[0]}; the body is {"spec": <the plan's new spec>}.`);
  const { spec } = body;
  if (!isObject(spec)) throw badRequest("spec must be an object: the plan's new spec.");
  if (spec.id !== planId) throw badRequest(`spec.id must be the plan's id ${planId}.`);
  for (const field of ['name', 'serviceId'] as const) {
    if (typeof spec[field] !== 'string' || spec[field] === '')
      throw badRequest(`spec.${field} must be a non-empty string.`);
  }
  const { templates } = spec;
  if (!Array.isArray(templates)) throw badRequest('spec.templates must be a list of templates.');
  templates.forEach((template: unknown, i) => {
    if (!isObject(template) || typeof template.action !== 'string' || typeof template.type !== 'string')
      throw badRequest(`spec.templates[${i}] must be an object with an action and a type.`);
    if (!isTemplateActionName(template.action))
      throw badRequest(
        `spec.templates[${i}].action must be one of ${OSB_TEMPLATE_ACTIONS.join(', ')}, or x-<name> for a custom action.`,
      );
    if (!(TEMPLATE_TYPES as readonly string[]).includes(template.type))
      throw badRequest(`spec.templates[${i}].type must be one of ${TEMPLATE_TYPES.join(', ')}.`);
  });
  return spec as unknown as SFPlanSpec;
}

/**
 * The parameters of a custom action's request: the body `{}` or `{"parameters": {...}}`, an object
 * the action's templates see as `.action.parameters`. Other fields are refused, so a misspelt one
 * is not silently ignored.
 */
export function parseActionRequest(
  body: Readonly<Record<string, unknown>>,
): Readonly<Record<string, unknown>> | undefined {
  for (const key of Object.keys(body)) {
    if (key !== 'parameters')
      throw badRequest(`Unknown field ${key} of an action request; known: parameters.`);
  }
  const parameters = body.parameters;
  if (parameters === undefined || parameters === null) return undefined;
  if (typeof parameters !== 'object' || Array.isArray(parameters))
    throw badRequest('parameters must be an object.');
  return parameters as Readonly<Record<string, unknown>>;
}

/** What a move request says: where to (absent: the plan's scheduler chooses). */
export interface MoveInstanceRequest {
  readonly cluster?: string;
}

/**
 * The body of POST /admin/instances/:instance_id/move: `{cluster?}`, a registered cluster's id.
 *
 * @throws OsbError 400 for an unknown field or a cluster that is no non-empty string.
 */
export function parseMoveRequest(body: Readonly<Record<string, unknown>>): MoveInstanceRequest {
  for (const key of Object.keys(body)) {
    if (key !== 'cluster')
      throw badRequest(`Unknown field ${key.slice(0, 80)} of a move request; known: cluster.`);
  }
  const cluster = body.cluster;
  if (cluster === undefined || cluster === null) return {};
  if (typeof cluster !== 'string' || cluster.trim() === '' || cluster.length > 253)
    throw badRequest('cluster must be the id of a registered cluster (its SFCluster name).');
  return { cluster };
}
