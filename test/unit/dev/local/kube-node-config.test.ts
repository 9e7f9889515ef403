/** The node's configuration files (dev/local/kube-node-config.ts), as the node writes them. */
import {
  cniConflist,
  containerdConfig,
  kubeletConfig,
  nodeLayout,
  NODE_BRIDGE,
  NODE_HOST_ADDRESS,
  NODE_POD_CIDR,
  PAUSE_IMAGE,
  SISTER_NODE_NETWORK,
  CNI_NETWORK,
} from '../../../../dev/local/kube-node-config.js';

const network = {
  bridge: NODE_BRIDGE,
  hostAddress: NODE_HOST_ADDRESS,
  podCidr: NODE_POD_CIDR,
  nodeAddress: NODE_HOST_ADDRESS,
  cniNetwork: CNI_NETWORK,
};
const sister = SISTER_NODE_NETWORK;
const sisterNetwork = {
  bridge: sister.bridge,
  hostAddress: sister.gateway,
  podCidr: sister.podCidr,
  nodeAddress: sister.nodeAddress,
  cniNetwork: sister.cniNetwork,
  netns: sister.netns,
};
const paths = nodeLayout('/run/node');

describe("the node's configuration", () => {
  test('GIVEN a work folder WHEN laid out THEN everything the node writes is in it', () => {
    expect(Object.values(paths).every((p) => p === '/run/node' || p.startsWith('/run/node/'))).toBe(true);
    expect(paths.containerdAddress).toBe('/run/node/containerd/containerd.sock');
  });

  test.each([
    ['its own root', 'root = "/run/node/containerd/root"'],
    ['its own state', 'state = "/run/node/containerd/state"'],
    ['its own socket', 'address = "/run/node/containerd/containerd.sock"'],
    ['the local pause image', `sandbox_image = "${PAUSE_IMAGE}"`],
    ['OOM scores only raised (no CAP_SYS_RESOURCE)', 'restrict_oom_score_adj = true'],
    ['network namespaces in its state folder', 'netns_mounts_under_state_dir = true'],
    ['cgroupfs, as the kubelet', 'SystemdCgroup = false'],
    ["Debian's CNI plugins", 'bin_dir = "/usr/lib/cni"'],
    ['our CNI network only', 'conf_dir = "/run/node/cni/net.d"'],
  ])('GIVEN the layout WHEN containerd is configured THEN it has %s', (_what, line) => {
    expect(containerdConfig(paths)).toContain(line);
  });

  test('GIVEN the network WHEN the CNI network is written THEN pods lease on the bridge, unmasqueraded, the host as gateway', () => {
    expect(JSON.parse(cniConflist(paths, network))).toEqual({
      cniVersion: '1.0.0',
      name: 'interop-pods',
      plugins: [
        {
          type: 'bridge',
          bridge: 'interop0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: '/run/node/cni/leases',
            ranges: [[{ subnet: '10.244.0.0/24', gateway: '10.244.0.1' }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
      ],
    });
  });

  test.each([
    ['listens on the bridge only', 'address: 10.244.0.1\nport: 10250\n'],
    ['no read-only port', 'readOnlyPort: 0'],
    ['its health on loopback', 'healthzBindAddress: 127.0.0.1\nhealthzPort: 10248\n'],
    ['containerd of the node', 'containerRuntimeEndpoint: unix:///run/node/containerd/containerd.sock'],
    ["pods' logs in the folder", 'podLogsDir: /run/node/pod-logs'],
    ['no image collected', 'imageGCHighThresholdPercent: 100'],
    ['cgroupfs', 'cgroupDriver: cgroupfs'],
  ])('GIVEN ports WHEN the kubelet is configured THEN it %s', (_what, text) => {
    expect(kubeletConfig(paths, network, { kubelet: 10250, healthz: 10248 })).toContain(text);
  });

  test('GIVEN a node on the host network WHEN the kubelet is configured THEN its pods use the cgroup root', () => {
    expect(kubeletConfig(paths, network, { kubelet: 10250, healthz: 10248 })).not.toContain('cgroupRoot');
  });

  test("GIVEN a sister's node in its own namespace WHEN configured THEN it listens on its link, leases its own range, and keeps its pods' cgroups under its own root", () => {
    const kubelet = kubeletConfig(
      paths,
      sisterNetwork,
      { kubelet: 10250, healthz: 10248 },
      '/interop-sister-node',
    );
    expect(kubelet).toContain(`address: ${sister.nodeAddress}\n`);
    expect(kubelet).toContain('cgroupRoot: /interop-sister-node\n');
    const cni = JSON.parse(cniConflist(paths, sisterNetwork));
    expect(cni.name).toBe('interop-pods-sister');
    expect(cni.name).not.toBe(CNI_NETWORK);
    expect(cni.plugins[0].ipam.ranges).toEqual([[{ subnet: '10.244.1.0/24', gateway: '10.244.1.1' }]]);
  });
});
