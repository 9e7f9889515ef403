import { freeCapacity, resourceAware, shortfall } from '../../../../src/scheduling/plugins/resource-aware.js';
import { clusterResources, type PodResources } from '../../../../src/clusters/capacity.js';
import { formatResourceList, parseResourceList } from '../../../../src/clusters/quantity.js';
import type { SFCluster } from '../../../../src/resources/types.js';
import { clusterSnapshot } from '../../../../src/scheduling/snapshot.js';
import { schedule } from '../../../../src/scheduling/registry.js';
import type { ClusterSnapshot, Cycle, PlacementRequest, Verdict } from '../../../../src/scheduling/types.js';
import { cluster, request } from '../clusters.js';

/** A cluster with declared capacity, requests and reservations. */
const sized = (
  id: string,
  allocatable: Record<string, string>,
  requests: Record<string, string> = {},
  reserved: Record<string, string> = {},
  fields: Partial<ClusterSnapshot> = {},
) => cluster(id, { capacity: allocatable, allocatable, requests, reserved, ...fields });

const wants = (requests: Record<string, string>): PlacementRequest => ({ ...request, requests });

describe('resource-aware: free capacity', () => {
  test.each<[string, ClusterSnapshot, Record<string, string>]>([
    [
      'allocatable less requests less reserved',
      sized('1', { cpu: '8', memory: '16Gi' }, { cpu: '1500m', memory: '4Gi' }, { cpu: '500m' }),
      { cpu: '6', memory: '12Gi' },
    ],
    [
      'capped by the scheduling limit',
      sized('1', { cpu: '10', memory: '10Gi' }, { cpu: '1' }, {}, { schedulingLimitPercentage: 80 }),
      { cpu: '7', memory: '8Gi' },
    ],
    ['overbooked: negative', sized('1', { cpu: '1' }, { cpu: '2' }), { cpu: '-1' }],
    ['requests for resources not offered', sized('1', {}, { cpu: '1' }), { cpu: '-1' }],
    ['nothing known', cluster('1'), {}],
  ])('%s', (_name, c, free) => {
    expect(formatResourceList(freeCapacity(c))).toEqual(free);
  });

  test('an unreadable status names the field and the cluster', () => {
    expect(() => freeCapacity(sized('7', { cpu: '1' }, { cpu: 'lots' }))).toThrow(
      'invalid quantity "lots" for cpu in status.requests of cluster 7',
    );
  });
});

describe('resource-aware: one ledger', () => {
  const podIn = (namespace: string, cpu: string): PodResources => ({
    metadata: { name: 'p', namespace },
    spec: { containers: [{ name: 'c', resources: { requests: { cpu } } }] },
    status: { phase: 'Running' },
  });

  test('GIVEN a cluster whose placed instance runs its pods WHEN its free capacity is read THEN the instance counts once, by its reservation', () => {
    // GIVEN 4 CPUs, an instance reserved 2 CPUs and runs pods of 2 CPUs in its namespace, and 1 CPU of other pods
    const probed = clusterResources({
      totalCapacity: { cpu: '4' },
      pods: [podIn('sf-placed', '1500m'), podIn('sf-placed', '500m'), podIn('team-a', '1')],
      instanceNamespaces: { prefix: 'sf-' },
    });
    const sfcluster: SFCluster = {
      apiVersion: 'resource.servicefabrik.io/v1alpha1',
      kind: 'SFCluster',
      metadata: { name: '2', namespace: 'interoperator' },
      spec: { secretRef: '2-kubeconfig', totalCapacity: { cpu: '4' } },
      status: { phase: 'running', ...probed, reserved: { placed: { cpu: '2' } } },
    };
    // THEN 1 CPU is free (4 − 1 of other pods − 2 reserved), not −1
    expect(formatResourceList(freeCapacity(clusterSnapshot(sfcluster)))).toEqual({ cpu: '1' });
  });
});

