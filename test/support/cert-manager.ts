/**
 * cert-manager's control loops (tools/cert-manager, built by `tools/build-binaries.sh cert-manager`)
 * against clusters of the run: its CRDs (examples/certificates/crds) installed, then one process per
 * cluster with its kubeconfig, no leader election and no webhook, the Secrets it writes owned by their
 * Certificates (--enable-certificate-owner-ref), as the certificates example expects.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { binaryPaths } from '../../dev/local/binaries.js';
import { repoRoot } from '../../dev/local/paths.js';
import { startProcess, waitUntilReady, type ManagedProcess } from '../../dev/local/processes.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { clusterClientFromFile } from '../../src/kube/clients.js';
import type { Tool } from './tools.js';

/** The control loops the certificates example needs: Issuers, Certificates, and the self-signed and CA signers. */
export const CERT_MANAGER_CONTROLLERS = [
  'issuers',
  'certificates-*',
  'certificaterequests-approver',
  'certificaterequests-issuer-selfsigned',
  'certificaterequests-issuer-ca',
].join(',');

/** The binary, for describeWithTool: missing until `tools/build-binaries.sh cert-manager` has run. */
export function certManagerTool(): Tool {
  const file = binaryPaths().certManagerController;
  return {
    found: existsSync(file) ? file : undefined,
    name: 'cert-manager',
    install: '`tools/build-binaries.sh cert-manager` builds it (`make test` does)',
  };
}

export interface CertManager {
  stop(): Promise<void>;
}

/** Installs cert-manager's CRDs on each cluster and starts its control loops there; logs go to `workDir`. */
export async function startCertManager(
  clusters: readonly { readonly id: string; readonly kubeconfigPath: string }[],
  workDir: string,
): Promise<CertManager> {
  const dir = path.join(repoRoot(), 'examples', 'certificates', 'crds');
  const crds = readCrds(
    readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => path.join(dir, f)),
  );
  await Promise.all(clusters.map((c) => installCrds(clusterClientFromFile(c.id, c.kubeconfigPath), crds)));
  const started: ManagedProcess[] = [];
  const stop = async () => {
    await Promise.all(started.map((p) => p.stop()));
  };
  try {
    for (const c of clusters) {
      const proc = startProcess({
        name: `cert-manager (${c.id})`,
        command: binaryPaths().certManagerController,
        args: [
          `--kubeconfig=${c.kubeconfigPath}`,
          `--controllers=${CERT_MANAGER_CONTROLLERS}`,
          '--enable-certificate-owner-ref',
          '--v=2',
        ],
        logFile: path.join(workDir, `cert-manager-${c.id}-${Date.now()}.log`),
      });
      started.push(proc);
    }
    await Promise.all(
      started.map((proc) =>
        waitUntilReady(proc, async () => /cert-manager-controller: running/.test(proc.tail(400)), 30_000),
      ),
    );
    return { stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
