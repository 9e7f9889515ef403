/**
 * The dev stack: the whole system on one machine. A local control plane (etcd, a master and two
 * sister kube-apiservers), the Temporal dev server with its Web UI and a SQLite file (so a restart
 * keeps history), our CRDs, the example catalog. Ctrl-C stops everything.
 *
 * Settings (environment): INTEROP_DEV_DIR (state folder; default <cache>/dev-stack),
 * INTEROP_TEMPORAL_UI_PORT (8233), INTEROP_TEMPORAL_PORT (7233), and the variables of
 * src/local/environment.ts that point at existing servers instead.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { applyObject } from '../kube/objects.js';
import type { ClusterClient } from '../kube/clients.js';
import type { KubeObject } from '../resources/types.js';
import { startLocalEnvironment } from '../local/environment.js';
import { cacheDir, repoRoot } from '../local/paths.js';

/** The example catalogs the dev stack installs into the broker's namespace. */
const EXAMPLE_CATALOGS = ['examples/postgresql'];

async function installCatalog(master: ClusterClient, namespace: string): Promise<string[]> {
  const installed: string[] = [];
  for (const dir of EXAMPLE_CATALOGS.map((d) => path.join(repoRoot(), d)).filter((d) => existsSync(d))) {
    const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
    for (const file of files) {
      const docs = parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'));
      for (const doc of docs) {
        const obj = doc.toJS() as KubeObject | null;
        if (!obj?.kind) continue;
        await applyObject(master, { ...obj, metadata: { ...obj.metadata, namespace } });
        installed.push(`${obj.kind}/${obj.metadata.name}`);
      }
    }
  }
  return installed;
}

async function main(): Promise<void> {
  const workDir = process.env.INTEROP_DEV_DIR ?? path.join(cacheDir(), 'dev-stack');
  mkdirSync(workDir, { recursive: true });
  const env = await startLocalEnvironment({
    workDir,
    sisters: 2,
    temporalPort: Number(process.env.INTEROP_TEMPORAL_PORT ?? 7233),
    temporalUiPort: Number(process.env.INTEROP_TEMPORAL_UI_PORT ?? 8233),
    temporalDbFile: path.join(workDir, 'temporal.sqlite'),
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.log('\nstopping ...');
    await env.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());

  const catalog = await installCatalog(env.master, env.info.namespace);
  const [master, ...sisters] = env.info.clusters;
  console.log(
    [
      '',
      'inter-operator dev stack is up',
      `  Temporal          ${env.info.temporal.address} (namespace ${env.info.temporal.namespace})`,
      `  Temporal Web UI   ${env.info.temporal.uiUrl ?? '(external server)'}`,
      `  master cluster    kubectl --kubeconfig ${master?.kubeconfigPath} get sfplans -n ${env.info.namespace}`,
      ...sisters.map((s) => `  sister ${s.id.padEnd(10)} kubectl --kubeconfig ${s.kubeconfigPath} get ns`),
      `  catalog           ${catalog.join(', ')}`,
      `  state and logs    ${workDir}`,
      '',
      'Ctrl-C stops everything.',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  console.error(`dev stack failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
