/**
 * What the node of dev/local/kube-node.ts is configured with, as text: containerd's configuration,
 * the pods' CNI network and the kubelet's configuration, from the node's folder and network. Pure.
 */
import path from 'node:path';

/** The bridge the node's pods are attached to. */
export const NODE_BRIDGE = 'interop0';
/** The pods' addresses (host-local leases on the bridge). */
export const NODE_POD_CIDR = '10.244.0.0/24';
/** The host's address on the bridge: the pods' gateway, the master apiserver's address, the host for pods. */
export const NODE_HOST_ADDRESS = '10.244.0.1';
/** The sandbox ("pause") image containerd runs for every pod, made from busybox. */
export const PAUSE_IMAGE = 'localhost/interop/pause:1';
/** The CNI network of the pods. */
export const CNI_NETWORK = 'interop-pods';

/**
 * The network of a node of a sister cluster, in a network namespace of its own so that its
 * kube-proxy's rules and its Service range stay apart from the master's node: a veth pair joins
 * the namespace to the host (the sister's apiserver listens on the host's end), and inside it the
 * pods' bridge has a name and a Service route of its own, as on the host.
 */
export const SISTER_NODE_NETWORK = {
  netns: 'interop-sister-node',
  /** The host's end of the veth pair, and its address: the sister apiserver's. */
  hostLink: 'interop-sn0',
  hostLinkAddress: '10.245.0.1',
  /** The namespace's end, and its address: the node's. */
  nodeLink: 'uplink0',
  nodeAddress: '10.245.0.2',
  linkPrefix: 30,
  bridge: 'interop0',
  podCidr: '10.244.1.0/24',
  gateway: '10.244.1.1',
  cniNetwork: 'interop-pods-sister',
} as const;

/** What the pods' network is made of, from the node's side. */
export interface PodNetwork {
  /** @default NODE_BRIDGE */
  readonly bridge: string;
  /** The bridge's own address: the pods' gateway. @default NODE_HOST_ADDRESS */
  readonly hostAddress: string;
  /** @default NODE_POD_CIDR */
  readonly podCidr: string;
  /**
   * The node's address: its kubelet listens there (the apiserver reaches it there) and kube-proxy
   * serves node ports there. The bridge's own address for a node on the host's network.
   * @default NODE_HOST_ADDRESS
   */
  readonly nodeAddress: string;
  /** The CNI network's name, which also names containerd's records of each pod's network. @default CNI_NETWORK */
  readonly cniNetwork: string;
  /** The network namespace (`ip netns`) the node runs in; unset: the host's own network. */
  readonly netns?: string;
}

/** The paths of one node's work folder. */
export type NodeLayout = ReturnType<typeof nodeLayout>;

export function nodeLayout(workDir: string) {
  return {
    workDir,
    containerdRoot: path.join(workDir, 'containerd', 'root'),
    containerdState: path.join(workDir, 'containerd', 'state'),
    containerdAddress: path.join(workDir, 'containerd', 'containerd.sock'),
    containerdConfig: path.join(workDir, 'containerd', 'config.toml'),
    cniConfDir: path.join(workDir, 'cni', 'net.d'),
    cniLeases: path.join(workDir, 'cni', 'leases'),
    kubeletRoot: path.join(workDir, 'kubelet'),
    kubeletConfig: path.join(workDir, 'kubelet-config.yaml'),
    podLogsDir: path.join(workDir, 'pod-logs'),
    kernelSettings: path.join(workDir, 'kernel-settings.json'),
  };
}

export function containerdConfig(paths: NodeLayout): string {
  return `version = 2
root = "${paths.containerdRoot}"
state = "${paths.containerdState}"

[grpc]
  address = "${paths.containerdAddress}"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "${path.join(paths.workDir, 'containerd', 'opt')}"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "${PAUSE_IMAGE}"
    # This machine's root lacks CAP_SYS_RESOURCE: runc cannot lower a container's OOM score below
    # its own, and every sandbox would fail to start.
    restrict_oom_score_adj = true
    # The pods' network namespaces are mounted in the node's folder, where stop() finds them.
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "${paths.cniConfDir}"
      max_conf_num = 1
`;
}

export function cniConflist(paths: NodeLayout, network: PodNetwork): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: network.cniNetwork,
      plugins: [
        {
          type: 'bridge',
          bridge: network.bridge,
          isGateway: true,
          // No masquerading: pods reach the host and each other, never another network.
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: paths.cniLeases,
            ranges: [[{ subnet: network.podCidr, gateway: network.hostAddress }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(
  paths: NodeLayout,
  network: PodNetwork,
  ports: { kubelet: number; healthz: number },
  cgroupRoot?: string,
): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${network.nodeAddress}
port: ${ports.kubelet}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${ports.healthz}
# The apiserver (pod logs, exec) calls the kubelet without a client certificate; it listens on
# the node's address only.
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
${cgroupRoot ? `# Its pods' cgroups under a root of its own: a kubelet removes pod cgroups it does not know.\ncgroupRoot: ${cgroupRoot}\n` : ''}failSwapOn: false
containerRuntimeEndpoint: unix://${paths.containerdAddress}
podLogsDir: ${paths.podLogsDir}
# Images are imported, never pulled: none may be collected, and a full shared disk evicts nothing.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
serializeImagePulls: false
`;
}
