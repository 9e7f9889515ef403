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

/** What the pods' network is made of, from the host's side. */
export interface PodNetwork {
  /** @default NODE_BRIDGE */
  readonly bridge: string;
  /** The host's address on the bridge. @default NODE_HOST_ADDRESS */
  readonly hostAddress: string;
  /** @default NODE_POD_CIDR */
  readonly podCidr: string;
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
      name: CNI_NETWORK,
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
): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${network.hostAddress}
port: ${ports.kubelet}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${ports.healthz}
# The apiserver (pod logs, exec) calls the kubelet without a client certificate; it listens on
# the bridge's host address only.
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
failSwapOn: false
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
