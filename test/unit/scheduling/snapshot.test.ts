import type { SFCluster } from '../../../src/resources/types.js';
import { clusterSnapshot } from '../../../src/scheduling/snapshot.js';
import type { ClusterSnapshot } from '../../../src/scheduling/types.js';

const sfcluster = (fields: {
  metadata?: Partial<SFCluster['metadata']>;
  spec?: Partial<SFCluster['spec']>;
  status?: SFCluster['status'];
}): SFCluster => ({
  apiVersion: 'resource.servicefabrik.io/v1alpha1',
  kind: 'SFCluster',
  metadata: { name: '2', namespace: 'interoperator', ...fields.metadata },
  spec: { secretRef: '2-kubeconfig', ...fields.spec },
  ...(fields.status ? { status: fields.status } : {}),
});

const empty: ClusterSnapshot = {
  id: '2',
  labels: {},
  phase: 'pending',
  schedulingDisabled: false,
  capacity: {},
  allocatable: {},
  requests: {},
  reserved: {},
  instances: 0,
};

describe('clusterSnapshot', () => {
  test.each<[string, Parameters<typeof sfcluster>[0], ClusterSnapshot]>([
    ['registered, never probed', {}, empty],
    [
      'probed: from its status',
      {
        status: {
          phase: 'running',
          capacity: { cpu: '4' },
          allocatable: { cpu: '3' },
          requests: { cpu: '1' },
          reserved: { a: { cpu: '500m' }, b: { cpu: '1', memory: '1Gi' } },
          serviceInstanceCount: 2,
        },
      },
      {
        ...empty,
        phase: 'running',
        capacity: { cpu: '4' },
        allocatable: { cpu: '3' },
        requests: { cpu: '1' },
        reserved: { cpu: '1500m', memory: '1Gi' },
        instances: 2,
      },
    ],
    [
      'declared capacity wins over the status, integers as text',
      {
        spec: { totalCapacity: { cpu: 10, memory: '20Gi' }, schedulingLimitPercentage: 80 },
        status: { phase: 'running', capacity: { cpu: '4' }, allocatable: { cpu: '3' } },
      },
      {
        ...empty,
        phase: 'running',
        capacity: { cpu: '10', memory: '20Gi' },
        allocatable: { cpu: '10', memory: '20Gi' },
        schedulingLimitPercentage: 80,
      },
    ],
    [
      'labels: metadata, then spec.labels over them',
      { metadata: { labels: { plan: 'a', zone: 'eu' } }, spec: { labels: { plan: 'b' } } },
      { ...empty, labels: { plan: 'b', zone: 'eu' } },
    ],
    [
      'cordoned',
      { spec: { schedulingDisabled: true }, status: { phase: 'running' } },
      { ...empty, phase: 'running', schedulingDisabled: true },
    ],
    [
      'cordoned by the older field',
      { spec: { unschedulable: true } },
      { ...empty, schedulingDisabled: true },
    ],
    [
      'being deleted: terminated',
      { metadata: { deletionTimestamp: '2025-01-01T00:00:00Z' }, status: { phase: 'running' } },
      { ...empty, phase: 'terminated' },
    ],
    [
      'our CRDs not installed (CrdsInstalled False): why',
      {
        status: {
          phase: 'running',
          conditions: [{ type: 'CrdsInstalled', status: 'False', reason: 'Forbidden', message: 'forbidden' }],
        },
      },
      { ...empty, phase: 'running', withoutCrds: 'forbidden' },
    ],
    [
      'our CRDs installed (CrdsInstalled True): nothing in the way',
      {
        status: {
          phase: 'running',
          conditions: [{ type: 'CrdsInstalled', status: 'True', reason: 'Installed', message: 'ok' }],
        },
      },
      { ...empty, phase: 'running' },
    ],
    [
      'an unreadable reservation: a problem, not an exception',
      { status: { phase: 'running', reserved: { a: { cpu: 'x' } } } },
      {
        ...empty,
        phase: 'running',
        problem:
          'invalid quantity "x" for cpu in status.reserved of instance a: expected a decimal number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)',
      },
    ],
  ])('%s', (_name, fields, snapshot) => {
    expect(clusterSnapshot(sfcluster(fields))).toEqual(snapshot);
  });

  test('a snapshot survives JSON, as workflow history keeps it', () => {
    const snapshot = clusterSnapshot(
      sfcluster({
        spec: { totalCapacity: { cpu: 2 } },
        status: { phase: 'running', reserved: { a: { cpu: '1' } } },
      }),
    );
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(snapshot);
  });
});
