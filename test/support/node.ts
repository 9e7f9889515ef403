/**
 * The deploy suite's nodes (started by test/deploy/global-setup.mjs on the master of the run's
 * environment and on its first sister), and the images its tests make for it.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { EnvironmentInfo } from '../../dev/local/environment.js';
import type { KubeNodeInfo } from '../../dev/local/kube-node.js';
import { makeBusyboxImage, type BusyboxImageSpec } from '../../dev/local/oci-images.js';
import { cacheDir } from '../../dev/settings.js';
import { environment } from './env.js';
import type { Tool } from './tools.js';

/** The environment's description with the node, or why there is none. */
export interface DeployEnvironmentInfo extends EnvironmentInfo {
  readonly node?: KubeNodeInfo;
  /** The node of a sister cluster (`clusterId`), in a network namespace of its own. */
  readonly sisterNode?: KubeNodeInfo & { readonly clusterId: string };
  readonly nodeUnavailable?: string;
}

export const deployEnvironment = (): DeployEnvironmentInfo => environment() as DeployEnvironmentInfo;

/** The node as a tool the suite's tests need (test/support/tools.ts): skipped without it, failed under CI. */
export function nodeTool(): Tool {
  const env = deployEnvironment();
  return {
    found: env.node ? env.node.name : undefined,
    name: 'Kubernetes node',
    install: `${env.nodeUnavailable ?? 'it did not start'} (it needs root and tools/ensure-node-packages.sh)`,
  };
}

/** Makes a busybox image for the node's pods (cached with the binaries) and returns its archive. */
export const busyboxImage = (spec: BusyboxImageSpec): Promise<string> =>
  makeBusyboxImage(spec, path.join(cacheDir(), 'images'));

/**
 * The resident memory of a running container's first process (the kubelet's `containerID` without
 * its `containerd://`), from containerd's task list and /proc: the host sees the pods' processes.
 */
export function containerRssBytes(containerdAddress: string, containerId: string): number {
  const tasks = execFileSync('ctr', ['--address', containerdAddress, '-n', 'k8s.io', 'tasks', 'ls'], {
    encoding: 'utf8',
  });
  const pid = tasks
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find(([id]) => id === containerId)?.[1];
  if (!pid) throw new Error(`no running task ${containerId} in containerd`);
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kb) throw new Error(`no VmRSS for process ${pid} of container ${containerId}`);
  return Number(kb) * 1024;
}

/** The process id of the node's kubelet (the `kubelet` whose `--root-dir` is the node's), if one runs. */
export function kubeletPid(node: KubeNodeInfo): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    if (path.basename(args[0] ?? '') === 'kubelet' && args.includes(`--root-dir=${node.kubeletRoot}`))
      return Number(entry);
  }
  return undefined;
}
