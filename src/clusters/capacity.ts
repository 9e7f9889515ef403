/**
 * What a cluster holds and what is asked of it: capacity and allocatable from its nodes (or from
 * the capacity its SFCluster declares), requests as the sum of its pods' requests, counted by the
 * rules the Kubernetes scheduler uses.
 *
 * One ledger: an instance's booking is its reservation (`SFCluster.status.reserved`, its plan's
 * `context.requests`), held from its placement until it is removed. The pods of instance
 * namespaces (the broker's `sf-…` ones, or the landscape's one shared instance namespace) are
 * therefore left out of the requests: counting them too would count every running instance twice,
 * and leaving them out (rather than releasing the reservation once the pods exist) leaves no moment
 * at which an instance counts nowhere.
 *
 * Pure: the inputs are the fields of Node and Pod objects this logic reads, so the objects the
 * apiserver returns fit as they are.
 */
import {
  addAmounts,
  formatResourceList,
  maxAmounts,
  parseResourceList,
  type Amounts,
  type ResourceList,
  type ResourceListInput,
} from './quantity.js';

/** The fields of a Kubernetes Node that capacity reads. */
export interface NodeResources {
  readonly metadata?: { readonly name?: string };
  readonly spec?: { readonly unschedulable?: boolean };
  readonly status?: {
    readonly capacity?: ResourceListInput;
    readonly allocatable?: ResourceListInput;
  };
}

/** The fields of a container that requests read. */
export interface ContainerResources {
  readonly name?: string;
  /** `Always` on an init container makes it a sidecar that runs beside the app containers. */
  readonly restartPolicy?: string;
  readonly resources?: {
    readonly requests?: ResourceListInput;
    readonly limits?: ResourceListInput;
  };
}

/** The fields of a Kubernetes Pod that requests read. */
export interface PodResources {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly spec?: {
    readonly containers?: readonly ContainerResources[];
    readonly initContainers?: readonly ContainerResources[];
    /** Per-pod overhead of its runtime class, added on top of the containers. */
    readonly overhead?: ResourceListInput;
    /** Pod-level requests; where they name a resource, they replace the containers' sum. */
    readonly resources?: { readonly requests?: ResourceListInput };
  };
  readonly status?: { readonly phase?: string };
}

/** A node reduced to the fields capacity reads, so that a probe keeps no more of it. */
export function nodeResources(node: NodeResources): NodeResources {
  const { metadata, spec, status } = node;
  return {
    ...(metadata?.name !== undefined ? { metadata: { name: metadata.name } } : {}),
    ...(spec?.unschedulable ? { spec: { unschedulable: true } } : {}),
    status: {
      ...(status?.capacity ? { capacity: status.capacity } : {}),
      ...(status?.allocatable ? { allocatable: status.allocatable } : {}),
    },
  };
}

const containerResources = (container: ContainerResources): ContainerResources => ({
  ...(container.name !== undefined ? { name: container.name } : {}),
  ...(container.restartPolicy !== undefined ? { restartPolicy: container.restartPolicy } : {}),
  ...(container.resources ? { resources: container.resources } : {}),
});

/** A pod reduced to the fields requests read, so that a probe keeps no more of it. */
export function podResources(pod: PodResources): PodResources {
  const { metadata, spec, status } = pod;
  return {
    metadata: {
      ...(metadata?.name !== undefined ? { name: metadata.name } : {}),
      ...(metadata?.namespace !== undefined ? { namespace: metadata.namespace } : {}),
    },
    spec: {
      containers: (spec?.containers ?? []).map(containerResources),
      ...(spec?.initContainers ? { initContainers: spec.initContainers.map(containerResources) } : {}),
      ...(spec?.overhead ? { overhead: spec.overhead } : {}),
      ...(spec?.resources?.requests ? { resources: { requests: spec.resources.requests } } : {}),
    },
    ...(status?.phase !== undefined ? { status: { phase: status.phase } } : {}),
  };
}

/** Capacity and allocatable of a cluster, summed over its nodes. */
export interface NodeTotals {
  readonly capacity: Amounts;
  readonly allocatable: Amounts;
}

/**
 * Capacity and allocatable summed over the nodes. A node without `allocatable` offers its
 * capacity; a cordoned node (`spec.unschedulable`) counts in capacity but offers nothing.
 */
export function nodeTotals(nodes: readonly NodeResources[]): NodeTotals {
  let capacity: Amounts = {};
  let allocatable: Amounts = {};
  for (const node of nodes) {
    const where = `node ${node.metadata?.name ?? '?'}`;
    const nodeCapacity = parseResourceList(node.status?.capacity, `${where} capacity`);
    capacity = addAmounts(capacity, nodeCapacity);
    if (node.spec?.unschedulable) continue;
    allocatable = addAmounts(
      allocatable,
      node.status?.allocatable
        ? parseResourceList(node.status.allocatable, `${where} allocatable`)
        : nodeCapacity,
    );
  }
  return { capacity, allocatable };
}

/** A container's requests, defaulted from its limits where a request is missing, as the apiserver does. */
function containerRequests(container: ContainerResources, where: string): Amounts {
  const limits = parseResourceList(container.resources?.limits, `${where} limits`);
  const requests = parseResourceList(container.resources?.requests, `${where} requests`);
  return { ...limits, ...requests };
}

