/**
 * A real Kubernetes node on the master of the local control plane (dev/local/kube-control-plane.ts),
 * so that pods run: containerd with runc, kubelet, kube-proxy in iptables mode and kube-scheduler,
 * all on this machine's own network (not in a namespace of their own), and needing root.
 *
 * The network: a bridge of our own ({@link NODE_BRIDGE}) whose host side ({@link NODE_HOST_ADDRESS})
 * is the pods' gateway and the one address by which pods reach the host. The master apiserver
 * listens and advertises there too (startControlPlane's `nodeAddress`), so that the `kubernetes`
 * Service (10.96.0.1:443) leads pods to it through kube-proxy; a server on the host that pods must
 * reach (the Temporal server, later) listens on that address as well. The Service range is routed
 * into the bridge, and forwarding between the bridge and any other interface is dropped: pods reach
 * each other, their Services and the host, and nothing beyond.
 *
 * Everything the node writes lives under its work folder: containerd's root, state and socket, the
 * kubelet's root folder and the pods' logs, the CNI configuration and address leases, every log.
 * {@link KubeNode.stop} removes what it made outside that folder too (containers, mounts, iptables
 * rules, pod cgroups, the links in /var/log/containers, the kernel settings the kubelet changed)
 * and, in it, containerd's images and snapshots,
 * and the next start sweeps what a run that was killed left behind.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { cacheDir } from '../settings.js';
import { binaryPaths, ensureBinaries } from './binaries.js';
import { SERVICE_CLUSTER_IP_RANGE } from './kube-control-plane.js';
import {
  CNI_NETWORK,
  cniConflist,
  containerdConfig,
  kubeletConfig,
  nodeLayout as layout,
  NODE_BRIDGE,
  NODE_HOST_ADDRESS,
  NODE_POD_CIDR,
  PAUSE_IMAGE,
  SISTER_NODE_NETWORK,
  type PodNetwork,
} from './kube-node-config.js';
import { makeBusyboxImage } from './oci-images.js';

export { NODE_BRIDGE, NODE_HOST_ADDRESS, NODE_POD_CIDR, PAUSE_IMAGE, SISTER_NODE_NETWORK };
import {
  freePort,
  keptRunning,
  startProcess,
  tailOf,
  waitUntilReady,
  type ManagedProcess,
} from './processes.js';

const exec = promisify(execFile);

/** The containerd namespace of the kubelet's images and containers. */
const CRI_NAMESPACE = 'k8s.io';
/** Marks the mangle rules that keep pods' traffic on the bridge. */
const RULE_COMMENT = 'interoperator node: pods reach the bridge only';

/** Kernel settings the kubelet changes on start (its kernel tunables); put back on stop. */
const KUBELET_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

/** A program of the node could not be run, or the node did not come up; the message says which. */
export class KubeNodeError extends Error {
  override readonly name = 'KubeNodeError';
}

