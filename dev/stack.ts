/**
 * The dev stack: the whole system on one machine. A local control plane (etcd, a master and two
 * sister kube-apiservers), the Temporal dev server with its Web UI and a SQLite file (so a restart
 * keeps history), our CRDs, the example catalog and the example operator, then the worker and the
 * broker, in this process, as src/main.ts runs them; the UI decodes payloads with the broker's
 * codec endpoint. The broker serves the OSB API and the admin API, each with credentials made once;
 * what it prints (dev/summary.ts) has both, and the command line with the admin ones. Ctrl-C stops
 * everything.
 *
 * Settings: the dev stack's own and the existing servers to use (dev/settings.ts), and the
 * broker's and the worker's (src/config.ts).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startExampleOperator } from '../examples/operator/operator.js';
import { loadConfig } from '../src/config.js';
import { jsonLogger } from '../src/log.js';
import { startTracing } from '../src/tracing.js';
import { startBroker } from '../src/roots/broker.js';
import { startWorker } from '../src/roots/worker.js';
import { configureRenderer } from '../src/templates/index.js';
import { generatePayloadKey } from '../src/temporal/codec.js';
import { installCatalog } from './catalog.js';
import { devStackSummary } from './summary.js';
import { startLocalEnvironment } from './local/environment.js';
import { devStackSettings } from './settings.js';

/** The example catalogs the dev stack installs into the broker's namespace. */
const EXAMPLE_CATALOGS = [
  'examples/postgresql',
  'examples/mustache',
  'examples/jsonnet',
  'examples/generated-secrets',
];

/** A value kept in the state folder, made once. */
function kept(workDir: string, name: string, make: () => string): string {
  const file = path.join(workDir, name);
  if (!existsSync(file)) writeFileSync(file, make(), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

async function main(): Promise<void> {
  const settings = devStackSettings();
  const { workDir } = settings;
  mkdirSync(workDir, { recursive: true });
  const codec = {
    port: settings.codecPort,
    token: settings.codecToken ?? kept(workDir, 'codec-token', () => randomBytes(24).toString('base64url')),
  };
  const env = await startLocalEnvironment({
    workDir,
    sisters: 2,
    temporalPort: settings.temporalPort,
    temporalUiPort: settings.temporalUiPort,
    temporalUiCodec: codec,
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

  const catalog = (await installCatalog(env.master, env.info.namespace, EXAMPLE_CATALOGS)).map(
    (obj) => `${obj.kind}/${obj.metadata.name}`,
  );
  const operator = await startExampleOperator({
    clusters: env.clusters,
    backupStore: { cluster: env.master, namespace: 'example-operator-backups' },
  });
  stops.push(() => operator.stop());

  const brokerPassword =
    settings.brokerPassword ?? kept(workDir, 'broker-password', () => randomBytes(12).toString('base64url'));
  const adminPassword =
    settings.adminPassword ?? kept(workDir, 'admin-password', () => randomBytes(12).toString('base64url'));
  const config = loadConfig('all', {
    ...process.env,
    INTEROP_TEMPORAL_ADDRESS: env.info.temporal.address,
    INTEROP_TEMPORAL_NAMESPACE: env.info.temporal.namespace,
    INTEROP_NAMESPACE: env.info.namespace,
    INTEROP_CODEC_PORT: String(codec.port),
    INTEROP_CODEC_TOKEN: codec.token,
    // The UI as the dev server serves it, and as a browser may name it.
    INTEROP_CODEC_ORIGINS: `http://127.0.0.1:${settings.temporalUiPort},http://localhost:${settings.temporalUiPort}`,
    INTEROP_PAYLOAD_KEYS: settings.payloadKeys ?? kept(workDir, 'payload-keys', () => generatePayloadKey()),
    INTEROP_BROKER_USERNAME: settings.brokerUsername,
    INTEROP_BROKER_PASSWORD: brokerPassword,
    INTEROP_ADMIN_USERNAME: settings.adminUsername,
    INTEROP_ADMIN_PASSWORD: adminPassword,
  });
  if (config.renderer.wasmFile) await configureRenderer({ wasmFile: config.renderer.wasmFile });
  const log = jsonLogger('dev', 'warn');
  // With OTEL_EXPORTER_OTLP_ENDPOINT set, the stack's requests are traced to that collector.
  const tracing = config.tracing ? startTracing(config.tracing) : undefined;
  if (tracing) stops.push(() => tracing.shutdown());
  const worker = await startWorker(config, env.master, log, undefined, tracing);
  stops.push(() => worker.shutdown());
  const broker = await startBroker(config, env.master, log, undefined, tracing);
  stops.push(() => broker.stop());
  console.log(
    devStackSummary({
      temporal: env.info.temporal,
      codec,
      namespace: env.info.namespace,
      clusters: env.info.clusters,
      catalog,
      brokerUrl: broker.url,
      osb: { username: settings.brokerUsername, password: brokerPassword },
      admin: { username: settings.adminUsername, password: adminPassword },
      workDir,
    }),
  );
}

main().catch((err: unknown) => {
  console.error(`dev stack failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
