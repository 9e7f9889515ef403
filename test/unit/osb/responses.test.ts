/** How service-layer answers become OSB responses. Pure and table-driven. */
import type {
  BindOutcome,
  BindingView,
  InstanceView,
  LastOperation,
  OperationOutcome,
} from '../../../src/osb/service-broker.js';
import { isOsbError } from '../../../src/osb/errors.js';
import {
  UnexpectedAsyncAnswer,
  bindReply,
  bindingResponseProblem,
  bindingBody,
  bindingLastOperationBody,
  instanceBody,
  instanceLastOperationBody,
  operationReply,
  retryAfter,
  type OperationKind,
} from '../../../src/osb/responses.js';
import { resultOrOsbError } from '../../support/osb-error.js';

const accepted: OperationOutcome = { kind: 'accepted', operation: 'op-1', dashboardUrl: 'https://d' };
const created: OperationOutcome = { kind: 'done', created: true, dashboardUrl: 'https://d' };
const existing: OperationOutcome = { kind: 'done', created: false };

test.each([
  ['provision', accepted, { status: 202, body: { operation: 'op-1', dashboard_url: 'https://d' } }],
  ['provision', created, { status: 201, body: { dashboard_url: 'https://d' } }],
  ['provision', existing, { status: 200, body: {} }],
  ['update', accepted, { status: 202, body: { operation: 'op-1', dashboard_url: 'https://d' } }],
  ['update', created, { status: 200, body: { dashboard_url: 'https://d' } }],
  ['deprovision', accepted, { status: 202, body: { operation: 'op-1' } }],
  ['deprovision', created, { status: 200, body: {} }],
  ['unbind', accepted, { status: 202, body: { operation: 'op-1' } }],
  ['unbind', existing, { status: 200, body: {} }],
  ['provision', { kind: 'accepted', operation: '' }, { status: 202, body: {} }],
] as [OperationKind, OperationOutcome, unknown][])(
  'operationReply: GIVEN %s %p THEN %p',
  (kind, outcome, expected) => {
    expect(operationReply(kind, outcome, true)).toEqual(expected);
  },
);

test('operationReply and bindReply: GIVEN accepted when async is not allowed THEN UnexpectedAsyncAnswer', () => {
  expect(() => operationReply('update', accepted, false)).toThrow(UnexpectedAsyncAnswer);
  expect(() => bindReply({ kind: 'accepted', operation: 'b' }, false)).toThrow(
    'The service layer answered a bind asynchronously although the request did not allow it.',
  );
});

test.each([
  [
    { kind: 'accepted', operation: 'b-1' },
    { status: 202, body: { operation: 'b-1' } },
  ],
  [
    {
      kind: 'done',
      created: true,
      response: { credentials: { a: 1 }, route_service_url: undefined, volume_mounts: [] },
    },
    { status: 201, body: { credentials: { a: 1 }, volume_mounts: [] } },
  ],
  [
    { kind: 'done', created: false, response: {} },
    { status: 200, body: {} },
  ],
] as [BindOutcome, unknown][])('bindReply: GIVEN %p THEN %p', (outcome, expected) => {
  expect(bindReply(outcome, true)).toEqual(expected);
});

test.each([
  [{ state: 'in progress' }, undefined],
  [{ state: 'in progress', retryAfterSeconds: 2 }, '2'],
  [{ state: 'in progress', retryAfterSeconds: 0 }, '0'],
  [{ state: 'in progress', retryAfterSeconds: 1.2 }, '2'],
  [{ state: 'in progress', retryAfterSeconds: -1 }, undefined],
  [{ state: 'in progress', retryAfterSeconds: Number.NaN }, undefined],
] as [LastOperation, string | undefined][])('retryAfter: GIVEN %p THEN %p', (last, expected) => {
  expect(retryAfter(last)).toBe(expected);
});

test.each([
  [
    { state: 'succeeded', description: 'Done.' },
    { state: 'succeeded', description: 'Done.' },
  ],
  [{ state: 'succeeded', description: ' ', instanceUsable: false }, { state: 'succeeded' }],
  [
    { state: 'failed', instanceUsable: false, updateRepeatable: true },
    { state: 'failed', instance_usable: false, update_repeatable: true },
  ],
  [{ state: 'in progress', updateRepeatable: true }, { state: 'in progress' }],
] as [LastOperation, unknown][])('instanceLastOperationBody: GIVEN %p THEN %p', (last, expected) => {
  expect(instanceLastOperationBody(last)).toEqual(expected);
});

test('bindingLastOperationBody: GIVEN instance flags THEN never shown', () => {
  expect(bindingLastOperationBody({ state: 'failed', description: 'x', instanceUsable: false })).toEqual({
    state: 'failed',
    description: 'x',
  });
});

const instance = (operation?: InstanceView['operation']): InstanceView => ({
  instanceId: 'i',
  serviceId: 's',
  planId: 'p',
  ...(operation ? { operation } : {}),
});
const outcome = (fn: () => unknown): unknown => {
  const result = resultOrOsbError(fn);
  return isOsbError(result) ? [result.status, result.code] : result;
};