async function sh(command: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await exec(command, args, { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const { stderr, message } = err as { stderr?: string; message: string };
    throw new KubeNodeError(`${command} ${args.join(' ')} failed: ${(stderr ?? '').trim() || message}`);
  }
}

/** Runs a clean-up command whose failure only means there was nothing to clean. */
async function tryRun(command: string, args: readonly string[]): Promise<boolean> {
  try {
    await exec(command, args);
    return true;
  } catch {
    return false;
  }
}

const readSysctl = (name: string): string => readFileSync(`/proc/sys/${name}`, 'utf8').trim();
const writeSysctl = (name: string, value: string): void => writeFileSync(`/proc/sys/${name}`, `${value}\n`);

/** The pods' network as made on this machine. */
export interface NodeNetwork extends PodNetwork {
  /** Where the node's cluster's apiserver must listen and advertise, so that the node reaches it. */
  readonly apiserverAddress: string;
  /** Removes what {@link createNodeNetwork} or {@link createSisterNodeNetwork} made, and puts IP forwarding back. */
  remove(): Promise<void>;
}

/** The command and arguments that run `command` in the node's network namespace, if it has one. */
function inNodeNetwork(
  netns: string | undefined,
  command: string,
  args: readonly string[],
): [string, string[]] {
  return netns ? ['nsenter', [`--net=/run/netns/${netns}`, '--', command, ...args]] : [command, [...args]];
}

/** A node's network, and the node, need root. */
function needRoot(): void {
  if (process.getuid?.() !== 0)
    throw new KubeNodeError('a node needs root (bridges, iptables, mounts, containers)');
}

/** Both directions of forwarding between the bridge and any other interface. */
const bridgeOnlyRules = (bridge: string): string[][] =>
  [
    ['-i', bridge, '!', '-o', bridge],
    ['-o', bridge, '!', '-i', bridge],
  ].map((match) => [...match, '-m', 'comment', '--comment', RULE_COMMENT, '-j', 'DROP']);

async function removeBridgeOnlyRules(bridge: string): Promise<void> {
  for (const rule of bridgeOnlyRules(bridge))
    while (await tryRun('iptables', ['-t', 'mangle', '-D', 'FORWARD', ...rule]));
}

/**
 * Makes the pods' bridge with the host's address on it, before the master apiserver starts (it
 * listens there). A bridge of the same name left by a killed run is removed first.
 */
export async function createNodeNetwork(): Promise<NodeNetwork> {
  needRoot();
  const bridge = NODE_BRIDGE;
  await tryRun('ip', ['link', 'del', bridge]);
  await removeBridgeOnlyRules(bridge);
  // The machine's own setting, kept in a file until it is put back: a killed run leaves it changed.
  const savedForwarding = path.join(cacheDir(), 'node', 'ip-forward-before');
  mkdirSync(path.dirname(savedForwarding), { recursive: true });
  if (!existsSync(savedForwarding)) writeFileSync(savedForwarding, readSysctl('net/ipv4/ip_forward'));
  const forwarding = readFileSync(savedForwarding, 'utf8').trim();
  const prefix = NODE_POD_CIDR.split('/')[1];
  await sh('ip', ['link', 'add', bridge, 'type', 'bridge']);
  try {
    await sh('ip', ['addr', 'add', `${NODE_HOST_ADDRESS}/${prefix}`, 'dev', bridge]);
    await sh('ip', ['link', 'set', bridge, 'up']);
    // The host's own connections to Service addresses go into the bridge even before kube-proxy
    // has its rules, never out of another interface.
    await sh('ip', ['route', 'add', SERVICE_CLUSTER_IP_RANGE, 'dev', bridge, 'src', NODE_HOST_ADDRESS]);
    for (const rule of bridgeOnlyRules(bridge))
      await sh('iptables', ['-t', 'mangle', '-I', 'FORWARD', '1', ...rule]);
    // A pod reaching another pod through a Service is forwarded (in and out of the bridge), and
    // the answer, which crosses the bridge only, must pass iptables too to be translated back.
    writeSysctl('net/ipv4/ip_forward', '1');
    await tryRun('modprobe', ['br_netfilter']);
    if (existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables'))
      writeSysctl('net/bridge/bridge-nf-call-iptables', '1');
  } catch (err) {
    await tryRun('ip', ['link', 'del', bridge]);
    await removeBridgeOnlyRules(bridge);
    throw err;
  }
  return {
    bridge,
    hostAddress: NODE_HOST_ADDRESS,
    podCidr: NODE_POD_CIDR,
    nodeAddress: NODE_HOST_ADDRESS,
    apiserverAddress: NODE_HOST_ADDRESS,
    cniNetwork: CNI_NETWORK,
    async remove() {
      await tryRun('ip', ['link', 'del', bridge]);
      await removeBridgeOnlyRules(bridge);
      writeSysctl('net/ipv4/ip_forward', forwarding);
      rmSync(savedForwarding, { force: true });
    },
  };
}

/**
 * Makes the network of a sister cluster's node ({@link SISTER_NODE_NETWORK}), before the sister's
 * apiserver starts (it listens on the host's end of the link): a network namespace joined to the
 * host by a veth pair, and in it the pods' bridge, the Service range's route into it, the rules
 * that keep pods' traffic on the bridge, and forwarding on. The node's programs run in that
 * namespace; removing the namespace removes every rule they made in it. What a killed run left of
 * it is removed first.
 */
export async function createSisterNodeNetwork(): Promise<NodeNetwork> {
  needRoot();
  const n = SISTER_NODE_NETWORK;
  const inside = (command: string, args: readonly string[]) => sh(...inNodeNetwork(n.netns, command, args));
  const remove = async () => {
    await tryRun('ip', ['netns', 'del', n.netns]);
    await tryRun('ip', ['link', 'del', n.hostLink]);
  };
  await remove();
  await sh('ip', ['netns', 'add', n.netns]);
  try {
    await sh('ip', ['link', 'add', n.hostLink, 'type', 'veth', 'peer', 'name', n.nodeLink, 'netns', n.netns]);
    await sh('ip', ['addr', 'add', `${n.hostLinkAddress}/${n.linkPrefix}`, 'dev', n.hostLink]);
    await sh('ip', ['link', 'set', n.hostLink, 'up']);
    await inside('ip', ['link', 'set', 'lo', 'up']);
    await inside('ip', ['addr', 'add', `${n.nodeAddress}/${n.linkPrefix}`, 'dev', n.nodeLink]);
    await inside('ip', ['link', 'set', n.nodeLink, 'up']);
    await inside('ip', ['link', 'add', n.bridge, 'type', 'bridge']);
    await inside('ip', ['addr', 'add', `${n.gateway}/${n.podCidr.split('/')[1]}`, 'dev', n.bridge]);
    await inside('ip', ['link', 'set', n.bridge, 'up']);
    await inside('ip', ['route', 'add', SERVICE_CLUSTER_IP_RANGE, 'dev', n.bridge, 'src', n.gateway]);
    for (const rule of bridgeOnlyRules(n.bridge))
      await inside('iptables', ['-t', 'mangle', '-I', 'FORWARD', '1', ...rule]);
    await tryRun('modprobe', ['br_netfilter']);
    await inside('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    // Not every kernel keeps this setting per namespace.
    await tryRun(...inNodeNetwork(n.netns, 'sysctl', ['-q', '-w', 'net.bridge.bridge-nf-call-iptables=1']));
  } catch (err) {
    await remove();
    throw err;
  }
  return {
    bridge: n.bridge,
    hostAddress: n.gateway,
    podCidr: n.podCidr,
    nodeAddress: n.nodeAddress,
    apiserverAddress: n.hostLinkAddress,
    cniNetwork: n.cniNetwork,
    netns: n.netns,
    remove,
  };
}

export interface KubeNodeOptions {
  /** Folder for everything the node writes; created if missing. */
  readonly workDir: string;
  /** The cluster's admin kubeconfig (its server on the network's `apiserverAddress`). */
  readonly kubeconfigPath: string;
  /** The network made by {@link createNodeNetwork} (or {@link createSisterNodeNetwork}) before the cluster started. */
  readonly network: NodeNetwork;
  /** The Node's name. @default 'interop-node' */
  readonly name?: string;
  /** Docker or OCI archives to import before the node registers. @default [] */
  readonly images?: readonly string[];
  /** Time limit for the node to be Ready. @default 60000 */
  readonly startTimeoutMs?: number;
}

/** Where the node is and what it is made of; serialisable, for the tests. */
export interface KubeNodeInfo {
  readonly name: string;
  /** The pods' gateway: on the host's network, the address pods reach the host (and the master apiserver) at. */
  readonly hostAddress: string;
  /** The node's address, where its kubelet listens. */
  readonly nodeAddress: string;
  /** The network namespace the node runs in, when not the host's (`ip netns exec` reaches its Services). */
  readonly netns?: string;
  readonly podCidr: string;
  /** containerd's socket, for `ctr --address`. */
  readonly containerdAddress: string;
  readonly workDir: string;
  /** The pods' container logs (the kubelet's podLogsDir). */
  readonly podLogsDir: string;
  /** The kubelet's root folder (its `--root-dir`), which also tells its process apart. */
  readonly kubeletRoot: string;
  /** Seconds from the start of containerd to the Node's Ready condition. */
  readonly readySeconds: number;
}

export interface KubeNode {
  readonly info: KubeNodeInfo;
  /** Imports an image archive for the kubelet (pods use it with `imagePullPolicy: Never`). */
  importImage(archivePath: string): Promise<void>;
  /** Stops the node and removes what it made outside its folder (but not the bridge). */
  stop(): Promise<void>;
}

/** Imports a docker or OCI archive into the containerd at `address`, where the kubelet finds it. */
export async function importImageArchive(containerdAddress: string, archivePath: string): Promise<void> {
  await sh('ctr', ['--address', containerdAddress, '-n', CRI_NAMESPACE, 'images', 'import', archivePath]);
}

/** The file that names a node's work folder and network while it runs, for the sweep after a killed run. */
const markerFile = (name: string) => path.join(cacheDir(), 'node', `running-${name}.json`);

/** Where a node's processes, cgroups and pod networks are to be found, beside its work folder. */
export interface NodePlace {
  /** The network namespace it runs in; unset: the host's own. */
  readonly netns?: string;
  readonly cniNetwork: string;
}

/** The cgroup under which a node's kubelet puts its pods: the root for a node on the host's network. */
const cgroupRootOf = (place: NodePlace): string => (place.netns ? `/${place.netns}` : '');

/** Every mount point under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  const prefix = `${path.resolve(dir)}/`;
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => !!point && point.replace(/\\040/g, ' ').startsWith(prefix))
    .map((point) => point.replace(/\\040/g, ' '))
    .sort((a, b) => b.length - a.length);
}

/** The kubelet's pod cgroup folders in every controller's hierarchy, each after those below it. */
function podCgroups(cgroupRoot: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) if (entry.isDirectory()) walk(path.join(dir, entry.name));
    found.push(dir);
  };
  for (const hierarchy of cgroupHierarchies()) walk(path.join(hierarchy, cgroupRoot, 'kubepods'));
  return found;
}

/** The ids of processes in the kubelet's pod cgroups. */
function podProcesses(cgroupRoot: string): number[] {
  const pids = new Set<number>();
  for (const dir of podCgroups(cgroupRoot)) {
    let procs = '';
    try {
      procs = readFileSync(path.join(dir, 'cgroup.procs'), 'utf8');
    } catch {
      continue;
    }
    for (const pid of procs.split('\n').filter(Boolean)) pids.add(Number(pid));
  }
  return [...pids];
}

/** The ids of processes whose command line names `dir` (containerd's shims, by their socket). */
function processesNaming(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) found.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const killAll = (pids: readonly number[]) => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
};