/**
 * What a pod asks of its cluster, as the Kubernetes scheduler counts it: the app containers
 * together with the sidecars (init containers with `restartPolicy: Always`), or the largest need
 * while the init containers run (each beside the sidecars started before it), whichever is larger
 * per resource; then pod-level requests where given, and the pod's overhead on top.
 */
export function podRequests(pod: PodResources): Amounts {
  const name = `pod ${pod.metadata?.namespace ? `${pod.metadata.namespace}/` : ''}${pod.metadata?.name ?? '?'}`;
  const spec = pod.spec ?? {};
  let apps: Amounts = {};
  for (const container of spec.containers ?? [])
    apps = addAmounts(apps, containerRequests(container, `${name} container ${container.name ?? '?'}`));
  let sidecars: Amounts = {};
  let initPeak: Amounts = {};
  for (const container of spec.initContainers ?? []) {
    const requests = containerRequests(container, `${name} init container ${container.name ?? '?'}`);
    if (container.restartPolicy === 'Always') {
      sidecars = addAmounts(sidecars, requests);
      initPeak = maxAmounts(initPeak, sidecars);
    } else {
      initPeak = maxAmounts(initPeak, addAmounts(requests, sidecars));
    }
  }
  let total = maxAmounts(addAmounts(apps, sidecars), initPeak);
  if (spec.resources?.requests)
    total = { ...total, ...parseResourceList(spec.resources.requests, `${name} pod-level requests`) };
  return addAmounts(total, parseResourceList(spec.overhead, `${name} overhead`));
}

/** Pods that hold no resources any more. */
const FINISHED_PHASES = new Set(['Succeeded', 'Failed']);

/** The phases of pods that hold no resources any more, in the order a field selector names them. */
export const FINISHED_POD_PHASES: readonly string[] = [...FINISHED_PHASES];

/** Where instances keep their pods: namespaces whose pods their reservations already book. */
export interface InstanceNamespaces {
  /** Prefix of the per-instance namespaces (`sf-`). */
  readonly prefix: string;
  /** The one namespace of all instances, when the landscape has one. */
  readonly shared?: string;
}

/** Whether a namespace holds instances' pods, which their reservations book. */
export function isInstanceNamespace(namespace: string | undefined, instances: InstanceNamespaces): boolean {
  if (namespace === undefined) return false;
  return (
    namespace.startsWith(instances.prefix) || (Boolean(instances.shared) && namespace === instances.shared)
  );
}

/**
 * Requests of all pods that have not finished, summed; with `instances`, the pods of instance
 * namespaces are left out (their reservations book them).
 */
export function clusterRequests(pods: readonly PodResources[], instances?: InstanceNamespaces): Amounts {
  let total: Amounts = {};
  for (const pod of pods) {
    if (FINISHED_PHASES.has(pod.status?.phase ?? '')) continue;
    if (instances && isInstanceNamespace(pod.metadata?.namespace, instances)) continue;
    total = addAmounts(total, podRequests(pod));
  }
  return total;
}

/**
 * The field selector of the pods a probe reads: those not finished, and not in the shared instance
 * namespace (per-instance namespaces cannot be told apart by a field selector; the probe leaves
 * their pods out as it reads them).
 */
export function podFieldSelector(instances?: InstanceNamespaces): string {
  return [
    ...FINISHED_POD_PHASES.map((phase) => `status.phase!=${phase}`),
    ...(instances?.shared ? [`metadata.namespace!=${instances.shared}`] : []),
  ].join(',');
}

/** What a probe reads of a cluster's resources. */
export interface CapacityInput {
  /** `spec.totalCapacity` of the SFCluster: when set, it is the capacity and the allocatable. */
  readonly totalCapacity?: ResourceListInput;
  /** The cluster's nodes; ignored when a total capacity is declared. */
  readonly nodes?: readonly NodeResources[];
  /** The cluster's pods. */
  readonly pods?: readonly PodResources[];
  /** Where instances keep their pods: left out of the requests. @default every pod counts */
  readonly instanceNamespaces?: InstanceNamespaces;
}

/** Whether a `spec.totalCapacity` declares anything: then it replaces the nodes, which need not be read. */
export function declaresCapacity(
  totalCapacity: ResourceListInput | undefined,
): totalCapacity is ResourceListInput {
  return totalCapacity !== undefined && Object.keys(totalCapacity).length > 0;
}

/** Capacity, allocatable and requests of a cluster, as canonical resource lists for its status. */
export interface ClusterResources {
  readonly capacity: ResourceList;
  readonly allocatable: ResourceList;
  readonly requests: ResourceList;
}

/**
 * A cluster's resources for its status: declared capacity when there is one, else the nodes';
 * requests from its pods outside instance namespaces. Lists are canonical (`6500m`, `1Gi`) with resource names sorted.
 *
 * @throws QuantityError naming the field that holds an invalid quantity.
 */
export function clusterResources(input: CapacityInput): ClusterResources {
  let totals: NodeTotals;
  if (declaresCapacity(input.totalCapacity)) {
    const declared = parseResourceList(input.totalCapacity, 'spec.totalCapacity');
    totals = { capacity: declared, allocatable: declared };
  } else {
    totals = nodeTotals(input.nodes ?? []);
  }
  return {
    capacity: formatResourceList(totals.capacity),
    allocatable: formatResourceList(totals.allocatable),
    requests: formatResourceList(clusterRequests(input.pods ?? [], input.instanceNamespaces)),
  };
}
