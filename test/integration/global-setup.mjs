/**
 * Starts the real servers once for the integration run: a Temporal dev server (with its Web UI) and a master plus two
 * sister kube-apiservers on one etcd, with our CRDs installed. Tests read where they are from the
 * file named by INTEROP_TEST_ENV (see test/support/env.ts).
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

export default async function globalSetup() {
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: run \`npm run build\` first`);
  const { startLocalEnvironment } = await import(compiled);
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-test-'));
  const started = Date.now();
  const { freePort } = await import(processes);
  // The Temporal Web UI, pointed at a codec endpoint that the browser test's broker serves: its
  // port and token are fixed now, before the Temporal server starts.
  const env = await startLocalEnvironment({
    workDir,
    sisters: 2,
    temporalUiPort: await freePort(),
    temporalUiCodec: { port: await freePort(), token: randomBytes(24).toString('base64url') },
  });
  globalThis.__interopEnvironment = env;
  const file = path.join(workDir, 'environment.json');
  writeFileSync(file, JSON.stringify(env.info, null, 2));
  process.env.INTEROP_TEST_ENV = file;
  console.log(
    `\n[integration] real servers up in ${((Date.now() - started) / 1000).toFixed(1)} s; logs and kubeconfigs in ${workDir}`,
  );
}