/**
 * Removes what a node made outside its work folder once its programs have stopped: the pods'
 * processes and containerd's shims, the mounts under the folder (volumes, root filesystems,
 * network namespaces), kube-proxy's and the kubelet's iptables chains, the pod cgroups, the
 * kubelet's links in /var/log/containers, and the kernel settings the kubelet changed. Safe to run twice, or on a folder of a killed run.
 */
export async function sweepNode(workDir: string, place: NodePlace): Promise<void> {
  const paths = layout(workDir);
  const cgroupRoot = cgroupRootOf(place);
  killAll(podProcesses(cgroupRoot));
  killAll(processesNaming(paths.containerdAddress));
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (const point of mountsUnder(workDir)) await tryRun('umount', ['-l', point]);
  // A node in a namespace of its own made its rules there: they go with the namespace.
  if (!place.netns) {
    const proxy = binaryPaths().kubeProxy;
    if (existsSync(proxy)) await tryRun(proxy, ['--cleanup', '--v=0']);
    await removeKubeChains();
  }
  removePodCgroups(cgroupRoot);
  const links = '/var/log/containers';
  for (const link of existsSync(links) ? readdirSync(links) : []) {
    try {
      if (readlinkSync(path.join(links, link)).startsWith(paths.podLogsDir))
        unlinkSync(path.join(links, link));
    } catch {
      // not a link, or gone
    }
  }
  // The kubelet's device-plugin folder and socket are fixed; the folder goes when nothing else uses it.
  rmSync('/var/lib/kubelet/device-plugins/kubelet.sock', { force: true });
  for (const dir of ['/var/lib/kubelet/device-plugins', '/var/lib/kubelet']) {
    try {
      rmdirSync(dir);
    } catch {
      // absent, or not empty
    }
  }
  // containerd's record of each pod's network (in CNI's fixed cache folder), by the network's name.
  const cniResults = '/var/lib/cni/results';
  const results = existsSync(cniResults) ? readdirSync(cniResults) : [];
  const network = place.cniNetwork;
  const sandboxes = results
    .filter((file) => file.startsWith(`${network}-`))
    .map((file) => file.slice(network.length + 1).split('-')[0]);
  for (const file of results)
    if (
      sandboxes.some((id) => file.startsWith(`${network}-${id}-`) || file.startsWith(`cni-loopback-${id}-`))
    )
      rmSync(path.join(cniResults, file), { force: true });
  // containerd's images and snapshots, the bulk of the folder (an imported image is most of a GB);
  // the logs stay.
  for (const dir of [paths.containerdRoot, paths.containerdState])
    rmSync(dir, { recursive: true, force: true });
  if (existsSync(paths.kernelSettings)) {
    const saved = JSON.parse(readFileSync(paths.kernelSettings, 'utf8')) as Record<string, string>;
    for (const [name, value] of Object.entries(saved)) {
      try {
        writeSysctl(name, value);
      } catch {
        // a setting this kernel does not have
      }
    }
    rmSync(paths.kernelSettings);
  }
}

