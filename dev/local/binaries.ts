/**
 * The server binaries of the local environment: the ones named by the environment when set
 * (dev/settings.ts), else from the cache, else built from the Go module proxy by
 * tools/build-binaries.sh (the first run only).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { binaryOverrides, cacheDir } from '../settings.js';
import { repoRoot } from './paths.js';

export interface ServerBinaries {
  readonly temporal: string;
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string;
  /** A node's kubelet, kube-proxy and kube-scheduler (dev/local/kube-node.ts). */
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly kubeScheduler: string;
  /** The production Temporal server (all services in one process). */
  readonly temporalServer: string;
  /** Its SQL schema tool. */
  readonly temporalSqlTool: string;
  /** cert-manager's control loops (tools/cert-manager), for the certificates example. */
  readonly certManagerController: string;
}

/** The binaries {@link ensureBinaries} builds, by their tools/build-binaries.sh target. */
export type BinaryTarget = 'temporal' | 'etcd' | 'kube' | 'node' | 'temporal-server' | 'cert-manager';

export const TEMPORAL_CLI_VERSION = '1.5.1';

function requiredVersion(modFile: string, pattern: RegExp): string {
  const text = readFileSync(path.join(repoRoot(), 'tools', modFile), 'utf8');
  const match = pattern.exec(text);
  if (!match?.[1]) throw new Error(`cannot read the version from tools/${modFile}`);
  return match[1];
}

/** The first 8 hex digits of the SHA-256 of a source file under tools/, as tools/build-binaries.sh keys a build of our own. */
function sourceDigest(file: string): string {
  return createHash('sha256')
    .update(readFileSync(path.join(repoRoot(), 'tools', file)))
    .digest('hex')
    .slice(0, 8);
}

/** Where each binary is expected, without building anything. */
export function binaryPaths(): ServerBinaries {
  const bin = path.join(cacheDir(), 'bin');
  const kube = requiredVersion('kube/go.mod', /^require k8s\.io\/kubernetes (\S+)/m);
  const etcd = requiredVersion('etcd/go.mod', /^require go\.etcd\.io\/etcd\/server\/v3 (\S+)/m);
  const given = binaryOverrides();
  const temporalServerDir =
    given.temporalServerDir ??
    path.join(
      bin,
      `temporal-server-${requiredVersion('temporal-server/go.mod', /^require go\.temporal\.io\/server (\S+)/m)}`,
    );
  const certManager = requiredVersion(
    'cert-manager/go.mod',
    /^\s*github\.com\/cert-manager\/cert-manager (\S+)/m,
  );
  const nodeDir = given.kubeNodeDir ?? path.join(bin, `kube-node-${kube}`);
  return {
    temporal: given.temporal ?? path.join(bin, `temporal-${TEMPORAL_CLI_VERSION}`, 'temporal'),
    etcd: given.etcd ?? path.join(bin, `etcd-${etcd}`, 'etcd'),
    kubeApiserver: given.kubeApiserver ?? path.join(bin, `kube-${kube}`, 'kube-apiserver'),
    kubeControllerManager:
      given.kubeControllerManager ?? path.join(bin, `kube-${kube}`, 'kube-controller-manager'),
    kubelet: path.join(nodeDir, 'kubelet'),
    kubeProxy: path.join(nodeDir, 'kube-proxy'),
    kubeScheduler: path.join(nodeDir, 'kube-scheduler'),
    temporalServer: path.join(temporalServerDir, 'temporal-server'),
    temporalSqlTool: path.join(temporalServerDir, 'temporal-sql-tool'),
    certManagerController:
      given.certManagerController ??
      path.join(
        bin,
        `cert-manager-${certManager}-${sourceDigest('cert-manager/main.go')}`,
        'cert-manager-controller',
      ),
  };
}

/** Returns the binaries, building the missing ones first (several minutes on a fresh machine). */
export function ensureBinaries(which: readonly BinaryTarget[]): ServerBinaries {
  const paths = binaryPaths();
  const missing = which.filter((name) => {
    if (name === 'temporal') return !existsSync(paths.temporal);
    if (name === 'etcd') return !existsSync(paths.etcd);
    if (name === 'temporal-server')
      return !existsSync(paths.temporalServer) || !existsSync(paths.temporalSqlTool);
    if (name === 'cert-manager') return !existsSync(paths.certManagerController);
    if (name === 'node')
      return [paths.kubelet, paths.kubeProxy, paths.kubeScheduler].some((file) => !existsSync(file));
    return !existsSync(paths.kubeApiserver) || !existsSync(paths.kubeControllerManager);
  });
  if (missing.length > 0) {
    execFileSync('bash', [path.join(repoRoot(), 'tools', 'build-binaries.sh'), ...missing], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  }
  return paths;
}
