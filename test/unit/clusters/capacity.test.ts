import {
  clusterRequests,
  clusterResources,
  isInstanceNamespace,
  nodeTotals,
  podFieldSelector,
  podRequests,
  type ContainerResources,
  type NodeResources,
  type PodResources,
} from '../../../src/clusters/capacity.js';
import { formatResourceList } from '../../../src/clusters/quantity.js';

const node = (capacity: Record<string, string>, allocatable?: Record<string, string>, cordoned = false) =>
  ({
    metadata: { name: 'n' },
    spec: { unschedulable: cordoned },
    status: { capacity, ...(allocatable ? { allocatable } : {}) },
  }) satisfies NodeResources;

const container = (requests: Record<string, string>, extra: Partial<ContainerResources> = {}) =>
  ({ resources: { requests }, ...extra }) satisfies ContainerResources;
const sidecar = (requests: Record<string, string>) => container(requests, { restartPolicy: 'Always' });

const pod = (spec: PodResources['spec'], phase = 'Running'): PodResources => ({
  metadata: { name: 'p', namespace: 'ns' },
  spec,
  status: { phase },
});

describe('nodeTotals', () => {
  test.each<[string, NodeResources[], Record<string, string>, Record<string, string>]>([
    ['no nodes', [], {}, {}],
    [
      'two nodes add up',
      [
        node({ cpu: '4', memory: '16Gi', pods: '110' }, { cpu: '3800m', memory: '15Gi', pods: '110' }),
        node({ cpu: '2', memory: '8Gi' }, { cpu: '1900m', memory: '7Gi' }),
      ],
      { cpu: '6', memory: '24Gi', pods: '110' },
      { cpu: '5700m', memory: '22Gi', pods: '110' },
    ],
    [
      'a node without allocatable offers its capacity',
      [node({ cpu: '2', memory: '1Gi' })],
      { cpu: '2', memory: '1Gi' },
      { cpu: '2', memory: '1Gi' },
    ],
    [
      'a cordoned node counts in capacity only',
      [node({ cpu: '4' }, { cpu: '4' }), node({ cpu: '8' }, { cpu: '8' }, true)],
      { cpu: '12' },
      { cpu: '4' },
    ],
  ])('%s', (_name, nodes, capacity, allocatable) => {
    const totals = nodeTotals(nodes);
    expect(formatResourceList(totals.capacity)).toEqual(capacity);
    expect(formatResourceList(totals.allocatable)).toEqual(allocatable);
  });
});

describe('podRequests, by the Kubernetes scheduler rules', () => {
  test.each<[string, PodResources['spec'], Record<string, string>]>([
    ['no containers', {}, {}],
    [
      'app containers add up',
      { containers: [container({ cpu: '250m' }), container({ cpu: '500m', memory: '1Gi' })] },
      { cpu: '750m', memory: '1Gi' },
    ],
    [
      'a missing request defaults to the limit',
      { containers: [{ resources: { limits: { cpu: '1', memory: '2Gi' }, requests: { cpu: '100m' } } }] },
      { cpu: '100m', memory: '2Gi' },
    ],
    [
      'an init container larger than the apps sets the need',
      { initContainers: [container({ cpu: '2' })], containers: [container({ cpu: '500m', memory: '1Gi' })] },
      { cpu: '2', memory: '1Gi' },
    ],
    [
      'init containers run one at a time: the largest counts',
      {
        initContainers: [container({ cpu: '1' }), container({ cpu: '3' }), container({ cpu: '2' })],
        containers: [container({ cpu: '1' })],
      },
      { cpu: '3' },
    ],
    [
      'sidecars add to the apps',
      { initContainers: [sidecar({ cpu: '200m' })], containers: [container({ cpu: '1' })] },
      { cpu: '1200m' },
    ],
    [
      'an init container after a sidecar runs beside it',
      {
        initContainers: [sidecar({ cpu: '500m' }), container({ cpu: '2' })],
        containers: [container({ cpu: '1' })],
      },
      { cpu: '2500m' },
    ],
    [
      'an init container before a sidecar does not run beside it',
      {
        initContainers: [container({ cpu: '2' }), sidecar({ cpu: '500m' })],
        containers: [container({ cpu: '1' })],
      },
      { cpu: '2' },
    ],
    [
      'overhead comes on top',
      { containers: [container({ cpu: '1', memory: '1Gi' })], overhead: { cpu: '250m', memory: '128Mi' } },
      { cpu: '1250m', memory: '1152Mi' },
    ],
    [
      'pod-level requests replace the containers for the resources they name',
      {
        containers: [container({ cpu: '1', memory: '1Gi' })],
        resources: { requests: { cpu: '3' } },
        overhead: { cpu: '100m' },
      },
      { cpu: '3100m', memory: '1Gi' },
    ],
  ])('%s', (_name, spec, requests) => {
    expect(formatResourceList(podRequests(pod(spec)))).toEqual(requests);
  });

  test('an invalid quantity names the pod and the container', () => {
    expect(() => podRequests(pod({ containers: [container({ cpu: 'x' }, { name: 'db' })] }))).toThrow(
      'invalid quantity "x" for cpu in pod ns/p container db requests',
    );
  });
});