describe('resource-aware: shortfall', () => {
  test.each<[string, ClusterSnapshot, Record<string, string>, string | undefined]>([
    ['fits', sized('1', { cpu: '4' }, { cpu: '1' }, { cpu: '1' }), { cpu: '1' }, undefined],
    ['fits exactly', sized('1', { cpu: '4' }, { cpu: '1' }, { cpu: '1' }), { cpu: '2' }, undefined],
    [
      'short of one resource',
      sized('1', { cpu: '4', memory: '4Gi' }, { cpu: '1' }, { cpu: '2' }),
      { cpu: '2', memory: '1Gi' },
      'needs 2 CPU, 1 CPU free',
    ],
    [
      'short of two, overbooked shown as none free',
      sized('1', { cpu: '1', memory: '1Gi' }, { cpu: '2' }),
      { cpu: '1', memory: '2Gi' },
      'needs 1 CPU, 0 CPU free and needs 2Gi memory, 1Gi memory free',
    ],
    ['nothing requested', sized('1', {}), {}, undefined],
  ])('%s', (_name, c, requests, expected) => {
    expect(shortfall(c, parseResourceList(requests, 'requests'))).toBe(expected);
  });
});

describe('resource-aware: filter', () => {
  test.each<[string, Record<string, string>, ClusterSnapshot, Verdict]>([
    ['fits', { cpu: '2', memory: '4Gi' }, sized('1', { cpu: '4', memory: '8Gi' }), { code: 'Success' }],
    ['fits exactly', { cpu: '4' }, sized('1', { cpu: '4' }), { code: 'Success' }],
    [
      'too little cpu',
      { cpu: '2' },
      sized('1', { cpu: '4' }, { cpu: '2500m' }),
      { code: 'Unschedulable', reason: 'needs 2 CPU, 1.5 CPU free' },
    ],
    [
      'too little of both',
      { cpu: '2', memory: '4Gi' },
      sized('1', { cpu: '1', memory: '1Gi' }),
      { code: 'Unschedulable', reason: 'needs 2 CPU, 1 CPU free and needs 4Gi memory, 1Gi memory free' },
    ],
    [
      'reservations count',
      { cpu: '1' },
      sized('1', { cpu: '4' }, {}, { cpu: '3500m' }),
      { code: 'Unschedulable', reason: 'needs 1 CPU, 0.5 CPU free' },
    ],
    [
      'overbooked shows nothing free',
      { cpu: '1' },
      sized('1', { cpu: '1' }, { cpu: '3' }),
      { code: 'Unschedulable', reason: 'needs 1 CPU, 0 CPU free' },
    ],
    [
      'a resource the cluster lacks',
      { 'nvidia.com/gpu': '1' },
      sized('1', { cpu: '4' }),
      { code: 'Unschedulable', reason: 'needs 1 nvidia.com/gpu, 0 nvidia.com/gpu free' },
    ],
    [
      'unknown capacity',
      { cpu: '1' },
      cluster('1'),
      { code: 'Unschedulable', reason: 'capacity unknown (no nodes, no spec.totalCapacity)' },
    ],
    ['nothing requested fits anywhere', {}, cluster('1'), { code: 'Success' }],
    ['zero requested fits anywhere', { cpu: '0' }, cluster('1'), { code: 'Success' }],
    [
      'an unreadable cluster',
      { cpu: '1' },
      sized('1', { cpu: 'x' }),
      {
        code: 'Error',
        reason:
          'invalid quantity "x" for cpu in status.allocatable of cluster 1: expected a decimal number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)',
      },
    ],
  ])('%s', (_name, requests, c, verdict) => {
    const plugin = resourceAware();
    const cycle: Cycle = { request: wants(requests), state: {}, data: new Map() };
    expect(plugin.preFilter!(cycle)).toEqual({ code: 'Success' });
    expect(plugin.filter!(cycle, c)).toEqual(verdict);
  });

  test.each<[Record<string, string>, Verdict]>([
    [
      { cpu: 'two' },
      {
        code: 'Error',
        reason:
          'invalid quantity "two" for cpu in the plan\'s context.requests: expected a decimal number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)',
      },
    ],
    [{ cpu: '-1' }, { code: 'Error', reason: "the plan's context.requests asks for a negative cpu" }],
  ])('pre-filter refuses the request %j', (requests, verdict) => {
    expect(resourceAware().preFilter!({ request: wants(requests), state: {}, data: new Map() })).toEqual(
      verdict,
    );
  });
});

