/** What last_operation answers, from a workflow's memo or a record's status. Pure and table-driven. */
import {
  askedRunId,
  asksDeletion,
  lastOperationOf,
  lastOperationOfRecord,
  parseOperationQuery,
  settledStatus,
} from '../../../src/broker/last-operation.js';
import type { OperationStatus } from '../../../src/workflows/messages.js';
import { osbError } from '../../support/osb-error.js';

const status = (fields: Partial<OperationStatus>): OperationStatus => ({
  operation: 'update',
  requestHash: 'h',
  state: 'failed',
  ...fields,
});
const flags = { instanceUsable: true, updateRepeatable: false };

describe('lastOperationOf', () => {
  test.each([
    [
      'an operation in progress',
      status({ state: 'in progress' }),
      { state: 'in progress', retryAfterSeconds: 2 },
    ],
    [
      'a provision in progress with a description',
      status({ operation: 'provision', state: 'in progress', description: 'Creating.' }),
      { state: 'in progress', description: 'Creating.', retryAfterSeconds: 2 },
    ],
    ['a succeeded update, flags set', status({ state: 'succeeded', ...flags }), { state: 'succeeded' }],
    [
      'a failed update',
      status({ description: 'No.', ...flags }),
      { state: 'failed', description: 'No.', instanceUsable: true, updateRepeatable: false },
    ],
    [
      'a failed deprovision',
      status({ operation: 'deprovision', ...flags }),
      { state: 'failed', instanceUsable: true },
    ],
    ['a failed provision', status({ operation: 'provision', ...flags }), { state: 'failed' }],
    ['a failed bind', status({ operation: 'bind', ...flags }), { state: 'failed' }],
    ['a failed update without flags', status({}), { state: 'failed' }],
    ['an empty description', status({ state: 'succeeded', description: '' }), { state: 'succeeded' }],
  ])('GIVEN %s THEN what last_operation says', (_n, memo, expected) => {
    expect(lastOperationOf(memo)).toEqual(expected);
  });
});

describe('lastOperationOfRecord', () => {
  test.each([
    ['no status', undefined, { state: 'in progress', retryAfterSeconds: 2 }],
    ['a state of its own', { state: 'delete' }, { state: 'in progress', retryAfterSeconds: 2 }],
    ['succeeded', { state: 'succeeded', description: 'Done.' }, { state: 'succeeded', description: 'Done.' }],
    [
      'failed with an error and a description',
      { state: 'failed', description: 'Updating.', error: 'The template is invalid.' },
      { state: 'failed', description: 'The template is invalid.' },
    ],
    [
      'failed with an empty error',
      { state: 'failed', error: '', description: 'D.' },
      { state: 'failed', description: 'D.' },
    ],
    [
      'a failed update with its flags',
      { state: 'failed', operation: 'update', instanceUsable: true, updateRepeatable: false },
      { state: 'failed', instanceUsable: true, updateRepeatable: false },
    ],
    [
      'a failed deprovision with its flags',
      { state: 'failed', operation: 'deprovision', instanceUsable: false, updateRepeatable: true },
      { state: 'failed', instanceUsable: false },
    ],
    [
      'a failed provision with flags',
      { state: 'failed', operation: 'provision', instanceUsable: false, updateRepeatable: false },
      { state: 'failed' },
    ],
    [
      'a succeeded update with flags',
      { state: 'succeeded', operation: 'update', instanceUsable: false },
      { state: 'succeeded' },
    ],
  ])('GIVEN %s THEN what last_operation says', (_n, recorded, expected) => {
    expect(lastOperationOfRecord(recorded)).toEqual(expected);
  });
});

describe('settledStatus', () => {
  const inProgress = (operation: OperationStatus['operation']) => status({ operation, state: 'in progress' });
  test.each([
    ['a running run', inProgress('update'), true, 'RUNNING', inProgress('update')],
    [
      'a run that recorded its outcome',
      status({ state: 'succeeded' }),
      false,
      'COMPLETED',
      status({ state: 'succeeded' }),
    ],
    [
      'a terminated update',
      inProgress('update'),
      false,
      'TERMINATED',
      status({ state: 'failed', description: 'The update stopped (terminated).' }),
    ],
    [
      'a provision that timed out',
      inProgress('provision'),
      false,
      'TIMED_OUT',
      status({ operation: 'provision', description: 'The provision stopped (timed_out).' }),
    ],
    [
      'a cancelled bind',
      inProgress('bind'),
      false,
      'CANCELLED',
      status({ operation: 'bind', description: 'The bind was cancelled and rolled back.' }),
    ],
    [
      'a cancelled deprovision',
      inProgress('deprovision'),
      false,
      'CANCELLED',
      status({ operation: 'deprovision', description: 'The deprovision was stopped before it finished.' }),
    ],
    [
      'a cancelled unbind',
      inProgress('unbind'),
      false,
      'CANCELLED',
      status({ operation: 'unbind', description: 'The unbind was stopped before it finished.' }),
    ],
  ])('GIVEN %s THEN its state', (_n, memo, running, statusName, expected) => {
    expect(settledStatus(memo, { running, statusName })).toEqual(expected);
  });
});

