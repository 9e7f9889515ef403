/**
 * Reading the admin API's requests: the filter and page of a listing from the query, the settings
 * of a rollout and the parameters of a custom action from the body. Bad input is an OsbError 400 naming the field.
 *
 * Pure: no I/O.
 */
import { badRequest } from '../osb/errors.js';
import { RESOURCE_STATES, type ResourceState } from '../resources/types.js';
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

/** The page of a listing: `limit` (1 to {@link MAX_PAGE_LIMIT}) and `continue`. */
export function parsePageRequest(query: Query): PageRequest {
  const limit = single(query, 'limit');
  const next = single(query, 'continue');
  let parsed: number | undefined;
  if (limit !== undefined) {
    parsed = Number(limit);
    if (!/^\d+$/.test(limit) || parsed < 1 || parsed > MAX_PAGE_LIMIT) {
      throw badRequest(`limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}, not "${limit}".`);
    }
  }
  return { ...(parsed !== undefined ? { limit: parsed } : {}), ...(next ? { continue: next } : {}) };
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
