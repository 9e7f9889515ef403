/**
 * The deploy suite's node (started by test/deploy/global-setup.mjs on the master of the run's
 * environment), and the images its tests make for it.
 */
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
