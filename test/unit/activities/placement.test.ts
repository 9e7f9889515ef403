/** The pure parts of placement: what the scheduler sees, what a sister's copies hold. */
import {
  bindingCopy,
  instanceCopy,
  planRequests,
  reservedOn,
  selectorText,
  snapshotsOf,
  trimSummary,
} from '../../../src/activities/placement.js';
import type { SFCluster, SFPlan, SFServiceBinding, SFServiceInstance } from '../../../src/resources/types.js';

const cluster = (name: string, status: SFCluster['status'] = {}, deleting = false): SFCluster => ({
  apiVersion: 'resource.servicefabrik.io/v1alpha1',
  kind: 'SFCluster',
  metadata: {
    name,
    namespace: 'interoperator',
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
  spec: { secretRef: `cluster-${name}-kubeconfig` },
  status,
});

describe('snapshotsOf', () => {
  test('a cluster holds at least the instances it has reservations for, not counting the one being placed', () => {
    const clusters = [
      cluster('1', { phase: 'running', serviceInstanceCount: 5, reserved: { a: {}, b: {} } }),
      cluster('2', {
        phase: 'running',
        serviceInstanceCount: 1,
        reserved: { a: {}, b: { cpu: '1' }, c: {} },
      }),
      cluster('3', { phase: 'running', reserved: { me: { cpu: '1' } } }),
    ];
    expect(snapshotsOf(clusters, 'me').map((s) => [s.id, s.instances])).toEqual([
      ['1', 5],
      ['2', 3],
      ['3', 0],
    ]);
  });
});

describe('reservedOn', () => {
  test('the cluster that holds a reservation for the instance, unless it is being deleted', () => {
    const clusters = [
      cluster('1', { reserved: { other: {} } }),
      cluster('2', { reserved: { me: {} } }, true),
      cluster('3', { reserved: { me: { cpu: '1' } } }),
    ];
    expect(reservedOn(clusters, 'me')?.metadata.name).toBe('3');
    expect(reservedOn(clusters, 'nobody')).toBeUndefined();
    expect(reservedOn(clusters, 'toString')).toBeUndefined();
  });
});

describe('planRequests', () => {
  const plan = (context?: Record<string, unknown>) => ({ spec: { context } }) as unknown as SFPlan;
  test.each<[string, SFPlan | undefined, unknown]>([
    [
      'the plan’s context.requests',
      plan({ requests: { cpu: 1, memory: '512Mi' } }),
      { cpu: 1, memory: '512Mi' },
    ],
    ['no context', plan(), undefined],
    ['requests that are no map', plan({ requests: ['cpu'] }), undefined],
    ['no plan', undefined, undefined],
  ])('%s', (_name, given, expected) => {
    expect(planRequests(given)).toEqual(expected);
  });
});

describe('selectorText', () => {
  test.each<[unknown, string | undefined]>([
    ['  plan=small\n', 'plan=small'],
    ['', undefined],
    [{}, undefined],
    [42, '42'],
    [null, undefined],
  ])('%j -> %j', (value, expected) => {
    expect(selectorText(value)).toBe(expected);
  });
});

describe('trimSummary', () => {
  test('a long summary is cut with an ellipsis; a short one is kept', () => {
    expect(trimSummary('chose 1', 10)).toBe('chose 1');
    expect(trimSummary('x'.repeat(20), 10)).toBe(`${'x'.repeat(9)}…`);
  });
});

describe('copies on a sister', () => {
  const instance: SFServiceInstance = {
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFServiceInstance',
    metadata: {
      name: 'i-1',
      namespace: 'sf-i-1',
      uid: 'uid-master',
      labels: { 'interoperator.servicefabrik.io/instance-id': 'i-1' },
      annotations: { 'interoperator.servicefabrik.io/request-hash': 'h' },
      finalizers: ['interoperator.servicefabrik.io/finalizer'],
    },
    spec: {
      instanceId: 'i-1',
      serviceId: 's',
      planId: 'p',
      context: { platform: 'cf' },
      parameters: { password: 'secret' },
      previousValues: { plan_id: 'q' },
    },
    status: { state: 'succeeded' },
  };

  test('the instance’s copy: same name and namespace, labelled with its cluster, no parameters, no finalizer', () => {
    expect(instanceCopy(instance, 'sister-1')).toEqual({
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFServiceInstance',
      metadata: {
        name: 'i-1',
        namespace: 'sf-i-1',
        labels: {
          'interoperator.servicefabrik.io/instance-id': 'i-1',
          'interoperator.servicefabrik.io/cluster-id': 'sister-1',
        },
      },
      spec: {
        instanceId: 'i-1',
        serviceId: 's',
        planId: 'p',
        clusterId: 'sister-1',
        context: { platform: 'cf' },
      },
    });
  });

  test('the binding’s copy: no parameters, owned by the instance’s copy there', () => {
    const binding: SFServiceBinding = {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFServiceBinding',
      metadata: { name: 'b-1', namespace: 'sf-i-1', uid: 'uid-b', labels: { a: 'b' } },
      spec: { id: 'b-1', instanceId: 'i-1', serviceId: 's', planId: 'p', parameters: { secret: 'x' } },
    };
    const copyThere = {
      ...instanceCopy(instance, 'sister-1'),
      metadata: { name: 'i-1', namespace: 'sf-i-1', uid: 'uid-copy' },
    };
    expect(bindingCopy(binding, copyThere)).toEqual({
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFServiceBinding',
      metadata: {
        name: 'b-1',
        namespace: 'sf-i-1',
        labels: { a: 'b' },
        ownerReferences: [
          {
            apiVersion: 'osb.servicefabrik.io/v1alpha1',
            kind: 'SFServiceInstance',
            name: 'i-1',
            uid: 'uid-copy',
          },
        ],
      },
      spec: { id: 'b-1', instanceId: 'i-1', serviceId: 's', planId: 'p' },
    });
  });
});
