/** How service-layer answers become OSB responses. Pure and table-driven. */
import type {
  BindOutcome,
  BindingView,
  InstanceView,
  LastOperation,
  OperationOutcome,
} from '../../../src/broker/types.js';
import type { OsbError } from '../../../src/osb/errors.js';
import {
  UnexpectedAsyncAnswer,
  bindReply,
  bindingBody,
  bindingLastOperationBody,
  instanceBody,
  instanceLastOperationBody,
  operationReply,
  retryAfter,
  type OperationKind,
} from '../../../src/osb/responses.js';

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
  try {
    return fn();
  } catch (err) {
    return [(err as OsbError).status, (err as OsbError).code];
  }
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