describe('settledStatus while a step waits', () => {
  const running = status({
    operation: 'provision',
    state: 'in progress',
    description: 'Creating the operator’s resources',
  });
  const WAITING = 'waiting for cluster sister-1: connect ECONNREFUSED 127.0.0.1:6443';
  test.each([
    [
      'waiting for a cluster',
      running,
      { running: true, statusName: 'RUNNING', waiting: WAITING },
      // Which cluster, never its address.
      { ...running, description: 'waiting for cluster sister-1: it does not answer yet' },
    ],
    [
      'waiting for an object a rendered object refers to',
      running,
      {
        running: true,
        statusName: 'RUNNING',
        waiting:
          'waiting for referenced object ConfigMap settings in sf-1, path .data.port (for data.port of ConfigMap app): referenced object not found (it does not exist)',
      },
      {
        ...running,
        description:
          'waiting for referenced object ConfigMap settings in sf-1, path .data.port (for data.port of ConfigMap app): referenced object not found (it does not exist)',
      },
    ],
    [
      'another step failure (not shown: its text is not the platform’s business)',
      running,
      { running: true, statusName: 'RUNNING', waiting: 'the apiserver said 500' },
      running,
    ],
    ['no step waiting', running, { running: true, statusName: 'RUNNING' }, running],
    [
      'an outcome already recorded',
      status({ state: 'failed', description: 'x' }),
      { running: true, statusName: 'RUNNING', waiting: WAITING },
      status({ state: 'failed', description: 'x' }),
    ],
  ])('GIVEN %s THEN the description', (_n, memo, run, expected) => {
    expect(settledStatus(memo, run)).toEqual(expected);
  });
});

/** An operation string as Service Fabrik's broker encodes it (`encodeBase64`: base64 of the JSON). */
const serviceFabrik = (operation: unknown) =>
  Buffer.from(JSON.stringify(operation), 'utf8').toString('base64');

describe('parseOperationQuery', () => {
  test.each([
    [undefined, undefined],
    ['', undefined],
    ['provision:0f1e-2d', { type: 'provision', runId: '0f1e-2d' }],
    ['unbind:abc', { type: 'unbind', runId: 'abc' }],
    // Service Fabrik's broker's, as its 202 answers of provision and bind, update, deprovision and unbind hand them out
    ['eyJ0eXBlIjoiY3JlYXRlIn0=', { serviceFabrik: 'create' }],
    [serviceFabrik({ type: 'update' }), { serviceFabrik: 'update' }],
    [serviceFabrik({ type: 'delete' }), { serviceFabrik: 'delete' }],
    [
      serviceFabrik({ type: 'update', serviceflow_name: 'upgrade', serviceflow_id: 'f-1' }),
      { serviceFabrik: 'update' },
    ],
  ])('GIVEN %p THEN %p', (operation, expected) => {
    expect(parseOperationQuery(operation)).toEqual(expected);
  });

  test.each([
    ['rename:abc', 'Unknown operation "rename:abc".'],
    ['provision:', 'Unknown operation "provision:".'],
    [serviceFabrik({ type: 'backup' }), `Unknown operation "${serviceFabrik({ type: 'backup' })}".`],
    [
      serviceFabrik({ type: 'create', extra: 1 }),
      `Unknown operation "${serviceFabrik({ type: 'create', extra: 1 })}".`,
    ],
    [serviceFabrik(['create']), `Unknown operation "${serviceFabrik(['create'])}".`],
    [serviceFabrik('create'), `Unknown operation "${serviceFabrik('create')}".`],
    ['eyJ0eXBlIjoiY3JlYXRlIn0', 'Unknown operation "eyJ0eXBlIjoiY3JlYXRlIn0".'],
    ['bm90IGpzb24=', 'Unknown operation "bm90IGpzb24=".'],
    [`update:${'a'.repeat(120)}`, `Unknown operation "update:${'a'.repeat(93)}".`],
  ])('GIVEN %p THEN 400', (operation, description) => {
    const err = osbError(() => parseOperationQuery(operation));
    expect([err.status, err.toBody()]).toEqual([400, { error: 'BadRequest', description }]);
  });
});

describe('asksDeletion', () => {
  test.each<['instance' | 'binding', string | undefined, boolean]>([
    ['instance', undefined, false],
    ['instance', 'deprovision:abc', true],
    ['instance', 'unbind:abc', false],
    ['binding', 'unbind:abc', true],
    ['binding', 'bind:abc', false],
    ['instance', serviceFabrik({ type: 'delete' }), true],
    ['binding', serviceFabrik({ type: 'delete' }), true],
    ['instance', serviceFabrik({ type: 'create' }), false],
    ['instance', serviceFabrik({ type: 'update' }), false],
  ])('GIVEN a poll of the %s with %p THEN %p', (kind, operation, expected) => {
    expect(asksDeletion(kind, parseOperationQuery(operation))).toBe(expected);
    // Service Fabrik's strings name no run: the latest one answers
    if (operation && !operation.includes(':'))
      expect(askedRunId(parseOperationQuery(operation))).toBeUndefined();
  });
});
