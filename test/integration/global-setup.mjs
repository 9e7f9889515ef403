/**
 * Starts the real servers once for the integration run: a Temporal dev server (with its Web UI) and a master plus two
 * sister kube-apiservers on one etcd, with our CRDs installed. Tests read where they are from the
 * file named by INTEROP_TEST_ENV (see test/support/env.ts). With INTEROP_TEMPORAL=server, the
 * production Temporal server on PostgreSQL stands for the dev server (dev/local/environment.ts).
 *
 * Plain ESM over the compiled code (dist/), because jest loads global setup outside its module
 * transform; `npm test` builds before it runs jest.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const compiled = fileURLToPath(new URL('../../dist/dev/local/environment.js', import.meta.url));
const processes = fileURLToPath(new URL('../../dist/dev/local/processes.js', import.meta.url));

/**
 * Starts one environment with the given Temporal ('dev', 'server', or undefined for the one
 * INTEROP_TEMPORAL names), keeps it in globalThis[key] for the teardown, and names its description
 * file in process.env[envVar]. With `nodeAddress`, the master is made ready for a node there, and
 * with `sisterNodeAddresses` the sisters it names (test/deploy/global-setup.mjs).
 */
export async function startEnvironment({
  temporalKind,
  key,
  envVar,
  nodeAddress,
  sisterNodeAddresses,
  chartCrdsOnMaster,
}) {
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: run \`npm run build\` first`);
  const { startLocalEnvironment } = await import(compiled);
  const workDir = mkdtempSync(
    path.join(os.tmpdir(), `interop-test-${temporalKind ? `${temporalKind}-` : ''}`),
  );
  const started = Date.now();
  const { freePort } = await import(processes);
  // The dev server's Web UI, pointed at a codec endpoint that the browser test's broker serves: its
  // port and token are fixed now, before the Temporal server starts. The production server has none.
  const env = await startLocalEnvironment({
    workDir,
    sisters: 2,
    temporalKind,
    temporalUiPort: await freePort(),
    temporalUiCodec: { port: await freePort(), token: randomBytes(24).toString('base64url') },
    ...(nodeAddress ? { nodeAddress } : {}),
    ...(sisterNodeAddresses ? { sisterNodeAddresses } : {}),
    ...(chartCrdsOnMaster === false ? { chartCrdsOnMaster } : {}),
  });
  globalThis[key] = env;
  const file = path.join(workDir, 'environment.json');
  writeFileSync(file, JSON.stringify(env.info, null, 2));
  process.env[envVar] = file;
  console.log(
    `\n[integration] real servers (Temporal: ${env.info.temporal.kind ?? 'existing'}) up in ${((Date.now() - started) / 1000).toFixed(1)} s; logs and kubeconfigs in ${workDir}`,
  );
}

export default async function globalSetup() {
  // Started already by the stage runner (tools/test-stages.mjs), for more than one jest run.
  if (process.env.INTEROP_TEST_ENV && existsSync(process.env.INTEROP_TEST_ENV)) return;
  await startEnvironment({
    temporalKind: undefined,
    key: '__interopEnvironment',
    envVar: 'INTEROP_TEST_ENV',
  });
}
