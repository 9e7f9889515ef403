import {
  bindingStateLabels,
  goTimeString,
  instanceStateLabels,
  serviceFabrikLastOperation,
} from '../../../src/controllers/record-state-labels.js';
import type { SFServiceBinding, SFServiceInstance } from '../../../src/resources/types.js';

describe('a timestamp as Go prints it', () => {
  // Each expected string is what Go printed of the timestamp decoded as metav1.Time decodes it
  // (time.Parse(time.RFC3339, s).Local(), in a process whose zone is UTC) by time.Time.String().
  test.each([
    ['2026-11-28T21:19:38Z', '2026-11-28 21:19:38 +0000 UTC'],
    ['2026-11-28T23:19:38+02:00', '2026-11-28 21:19:38 +0000 UTC'],
    ['2026-12-31T23:30:00-01:00', '2027-01-01 00:30:00 +0000 UTC'],
    ['2026-01-02T03:04:05.120Z', '2026-01-02 03:04:05.12 +0000 UTC'],
    ['2026-03-04T05:06:07.000000001Z', '2026-03-04 05:06:07.000000001 +0000 UTC'],
    ['2026-03-04T05:06:07.000Z', '2026-03-04 05:06:07 +0000 UTC'],
    ['0999-01-01T00:00:00Z', '0999-01-01 00:00:00 +0000 UTC'],
  ])('%s -> %s', (timestamp, printed) => {
    expect(goTimeString(timestamp)).toBe(printed);
  });

  test.each([
    undefined,
    '',
    'yesterday',
    '2026-11-28 21:19:38',
    '2026-02-30T00:00:00Z',
    '2026-11-28T24:00:00Z',
  ])('GIVEN %p THEN empty', (timestamp) => {
    expect(goTimeString(timestamp)).toBe('');
  });
});

const instance = (
  status: SFServiceInstance['status'],
  metadata: Partial<SFServiceInstance['metadata']> = {},
): SFServiceInstance => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFServiceInstance',
  metadata: {
    name: 'i-1',
    namespace: 'sf-i-1',
    creationTimestamp: '2026-11-28T21:19:38Z',
    ...metadata,
  },
  spec: {
    serviceId: 'service-1',
    planId: 'plan-1',
    instanceId: 'i-1',
    organizationGuid: 'org-1',
    spaceGuid: 'space-1',
  },
  ...(status ? { status } : {}),
});

describe("an instance's last operation as Service Fabrik names it", () => {
  test.each([
    ['provision', undefined, 'in_queue'],
    ['update', undefined, 'update'],
    ['deprovision', undefined, 'delete'],
    // The operation the record says it ran is newer than the label Service Fabrik left.
    ['update', 'in_queue', 'update'],
    [undefined, 'delete', 'delete'],
    [undefined, undefined, ''],
  ])('operation %p, label %p -> %p', (operation, label, named) => {
    const record = instance(
      { state: 'succeeded', ...(operation ? { operation } : {}) },
      label ? { labels: { 'interoperator.servicefabrik.io/lastoperation': label } } : {},
    );
    expect(serviceFabrikLastOperation(record)).toBe(named);
  });
});

describe("the labels of a record's detailed series", () => {
  test('GIVEN an instance being deleted THEN its fields, its timestamps as Go prints them', () => {
    const record = instance(
      { state: 'in progress', operation: 'deprovision' },
      { deletionTimestamp: '2026-11-28T22:00:01Z' },
    );
    expect(instanceStateLabels(record)).toEqual({
      state: 'in progress',
      creationTimestamp: '2026-11-28 21:19:38 +0000 UTC',
      deletionTimestamp: '2026-11-28 22:00:01 +0000 UTC',
      serviceId: 'service-1',
      planId: 'plan-1',
      organizationGuid: 'org-1',
      spaceGuid: 'space-1',
      namespace: 'sf-i-1',
      lastOperation: 'delete',
    });
  });

  test('GIVEN an instance not being deleted, without platform ids THEN those labels are empty', () => {
    const record = instance({ state: 'succeeded', operation: 'provision' });
    const { organizationGuid: _o, spaceGuid: _s, ...spec } = record.spec;
    expect(instanceStateLabels({ ...record, spec })).toMatchObject({
      deletionTimestamp: '',
      organizationGuid: '',
      spaceGuid: '',
      lastOperation: 'in_queue',
    });
  });

  test('GIVEN a binding THEN its state, timestamps and namespace', () => {
    const binding: SFServiceBinding = {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFServiceBinding',
      metadata: { name: 'b-1', namespace: 'sf-i-1', creationTimestamp: '2026-11-28T21:20:00Z' },
      spec: { id: 'b-1', instanceId: 'i-1', serviceId: 'service-1', planId: 'plan-1' },
      status: { state: 'failed', operation: 'bind' },
    };
    expect(bindingStateLabels(binding)).toEqual({
      state: 'failed',
      creationTimestamp: '2026-11-28 21:20:00 +0000 UTC',
      deletionTimestamp: '',
      namespace: 'sf-i-1',
    });
  });
});