test.each([
  [undefined, [404, 'NotFound']],
  [instance({ type: 'provision', state: 'in progress' }), [404, 'NotFound']],
  [instance({ type: 'provision', state: 'failed' }), [404, 'NotFound']],
  [instance({ type: 'provision', state: 'succeeded' }), { service_id: 's', plan_id: 'p' }],
  [instance({ type: 'update', state: 'in progress' }), [422, 'ConcurrencyError']],
  [instance({ type: 'update', state: 'failed' }), { service_id: 's', plan_id: 'p' }],
  [instance({ type: 'deprovision', state: 'in progress' }), { service_id: 's', plan_id: 'p' }],
  [instance({ type: 'deprovision', state: 'succeeded' }), [404, 'NotFound']],
])('instanceBody: GIVEN %p THEN %p', (view, expected) => {
  expect(outcome(() => instanceBody(view))).toEqual(expected);
});

const binding = (operation?: BindingView['operation']): BindingView => ({
  bindingId: 'b',
  instanceId: 'i',
  serviceId: 's',
  planId: 'p',
  response: { credentials: { a: 1 } },
  ...(operation ? { operation } : {}),
});

test.each([
  [undefined, [404, 'NotFound']],
  [binding({ type: 'bind', state: 'in progress' }), [404, 'NotFound']],
  [binding({ type: 'bind', state: 'failed' }), [404, 'NotFound']],
  [binding({ type: 'bind', state: 'succeeded' }), { credentials: { a: 1 } }],
  [binding({ type: 'unbind', state: 'in progress' }), { credentials: { a: 1 } }],
  [binding({ type: 'unbind', state: 'succeeded' }), [404, 'NotFound']],
  [binding(), { credentials: { a: 1 } }],
])('bindingBody: GIVEN %p THEN %p', (view, expected) => {
  expect(outcome(() => bindingBody(view))).toEqual(expected);
});

describe('bindingResponseProblem (checklist rows 80–81)', () => {
  const SECRET = 's3cr3t-value';
  test('GIVEN a response with every field right WHEN checked THEN no problem; bindReply passes metadata on', () => {
    const response = {
      credentials: { password: SECRET },
      endpoints: [
        { host: 'db.example', ports: ['5432', '9000-9010'], protocol: 'tcp' },
        { host: 'h', ports: ['1'] },
      ],
      metadata: { expires_at: '2030-01-31T12:00:00.0Z', renew_before: '2030-01-01T00:00:00Z' },
      syslog_drain_url: 'syslog://x',
      volume_mounts: [],
    };
    expect(bindingResponseProblem(response)).toBeUndefined();
    expect(bindingResponseProblem({})).toBeUndefined();
    expect(bindReply({ kind: 'done', created: true, response }, false).body).toMatchObject({
      metadata: response.metadata,
      endpoints: response.endpoints,
    });
  });

  test.each([
    ['a list', [SECRET], 'is not an object'],
    ['credentials that are a string', { credentials: SECRET }, 'has credentials that are not an object'],
    [
      'a route_service_url that is a number',
      { route_service_url: 1 },
      'has a route_service_url that is not a string',
    ],
    ['endpoints that are an object', { endpoints: { host: SECRET } }, 'has endpoints that are not a list'],
    ['an endpoint without host', { endpoints: [{ ports: ['1'] }] }, 'has endpoints[0] without a host'],
    [
      'an endpoint without ports',
      { endpoints: [{ host: SECRET, ports: [] }] },
      'has endpoints[0] without ports',
    ],
    [
      'a port that is a number',
      {
        endpoints: [
          { host: 'h', ports: ['1'] },
          { host: 'h', ports: [5432] },
        ],
      },
      'has endpoints[1] with ports that are not strings such as "443" or "9000-9010"',
    ],
    [
      'a protocol of its own',
      { endpoints: [{ host: 'h', ports: ['1'], protocol: SECRET }] },
      'has endpoints[0] with a protocol other than tcp, udp or all',
    ],
    [
      'an expiry that is not UTC',
      { metadata: { expires_at: '2030-01-31T12:00:00+01:00' } },
      'has a metadata.expires_at that is not a time such as 2030-01-31T12:00:00.0Z',
    ],
    [
      'a renewal that is no time',
      { metadata: { renew_before: SECRET } },
      'has a metadata.renew_before that is not a time such as 2030-01-31T12:00:00.0Z',
    ],
    [
      'a renewal after the expiry',
      { metadata: { expires_at: '2030-01-01T00:00:00.0Z', renew_before: '2030-01-02T00:00:00.0Z' } },
      'has a metadata.renew_before after its metadata.expires_at',
    ],
  ])('GIVEN %s WHEN checked THEN the problem by field, never the value', (_, response, problem) => {
    const found = bindingResponseProblem(response);
    expect(found).toBe(problem);
    expect(found).not.toContain(SECRET);
  });
});