describe('resource-aware: decisions', () => {
  test.each<[string, Record<string, string>, ClusterSnapshot[], { clusterId?: string; summary: string }]>([
    [
      'the most free capacity wins; the others say why not',
      { cpu: '2' },
      [
        sized('1', { cpu: '8' }, {}, {}, { schedulingDisabled: true }),
        sized('2', { cpu: '8' }, {}, {}, { phase: 'offline' }),
        sized('3', { cpu: '8' }, { cpu: '1500m' }),
        sized('4', { cpu: '4' }, { cpu: '1' }),
        sized('5', { cpu: '2' }, { cpu: '1' }),
      ],
      {
        clusterId: '3',
        summary: 'chose 3: 6.5 CPU free; 4: 3 CPU free; 1: cordoned; 2: offline; 5: needs 2 CPU, 1 CPU free',
      },
    ],
    [
      'absolute free capacity, not the share',
      { cpu: '1' },
      [sized('1', { cpu: '100' }, { cpu: '60' }), sized('2', { cpu: '10' }, { cpu: '1' })],
      { clusterId: '1', summary: 'chose 1: 40 CPU free; 2: 9 CPU free' },
    ],
    [
      'all requested resources count, averaged',
      { cpu: '1', memory: '1Gi' },
      [sized('1', { cpu: '9', memory: '2Gi' }), sized('2', { cpu: '5', memory: '9Gi' })],
      { clusterId: '2', summary: 'chose 2: 5 CPU, 9Gi memory free; 1: 9 CPU, 2Gi memory free' },
    ],
    [
      'equal free capacity: the lowest id',
      { cpu: '1' },
      [sized('2', { cpu: '4' }), sized('1', { cpu: '4' })],
      { clusterId: '1', summary: 'chose 1: 4 CPU free; 2: 4 CPU free' },
    ],
    [
      'nothing requested: the most free cpu and memory, unknown capacity counting as none',
      {},
      [cluster('1'), sized('2', { cpu: '4', memory: '4Gi' }), sized('3', { cpu: '8', memory: '3Gi' })],
      {
        clusterId: '3',
        summary: 'chose 3: 8 CPU, 3Gi memory free; 2: 4 CPU, 4Gi memory free; 1: 0 CPU, 0 memory free',
      },
    ],
    [
      'room nowhere',
      { cpu: '16' },
      [sized('1', { cpu: '8' }), cluster('2')],
      {
        summary:
          'no eligible cluster: 1: needs 16 CPU, 8 CPU free; 2: capacity unknown (no nodes, no spec.totalCapacity)',
      },
    ],
  ])('%s', (_name, requests, clusters, expected) => {
    const decision = schedule({ scheduler: 'resource-aware', clusters, request: wants(requests) });
    expect({ clusterId: decision.clusterId, summary: decision.summary }).toEqual(expected);
  });

  test('scores: what is left after the instance, as a share of the most left anywhere', () => {
    const decision = schedule({
      scheduler: 'resource-aware',
      clusters: [sized('1', { cpu: '5' }), sized('2', { cpu: '3' }), sized('3', { cpu: '1' })],
      request: wants({ cpu: '1' }),
    });
    expect(decision.reasons).toEqual([
      { clusterId: '1', eligible: true, score: 100 },
      { clusterId: '2', eligible: true, score: 50 },
      { clusterId: '3', eligible: true, score: 0 },
    ]);
  });

  test('placing one after another, reserving each time, never overbooks and fills the roomiest first', () => {
    let clusters = [sized('1', { cpu: '4' }), sized('2', { cpu: '3' })];
    const chosen: (string | undefined)[] = [];
    for (let i = 0; i < 9; i++) {
      const decision = schedule({ scheduler: 'resource-aware', clusters, request: wants({ cpu: '1' }) });
      chosen.push(decision.clusterId);
      clusters = clusters.map((c) =>
        c.id === decision.clusterId
          ? { ...c, reserved: { cpu: String(Number(c.reserved.cpu ?? 0) + 1) } }
          : c,
      );
    }
    expect(chosen).toEqual(['1', '1', '2', '1', '2', '1', '2', undefined, undefined]);
  });
});
