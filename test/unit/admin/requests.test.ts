/** Reading the admin API's requests: listing filters and pages, rollout settings, action parameters. */
import {
  parseActionRequest,
  parsePageRequest,
  parseRecordFilter,
  parseRolloutSettings,
} from '../../../src/admin/requests.js';
import { isOsbError } from '../../../src/osb/errors.js';

/** The 400's description of `fn`, or what it returned. */
function outcome(fn: () => unknown): unknown {
  try {
    return fn();
  } catch (err) {
    if (isOsbError(err)) return `${err.status} ${err.description}`;
    throw err;
  }
}

test.each([
  ['nothing', {}, {}],
  ['empty values, as absent', { plan: '', state: '' }, {}],
  [
    'every filter',
    { service: 's', plan: 'p', cluster: 'c', state: 'in progress', revision: 'r' },
    { serviceId: 's', planId: 'p', clusterId: 'c', state: 'in progress', revision: 'r' },
  ],
  [
    'an unknown state',
    { state: 'done' },
    expect.stringMatching(/^400 state must be one of in_queue, .*not "done"/),
  ],
  ['a filter twice', { plan: ['a', 'b'] }, '400 The query parameter plan may be given once.'],
])('parseRecordFilter: %s', (_, query, expected) => {
  expect(outcome(() => parseRecordFilter(query))).toEqual(expected);
});

test.each([
  ['nothing', {}, {}],
  ['a limit and a token', { limit: '50', continue: 'abc' }, { limit: 50, continue: 'abc' }],
  ['the largest limit', { limit: '1000' }, { limit: 1000 }],
  ['a limit too large', { limit: '1001' }, '400 limit must be a whole number from 1 to 1000, not "1001".'],
  ['a fraction', { limit: '1.5' }, '400 limit must be a whole number from 1 to 1000, not "1.5".'],
  ['a negative limit', { limit: '-1' }, '400 limit must be a whole number from 1 to 1000, not "-1".'],
])('parsePageRequest: %s', (_, query, expected) => {
  expect(outcome(() => parsePageRequest(query))).toEqual(expected);
});

test.each([
  ['nothing', {}, {}],
  [
    'every setting at its least',
    { canary: 0, maxConcurrency: 1, soakSeconds: 0, maxFailures: 0 },
    { canary: 0, maxConcurrency: 1, soakSeconds: 0, maxFailures: 0 },
  ],
  ['null, as absent', { canary: null }, {}],
  ['no concurrency', { maxConcurrency: 0 }, '400 maxConcurrency must be a whole number, 1 or more.'],
  ['a string', { soakSeconds: '10' }, '400 soakSeconds must be a whole number, 0 or more.'],
  ['a negative', { maxFailures: -1 }, '400 maxFailures must be a whole number, 0 or more.'],
  [
    'a misspelt setting',
    { max_concurrency: 2 },
    '400 Unknown rollout setting max_concurrency; known: canary, maxConcurrency, soakSeconds, maxFailures.',
  ],
  [
    'a name every object inherits',
    { constructor: 1 },
    '400 Unknown rollout setting constructor; known: canary, maxConcurrency, soakSeconds, maxFailures.',
  ],
  [
    '__proto__ as a key of the body',
    JSON.parse('{"__proto__": 1}') as Record<string, unknown>,
    '400 Unknown rollout setting __proto__; known: canary, maxConcurrency, soakSeconds, maxFailures.',
  ],
])('parseRolloutSettings: %s', (_, body, expected) => {
  expect(outcome(() => parseRolloutSettings(body))).toEqual(expected);
});

describe('parseActionRequest', () => {
  test.each([
    [{}, undefined],
    [{ parameters: null }, undefined],
    [{ parameters: { label: 'x', n: 1 } }, { label: 'x', n: 1 }],
  ])('%j is %j', (body, expected) => {
    expect(parseActionRequest(body)).toEqual(expected);
  });

  test.each([
    [{ label: 'x' }, 'Unknown field label of an action request; known: parameters.'],
    [{ parameters: [] }, 'parameters must be an object.'],
    [{ parameters: 5 }, 'parameters must be an object.'],
  ])('%j is a 400: %s', (body, description) => {
    expect(outcome(() => parseActionRequest(body))).toBe(`400 ${description}`);
  });
});
