/**
 * The dev stack: the whole system on one machine. A local control plane (etcd, a master and two
 * sister kube-apiservers), the Temporal dev server with its Web UI and a SQLite file (so a restart
 * keeps history), our CRDs, the example catalog and the example operator, then the worker and the
 * broker. Ctrl-C stops everything.
 *
 * Settings (environment): INTEROP_DEV_DIR (state folder; default <cache>/dev-stack),
 * INTEROP_TEMPORAL_UI_PORT (8233), INTEROP_TEMPORAL_PORT (7233), INTEROP_PORT (8080),
 * INTEROP_BROKER_USERNAME / INTEROP_BROKER_PASSWORD (default `broker` and a password generated once
 * and kept in the state folder), and the variables of src/local/environment.ts that point at
 * existing servers instead.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startExampleOperator } from '../../examples/operator/operator.js';
import { startBroker } from '../roots/broker.js';
import { loadConfig } from '../config.js';
import { jsonLogger } from '../log.js';
import { generatePayloadKey } from '../temporal/codec.js';
import { startWorker } from '../roots/worker.js';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { applyObject } from '../kube/objects.js';
import type { ClusterClient } from '../kube/clients.js';
import type { KubeObject } from '../resources/types.js';
import { startLocalEnvironment } from '../local/environment.js';
import { cacheDir, repoRoot } from '../local/paths.js';

/** The example catalogs the dev stack installs into the broker's namespace. */
const EXAMPLE_CATALOGS = ['examples/postgresql', 'examples/mustache'];

/** A value kept in the state folder, made once. */
function kept(workDir: string, name: string, make: () => string): string {
  const file = path.join(workDir, name);
  if (!existsSync(file)) writeFileSync(file, make(), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

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
  // We stop the worker ourselves on SIGINT/SIGTERM, after the broker.
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const stops: (() => Promise<void>)[] = [() => env.stop()];
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.log('\nstopping ...');
    for (const s of stops.reverse()) await s().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());

  const catalog = await installCatalog(env.master, env.info.namespace);
  const operator = await startExampleOperator({ clusters: env.clusters });
  stops.push(() => operator.stop());

  const config = loadConfig('all', {
    ...process.env,
    INTEROP_TEMPORAL_ADDRESS: env.info.temporal.address,
    INTEROP_TEMPORAL_NAMESPACE: env.info.temporal.namespace,
    INTEROP_NAMESPACE: env.info.namespace,
    INTEROP_PAYLOAD_KEYS:
      process.env.INTEROP_PAYLOAD_KEYS ?? kept(workDir, 'payload-keys', () => generatePayloadKey()),
    INTEROP_BROKER_USERNAME: process.env.INTEROP_BROKER_USERNAME ?? 'broker',
    INTEROP_BROKER_PASSWORD:
      process.env.INTEROP_BROKER_PASSWORD ??
      kept(workDir, 'broker-password', () => randomBytes(12).toString('base64url')),
  });
  const log = jsonLogger('dev', 'warn');
  const worker = await startWorker(config, env.master, log);
  stops.push(() => worker.shutdown());
  const broker = await startBroker(config, env.master, log);
  stops.push(() => broker.stop());
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
      `  OSB broker        ${broker.url} (Basic auth ${config.broker.username} / ${config.broker.password})`,
      `  try               curl -u ${config.broker.username}:${config.broker.password} -H 'X-Broker-API-Version: 2.17' ${broker.url}/v2/catalog`,
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
