import {
  masterWriteRefusal,
  type MasterWrite,
  type WriteSubject,
} from '../../../src/resources/master-writes.js';
import { LABELS, handedOverSecretName } from '../../../src/resources/names.js';

const instance = { namespace: 'sf-i', name: 'i' };
const binding = { namespace: 'sf-i', name: 'b' };
const onInstance: WriteSubject = { instance };
const onBinding: WriteSubject = { instance, binding };

const status = (
  record: 'instance' | 'binding',
  at: { namespace: string; name: string },
  fields: Record<string, unknown>,
): MasterWrite => ({ kind: 'status', record, ...at, status: fields });

describe('which writes on the master the landscape makes for a step on a cluster with a worker of its own', () => {
  test.each<[string, string, WriteSubject, MasterWrite]>([
    [
      'the instance’s applied objects',
      'applyTemplate',
      onInstance,
      status('instance', instance, { resources: [], staleResources: [], references: [], planRevision: 'r' }),
    ],
    [
      'the instance’s generated secrets, while as read',
      'applyTemplate',
      onInstance,
      { ...status('instance', instance, { generatedSecrets: [] }), resourceVersion: '7' } as MasterWrite,
    ],
    [
      'the binding’s applied objects',
      'applyTemplate',
      onBinding,
      status('binding', binding, { resources: [], unbindResources: [], generatedSecrets: [] }),
    ],
    [
      'the pruned objects',
      'pruneResources',
      onInstance,
      status('instance', instance, { resources: [], staleResources: [] }),
    ],
    [
      'the plan revision label',
      'applyTemplate',
      onInstance,
      { kind: 'labels', ...instance, labels: { [LABELS.planRevision]: 'r' } },
    ],
    [
      'the bind response in the drop box',
      'checkStatus',
      onBinding,
      { kind: 'response', secretName: 'sf-binding-b' },
    ],
    [
      'the removal of the instance’s records',
      'removeInstanceRecord',
      onInstance,
      { kind: 'removeInstanceRecord' },
    ],
    [
      'the removal of the binding’s record',
      'removeBindingRecord',
      onBinding,
      { kind: 'removeBindingRecord' },
    ],
    [
      'the end of the instance’s stay on the cluster it leaves',
      'leaveCluster',
      onInstance,
      { kind: 'leftCluster' },
    ],
    [
      'a generated Secret of the instance handed over by a move',
      'handOverGeneratedSecrets',
      onInstance,
      { kind: 'handedOver', secretName: handedOverSecretName('i', 'sapcp-i-admin-v1') },
    ],
  ])('GIVEN %s THEN it is made', (_what, step, subject, write) => {
    expect(masterWriteRefusal(step, subject, write)).toBeUndefined();
  });

  test.each<[string, string, WriteSubject, MasterWrite, string]>([
    [
      'another instance’s status',
      'applyTemplate',
      onInstance,
      status('instance', { namespace: 'sf-x', name: 'x' }, { resources: [] }),
      'step applyTemplate may not write the status of instance sf-x/x',
    ],
    [
      'a binding’s status from a step on the instance',
      'applyTemplate',
      onInstance,
      status('binding', binding, { resources: [] }),
      'step applyTemplate may not write the status of binding sf-i/b',
    ],
    [
      'a status field no step writes',
      'applyTemplate',
      onInstance,
      status('instance', instance, { operation: {} }),
      'step applyTemplate may not write status.operation of instance sf-i/i',
    ],
    [
      'a label other than the plan revision',
      'applyTemplate',
      onInstance,
      { kind: 'labels', ...instance, labels: { 'other/label': 'x' } },
      'step applyTemplate may not write label other/label',
    ],
    [
      'a response from a step other than the status check',
      'applyTemplate',
      onBinding,
      { kind: 'response', secretName: 'sf-binding-b' },
      'step applyTemplate may not ask for a response write',
    ],
    [
      'a response in another Secret',
      'checkStatus',
      onBinding,
      { kind: 'response', secretName: 'master-credentials' },
      'step checkStatus may not name Secret master-credentials as the binding’s response',
    ],
    [
      'a response on an instance',
      'checkStatus',
      onInstance,
      { kind: 'response', secretName: 'sf-binding-b' },
      'step checkStatus on an instance has no binding response',
    ],
    [
      'the removal of records from another step',
      'applyTemplate',
      onInstance,
      { kind: 'removeInstanceRecord' },
      'step applyTemplate may not ask for a removeInstanceRecord write',
    ],
    [
      'the end of a stay from a step other than the leave',
      'removeLeftovers',
      onInstance,
      { kind: 'leftCluster' },
      'step removeLeftovers may not ask for a leftCluster write',
    ],
    [
      'a hand-over from a step other than the move’s',
      'applyTemplate',
      onInstance,
      { kind: 'handedOver', secretName: handedOverSecretName('i', 'sapcp-i-admin-v1') },
      'step applyTemplate may not ask for a handedOver write',
    ],
    [
      'a hand-over of another instance’s Secret',
      'handOverGeneratedSecrets',
      onInstance,
      { kind: 'handedOver', secretName: handedOverSecretName('other', 'sapcp-other-admin-v1') },
      'step handOverGeneratedSecrets may not hand over Secret moved.other.sapcp-other-admin-v1: it is not one of instance i’s',
    ],
    [
      'a hand-over of a Secret of a name outside the move’s',
      'handOverGeneratedSecrets',
      onInstance,
      { kind: 'handedOver', secretName: 'sf-binding-b' },
      'step handOverGeneratedSecrets may not hand over Secret sf-binding-b: it is not one of instance i’s',
    ],
  ])('GIVEN %s THEN it is refused', (_what, step, subject, write, refusal) => {
    expect(masterWriteRefusal(step, subject, write)).toBe(refusal);
  });
});
