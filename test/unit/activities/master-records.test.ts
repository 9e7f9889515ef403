import { recordsGiven } from '../../../src/activities/master-records.js';
import type { SFServiceBinding, SFServiceInstance } from '../../../src/resources/types.js';
import type { MasterWrite } from '../../../src/workflows/messages.js';

const instance = { metadata: { namespace: 'sf-i', name: 'i' }, spec: {} } as unknown as SFServiceInstance;
const binding = {
  metadata: { namespace: 'sf-i', name: 'b' },
  spec: { id: 'b' },
} as unknown as SFServiceBinding;

describe('the records as the worker of a cluster with a worker of its own sees them', () => {
  test('GIVEN the records read by the landscape THEN it reads those, and no other', async () => {
    const records = recordsGiven({ instance, bindings: [binding] }, [], undefined);
    await expect(records.instance('sf-i', 'i')).resolves.toBe(instance);
    await expect(records.instance('sf-x', 'i')).resolves.toBeUndefined();
    await expect(records.binding('sf-i', 'b')).resolves.toBe(binding);
    await expect(records.binding('sf-i', 'c')).resolves.toBeUndefined();
    await expect(records.bindingsOf({ instanceId: 'i', namespace: 'sf-i', name: 'i' })).resolves.toEqual([
      binding,
    ]);
  });

  test('GIVEN a removed instance THEN it has no record', async () => {
    await expect(
      recordsGiven({ bindings: [] }, [], undefined).instance('sf-i', 'i'),
    ).resolves.toBeUndefined();
  });

  test('GIVEN writes and a removal THEN they are kept, in order, for the landscape to make', async () => {
    const toMaster: MasterWrite[] = [];
    const records = recordsGiven({ instance, bindings: [] }, toMaster, undefined);
    const status: MasterWrite = {
      kind: 'status',
      record: 'instance',
      namespace: 'sf-i',
      name: 'i',
      status: { resources: [] },
    };
    await records.write(status);
    let ranOnMaster = false;
    await records.remove('removeInstanceRecord', async () => {
      ranOnMaster = true;
    });
    expect(toMaster).toEqual([status, { kind: 'removeInstanceRecord' }]);
    expect(ranOnMaster).toBe(false);
  });

  test('GIVEN no drop box THEN a bind response is refused, saying what to set', async () => {
    const records = recordsGiven({ instance, bindings: [binding] }, [], undefined);
    await expect(records.writeResponse(binding, 'sf-binding-b', '{}')).rejects.toThrow(
      /INTEROP_MASTER_KUBECONFIG/,
    );
  });
});