/**
 * Removes every `KUBE-*` chain and the rules that jump to them, in both address families: those
 * kube-proxy's own clean-up leaves (its canaries) and the kubelet's (KUBE-FIREWALL and others). No
 * other program on the machine makes such chains.
 */
async function removeKubeChains(): Promise<void> {
  for (const command of ['iptables', 'ip6tables'])
    for (const table of ['filter', 'nat', 'mangle']) {
      const rules = (await tryRunOutput(command, ['-t', table, '-S'])).split('\n');
      const chains = rules.filter((r) => r.startsWith('-N KUBE-')).map((r) => r.slice(3).trim());
      if (chains.length === 0) continue;
      for (const rule of rules.filter(
        (r) => r.startsWith('-A ') && / -j KUBE-\S+/.test(r) && !/^-A KUBE-/.test(r),
      ))
        await tryRun(command, [
          '-t',
          table,
          '-D',
          ...(rule.slice(3).match(/"[^"]*"|\S+/g) ?? []).map((w) => w.replace(/^"|"$/g, '')),
        ]);
      for (const chain of chains) await tryRun(command, ['-t', table, '-F', chain]);
      for (const chain of chains) await tryRun(command, ['-t', table, '-X', chain]);
    }
}

/** Removes the kubelet's emptied pod cgroups, deepest first, and the node's own cgroup root. */
function removePodCgroups(cgroupRoot: string): void {
  const roots = cgroupRoot ? cgroupHierarchies().map((h) => path.join(h, cgroupRoot)) : [];
  for (const dir of [...podCgroups(cgroupRoot), ...roots]) {
    try {
      rmdirSync(dir);
    } catch {
      // still in use, or not a cgroup
    }
  }
}

/** Every cgroup hierarchy mounted under /sys/fs/cgroup. */
const cgroupHierarchies = (): string[] =>
  existsSync('/sys/fs/cgroup')
    ? readdirSync('/sys/fs/cgroup').map((h) => path.join('/sys/fs/cgroup', h))
    : [];

/**
 * Makes the node's cgroup root in every hierarchy, which the kubelet wants to find made; a new
 * cpuset gets its parent's CPUs and memory nodes, without which nothing could join it.
 */
function makeCgroupRoot(cgroupRoot: string): void {
  for (const hierarchy of cgroupHierarchies()) {
    const dir = path.join(hierarchy, cgroupRoot);
    try {
      mkdirSync(dir, { recursive: true });
    } catch {
      continue; // not a cgroup hierarchy
    }
    for (const file of ['cpuset.cpus', 'cpuset.mems'])
      if (existsSync(path.join(hierarchy, file)) && readFileSync(path.join(dir, file), 'utf8').trim() === '')
        writeFileSync(path.join(dir, file), readFileSync(path.join(hierarchy, file), 'utf8'));
  }
}

/** Stops the node's containers through containerd, so that their shims end. */
async function removeContainers(containerdAddress: string, cgroupRoot: string): Promise<void> {
  const ctr = (...args: string[]) => ['--address', containerdAddress, '-n', CRI_NAMESPACE, ...args];
  killAll(podProcesses(cgroupRoot));
  const tasks = (await tryRunOutput('ctr', ctr('tasks', 'ls', '-q'))).split('\n').filter(Boolean);
  for (const id of tasks) await tryRun('ctr', ctr('tasks', 'delete', '--force', id));
  const containers = (await tryRunOutput('ctr', ctr('containers', 'ls', '-q'))).split('\n').filter(Boolean);
  for (const id of containers) await tryRun('ctr', ctr('containers', 'delete', id));
}

async function tryRunOutput(command: string, args: readonly string[]): Promise<string> {
  try {
    return (await exec(command, args)).stdout;
  } catch {
    return '';
  }
}

/** Resolves once the Node reports Ready, or throws naming the kubelet's log. */
async function nodeReady(kubeconfigPath: string, name: string, kubelet: ManagedProcess, timeoutMs: number) {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await waitUntilReady(
    kubelet,
    async () => {
      const node = await core.readNode({ name });
      return !!node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    },
    timeoutMs,
  );
}

/**
 * Starts the node against the master and resolves once its Node is Ready: containerd (with the
 * pause image), kube-proxy, the kubelet and kube-scheduler, each logging to a file in `workDir`.
 */
export async function startKubeNode(options: KubeNodeOptions): Promise<KubeNode> {
  const bins = ensureBinaries(['kube', 'node']);
  const name = options.name ?? 'interop-node';
  const workDir = path.resolve(options.workDir);
  const paths = layout(workDir);
  const { network } = options;
  const place: NodePlace = {
    cniNetwork: network.cniNetwork,
    ...(network.netns ? { netns: network.netns } : {}),
  };
  const cgroupRoot = cgroupRootOf(place);
  const inNetwork = (command: string, args: readonly string[]) => inNodeNetwork(network.netns, command, args);
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const pauseArchive = await makeBusyboxImage(
    { ref: PAUSE_IMAGE, applets: ['sleep'], entrypoint: ['/bin/sleep', 'infinity'] },
    path.join(cacheDir(), 'images'),
  );

  // A run that was killed left its containers, mounts and rules: sweep them first.
  const marker = markerFile(name);
  if (existsSync(marker)) {
    const previous = JSON.parse(readFileSync(marker, 'utf8')) as { workDir: string } & NodePlace;
    if (previous.workDir !== workDir) await sweepNode(previous.workDir, previous);
  }
  for (const dir of [
    paths.containerdRoot,
    paths.containerdState,
    paths.cniConfDir,
    paths.kubeletRoot,
    paths.podLogsDir,
  ])
    mkdirSync(dir, { recursive: true });
  mkdirSync(path.dirname(marker), { recursive: true });
  writeFileSync(marker, JSON.stringify({ workDir, ...place }));
  const proxyBinary = bins.kubeProxy;
  await tryRun(...inNetwork(proxyBinary, ['--cleanup', '--v=0']));
  if (cgroupRoot) makeCgroupRoot(cgroupRoot);
  writeFileSync(
    paths.kernelSettings,
    JSON.stringify(Object.fromEntries(KUBELET_SYSCTLS.map((s) => [s, readSysctl(s)]))),
  );

  const processes: ManagedProcess[] = [];
  const stopProcesses = async () => {
    for (const proc of [...processes].reverse()) await proc.stop();
    processes.length = 0;
  };
  const stop = async () => {
    // The kubelet first, so that it restarts nothing, then the containers, then containerd.
    const containerd = processes[0];
    const others = processes.splice(1);
    for (const proc of others.reverse()) await proc.stop();
    if (containerd && existsSync(paths.containerdAddress))
      await removeContainers(paths.containerdAddress, cgroupRoot);
    await stopProcesses();
    await sweepNode(workDir, place);
    if (existsSync(marker) && readFileSync(marker, 'utf8').includes(JSON.stringify(workDir))) rmSync(marker);
  };

  const started = Date.now();
  try {
    writeFileSync(paths.containerdConfig, containerdConfig(paths));
    writeFileSync(path.join(paths.cniConfDir, '10-interop-pods.conflist'), cniConflist(paths, network));
    const [containerdCommand, containerdArgs] = inNetwork('containerd', ['--config', paths.containerdConfig]);
    const containerd = startProcess({
      name: `containerd (${name})`,
      command: containerdCommand,
      args: containerdArgs,
      logFile: path.join(workDir, 'containerd.log'),
    });
    processes.push(containerd);
    await waitUntilReady(
      containerd,
      async () =>
        existsSync(paths.containerdAddress) &&
        tryRun('ctr', ['--address', paths.containerdAddress, 'version']),
      timeoutMs,
    );
    for (const archive of [pauseArchive, ...(options.images ?? [])])
      await importImageArchive(paths.containerdAddress, archive);

    const [kubeletPort, healthzPort, proxyHealthz, proxyMetrics, schedulerPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    writeFileSync(
      paths.kubeletConfig,
      kubeletConfig(paths, network, { kubelet: kubeletPort, healthz: healthzPort }, cgroupRoot || undefined),
    );
    const [proxyCommand, proxyArgs] = inNetwork(proxyBinary, [
      `--kubeconfig=${options.kubeconfigPath}`,
      `--hostname-override=${name}`,
      '--proxy-mode=iptables',
      `--cluster-cidr=${network.podCidr}`,
      `--bind-address=${network.nodeAddress}`,
      `--nodeport-addresses=${network.nodeAddress}/32`,
      '--iptables-localhost-nodeports=false',
      `--healthz-bind-address=127.0.0.1:${proxyHealthz}`,
      `--metrics-bind-address=127.0.0.1:${proxyMetrics}`,
      // Leave the machine's conntrack settings as they are.
      '--conntrack-max-per-core=0',
      '--conntrack-tcp-timeout-established=0',
      '--conntrack-tcp-timeout-close-wait=0',
      '--v=0',
    ]);
    processes.push(
      startProcess({
        name: `kube-proxy (${name})`,
        command: proxyCommand,
        args: proxyArgs,
        logFile: path.join(workDir, 'kube-proxy.log'),
      }),
    );
    const [kubeletCommand, kubeletArgs] = inNetwork(bins.kubelet, [
      `--config=${paths.kubeletConfig}`,
      `--kubeconfig=${options.kubeconfigPath}`,
      `--root-dir=${paths.kubeletRoot}`,
      `--cert-dir=${path.join(paths.kubeletRoot, 'pki')}`,
      `--hostname-override=${name}`,
      `--node-ip=${network.nodeAddress}`,
      '--v=0',
    ]);
    // Kept running as a node's service manager keeps it: a kubelet that exits is started again.
    const kubelet = keptRunning(() =>
      startProcess({
        name: `kubelet (${name})`,
        command: kubeletCommand,
        args: kubeletArgs,
        logFile: path.join(workDir, 'kubelet.log'),
      }),
    );
    processes.push(kubelet);
    processes.push(
      startProcess({
        name: `kube-scheduler (${name})`,
        command: bins.kubeScheduler,
        args: [
          `--kubeconfig=${options.kubeconfigPath}`,
          `--authentication-kubeconfig=${options.kubeconfigPath}`,
          `--authorization-kubeconfig=${options.kubeconfigPath}`,
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          `--secure-port=${schedulerPort}`,
          '--v=0',
        ],
        logFile: path.join(workDir, 'kube-scheduler.log'),
      }),
    );
    await nodeReady(options.kubeconfigPath, name, kubelet, timeoutMs);
  } catch (err) {
    const logs = ['containerd.log', 'kube-proxy.log', 'kube-scheduler.log']
      .map((file) => `--- ${file}:\n${tailOf(path.join(workDir, file), 8)}`)
      .join('\n');
    await stop();
    throw new KubeNodeError(`the node did not start: ${(err as Error).message}\n${logs}`);
  }

  return {
    info: {
      name,
      hostAddress: network.hostAddress,
      nodeAddress: network.nodeAddress,
      ...(network.netns ? { netns: network.netns } : {}),
      podCidr: network.podCidr,
      containerdAddress: paths.containerdAddress,
      workDir,
      podLogsDir: paths.podLogsDir,
      kubeletRoot: paths.kubeletRoot,
      readySeconds: Math.round((Date.now() - started) / 100) / 10,
    },
    importImage: (archivePath) => importImageArchive(paths.containerdAddress, archivePath),
    stop,
  };
}