describe('clusterRequests', () => {
  test('sums the pods that have not finished', () => {
    const pods = [
      pod({ containers: [container({ cpu: '1' })] }, 'Running'),
      pod({ containers: [container({ cpu: '2' })] }, 'Pending'),
      pod({ containers: [container({ cpu: '4' })] }, 'Succeeded'),
      pod({ containers: [container({ cpu: '8' })] }, 'Failed'),
      { spec: { containers: [container({ cpu: '16' })] } },
    ];
    expect(formatResourceList(clusterRequests(pods))).toEqual({ cpu: '19' });
  });

  test('GIVEN pods of instance namespaces WHEN summed THEN only the others count: their reservations book them', () => {
    const inNamespace = (namespace: string, cpu: string): PodResources => ({
      metadata: { name: 'p', namespace },
      spec: { containers: [container({ cpu })] },
      status: { phase: 'Running' },
    });
    const pods = [
      inNamespace('sf-0b7c', '1'),
      inNamespace('instances', '2'),
      inNamespace('kube-system', '4'),
      inNamespace('team-a', '8'),
    ];
    const instances = { prefix: 'sf-', shared: 'instances' };
    expect(formatResourceList(clusterRequests(pods, instances))).toEqual({ cpu: '12' });
    expect(formatResourceList(clusterRequests(pods, { prefix: 'sf-' }))).toEqual({ cpu: '14' });
    expect(formatResourceList(clusterRequests(pods))).toEqual({ cpu: '15' });
  });
});

describe('isInstanceNamespace', () => {
  test.each<[string | undefined, string | undefined, boolean]>([
    ['sf-0b7c', undefined, true],
    ['sf-0b7c', 'instances', true],
    ['instances', 'instances', true],
    ['instances', undefined, false],
    ['default', 'instances', false],
    [undefined, 'instances', false],
    ['', '', false],
  ])('%s with shared namespace %s: %s', (namespace, shared, expected) => {
    expect(
      isInstanceNamespace(namespace, { prefix: 'sf-', ...(shared !== undefined ? { shared } : {}) }),
    ).toBe(expected);
  });
});

describe('podFieldSelector', () => {
  test.each<[string, Parameters<typeof podFieldSelector>[0], string]>([
    ['every namespace', undefined, 'status.phase!=Succeeded,status.phase!=Failed'],
    ['per-instance namespaces only', { prefix: 'sf-' }, 'status.phase!=Succeeded,status.phase!=Failed'],
    [
      'a shared instance namespace',
      { prefix: 'sf-', shared: 'instances' },
      'status.phase!=Succeeded,status.phase!=Failed,metadata.namespace!=instances',
    ],
  ])('%s', (_name, instances, expected) => {
    expect(podFieldSelector(instances)).toBe(expected);
  });
});

describe('clusterResources', () => {
  const nodes = [node({ cpu: '4', memory: '8Gi' }, { cpu: '3', memory: '7Gi' })];
  const pods = [pod({ containers: [container({ cpu: '1500m', memory: '1Gi' })] })];

  test.each<[string, Parameters<typeof clusterResources>[0], ReturnType<typeof clusterResources>]>([
    ['nothing known', {}, { capacity: {}, allocatable: {}, requests: {} }],
    [
      'from the nodes and pods',
      { nodes, pods },
      {
        capacity: { cpu: '4', memory: '8Gi' },
        allocatable: { cpu: '3', memory: '7Gi' },
        requests: { cpu: '1500m', memory: '1Gi' },
      },
    ],
    [
      'declared capacity replaces the nodes, in canonical form',
      { totalCapacity: { cpu: 10, memory: '16384Mi' }, nodes, pods },
      {
        capacity: { cpu: '10', memory: '16Gi' },
        allocatable: { cpu: '10', memory: '16Gi' },
        requests: { cpu: '1500m', memory: '1Gi' },
      },
    ],
    [
      'the pods of instance namespaces are left out',
      {
        nodes,
        pods: [...pods, { ...pods[0]!, metadata: { name: 'db-0', namespace: 'sf-0b7c' } }],
        instanceNamespaces: { prefix: 'sf-' },
      },
      {
        capacity: { cpu: '4', memory: '8Gi' },
        allocatable: { cpu: '3', memory: '7Gi' },
        requests: { cpu: '1500m', memory: '1Gi' },
      },
    ],
    [
      'an empty declaration counts as none',
      { totalCapacity: {}, nodes },
      { capacity: { cpu: '4', memory: '8Gi' }, allocatable: { cpu: '3', memory: '7Gi' }, requests: {} },
    ],
  ])('%s', (_name, input, expected) => {
    expect(clusterResources(input)).toEqual(expected);
  });

  test('an invalid declared capacity names the field', () => {
    expect(() => clusterResources({ totalCapacity: { cpu: 'many' } })).toThrow(
      'invalid quantity "many" for cpu in spec.totalCapacity',
    );
  });
});
