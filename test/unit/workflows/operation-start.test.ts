/**
 * How an operation's workflow starts, whoever starts it: its workflow type by operation, and the
 * memo, search attributes and reuse policy every start carries.
 */
import { operationStartOptions, operationWorkflowType } from '../../../src/workflows/operation-start.js';
import type { OperationName } from '../../../src/workflows/messages.js';

describe('operation start', () => {
  test.each<[OperationName, string]>([
    ['provision', 'provisionWorkflow'],
    ['update', 'updateWorkflow'],
    ['deprovision', 'deprovisionWorkflow'],
    ['bind', 'bindWorkflow'],
    ['unbind', 'unbindWorkflow'],
    ['x-rotate-secret', 'secretRotationWorkflow'],
    ['x-backup', 'actionWorkflow'],
  ])('GIVEN the operation %s WHEN its workflow type is asked THEN it is %s', (type, expected) => {
    expect(operationWorkflowType(type)).toBe(expected);
  });

  test('GIVEN a binding request WHEN its start options are built THEN they carry its state, ids and reuse policy', () => {
    const options = operationStartOptions('bind', {
      instanceId: 'i',
      bindingId: 'b',
      serviceId: 's',
      planId: 'p',
      requestHash: 'h',
    });
    expect(options.workflowIdReusePolicy).toBe('ALLOW_DUPLICATE');
    expect(options.memo).toEqual({ osb: { operation: 'bind', requestHash: 'h', state: 'in progress' } });
    expect(options.typedSearchAttributes.map(({ key, value }) => [key.name, value])).toEqual([
      ['OsbInstanceId', 'i'],
      ['OsbBindingId', 'b'],
      ['OsbServiceId', 's'],
      ['OsbPlanId', 'p'],
      ['OsbOperation', 'bind'],
      ['OsbState', 'in progress'],
    ]);
  });
});
