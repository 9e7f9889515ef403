#!/usr/bin/env node
/**
 * `npm test`: every test, in stages run one after another, each starting the servers it needs once.
 *
 *   checks        lint beside the typecheck and then the build (the code, the renderers, the
 *                 workflow bundles)
 *   unit          the unit and built projects on two jest workers; no servers
 *   integration   one landscape (Temporal dev server, a master and two sister apiservers) for the
 *                 whole stage, started while the unit stage runs (when both run): the integration
 *                 files two at a time, then the few that must run apart (jest.config.js says which
 *                 and why), two at a time among themselves
 *   temporal-server  the production Temporal server on PostgreSQL beside the integration stage's
 *                 clusters, its files two at a time
 *   faults        the fault-injection files and the landscape soak, each with servers of its own
 *                 that it kills, two at a time
 *   deploy        the integration environment with a real node on the master (pods run): the
 *                 deploy files one at a time (among them docker-compose.yml run on a Docker engine
 *                 of its own); the node needs root, and under CI=true a node that cannot start
 *                 fails the stage
 *
 * Every stage runs even when an earlier one failed (but nothing runs without a build), and the
 * last line sums them up: `tests: N passed, N failed, N skipped`. Exits non-zero when anything
 * failed. `node tools/test-stages.mjs integration faults` runs only the stages named (after the
 * checks' build).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const results = mkdtempSync(path.join(os.tmpdir(), 'interop-test-results-'));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const jestBin = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');

/** Runs a command in the repository, its output on ours; resolves with its exit code. */
function run(command, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** Runs jest over `projects` with `workers` workers, its results kept under `name`. */
function jest(name, projects, workers, extra = [], env = {}) {
  return run(
    process.execPath,
    [
      '--experimental-vm-modules',
      jestBin,
      '--no-watchman',
      '--ci',
      `--maxWorkers=${workers}`,
      '--json',
      `--outputFile=${path.join(results, `${name}.json`)}`,
      '--selectProjects',
      ...projects,
      ...extra,
    ],
    env,
  );
}

/** The integration stage's servers, stopped after the production Temporal's stage. */
let landscape;

/**
 * Starts the integration stage's landscape; resolves with its description file, for
 * INTEROP_TEST_ENV. Started beside the unit stage, it is up when the integration stage begins, and
 * the clusters' garbage collectors, which look for new resource kinds every 30 s, know our CRDs by
 * then: owner references to our resources are collected, and foreground deletions finish, at once.
 */
async function startLandscape() {
  // global-setup.mjs finds INTEROP_TEST_ENV set in the stage's jest runs and starts nothing.
  const { startEnvironment } = await import('../test/integration/global-setup.mjs');
  await startEnvironment({
    temporalKind: 'dev',
    key: '__interopEnvironment',
    envVar: 'INTEROP_STAGE_LANDSCAPE',
  });
  landscape = globalThis.__interopEnvironment;
  // Only the integration stages' jest runs get it, not the unit run beside.
  const file = process.env.INTEROP_STAGE_LANDSCAPE;
  delete process.env.INTEROP_STAGE_LANDSCAPE;
  return file;
}

/** The landscape on its way up, once started: see {@link startLandscape}. */
let landscapeStarting;

const counts = { passed: 0, failed: 0, skipped: 0 };
const failedStages = [];

/** Adds what jest recorded under `name` to the counts. */
function count(name) {
  const file = path.join(results, `${name}.json`);
  if (!existsSync(file)) return false;
  const report = JSON.parse(readFileSync(file, 'utf8'));
  counts.passed += report.numPassedTests;
  counts.failed += report.numFailedTests;
  counts.skipped += report.numPendingTests + report.numTodoTests;
  // A file that failed to run (its setup threw) counts no test of its own.
  counts.failed += report.testResults.filter(
    (r) => r.status === 'failed' && r.assertionResults.length === 0,
  ).length;
  return true;
}

async function stage(name, body) {
  const started = Date.now();
  console.log(`\n===== stage ${name} =====`);
  let ok;
  try {
    ok = await body();
  } catch (err) {
    console.error(`stage ${name}:`, err);
    ok = false;
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  console.log(`===== stage ${name}: ${ok ? 'passed' : 'FAILED'} in ${seconds} s =====`);
  if (!ok) failedStages.push(name);
  return ok;
}

const STAGES = {
  async unit() {
    const code = await jest('unit', ['unit', 'built'], 2);
    count('unit');
    return code === 0;
  },
  async integration() {
    // One landscape for the stage's two jest runs. Its clusters stay up for the production
    // Temporal's stage.
    const env = { INTEROP_TEST_ENV: await (landscapeStarting ?? startLandscape()) };
    const together = await jest('integration', ['integration'], 2, [], env);
    const apart = await jest('integration-apart', ['integration-apart'], 2, [], env);
    count('integration');
    count('integration-apart');
    return together === 0 && apart === 0;
  },
  async 'temporal-server'() {
    // On the integration stage's clusters when it ran: only PostgreSQL and the Temporal server start.
    const [master, ...sisters] = landscape?.info.clusters ?? [];
    const env = master
      ? {
          INTEROP_MASTER_KUBECONFIG: master.kubeconfigPath,
          INTEROP_SISTER_KUBECONFIGS: sisters.map((c) => c.kubeconfigPath).join(','),
        }
      : {};
    const code = await jest('temporal-server', ['integration-temporal-server'], 2, [], env);
    await landscape?.stop();
    landscape = undefined;
    count('temporal-server');
    return code === 0;
  },
  async faults() {
    const code = await jest('faults', ['faults', 'soak'], 2);
    count('faults');
    return code === 0;
  },
  async deploy() {
    const code = await jest('deploy', ['deploy'], 1, ['--testSequencer', './test/deploy/sequencer.mjs']);
    count('deploy');
    return code === 0;
  },
};

const asked = process.argv.slice(2);
for (const name of asked)
  if (!(name in STAGES)) throw new Error(`no stage ${name}: ${Object.keys(STAGES).join(', ')}`);
const started = Date.now();

/**
 * The servers' folders of earlier runs (logs, data), which each run leaves for reading: those of
 * runs more than half a day old go now, so repeated runs do not fill the temporary folder.
 */
function removeOldRunFolders() {
  const tmp = os.tmpdir();
  const before = Date.now() - 12 * 3600_000;
  for (const name of readdirSync(tmp)) {
    if (!/^interop-(test|fault|test-results|postgresql)-/.test(name)) continue;
    const folder = path.join(tmp, name);
    try {
      if (statSync(folder).mtimeMs < before) rmSync(folder, { recursive: true, force: true });
    } catch {
      // Gone meanwhile, or not ours to remove: left as it is.
    }
  }
}
removeOldRunFolders();

let build = 1;
await stage('checks', async () => {
  const [lint, typecheck] = await Promise.all([
    run(npm, ['run', 'lint']),
    run(npm, ['run', 'typecheck']).then(async (code) => {
      build = await run(npm, ['run', 'build']);
      return code;
    }),
  ]);
  return lint === 0 && typecheck === 0 && build === 0;
});
if (build !== 0) {
  console.log('\nThe build failed: no test can run.');
  process.exit(1);
}
const runs = (name) => asked.length === 0 || asked.includes(name);
for (const [name, body] of Object.entries(STAGES)) {
  if (!runs(name)) continue;
  if (name === 'unit' && runs('integration')) {
    landscapeStarting = startLandscape();
    // Its failure is the integration stage's, when that stage awaits it.
    landscapeStarting.catch(() => {});
  }
  await stage(name, body);
}

await landscape?.stop();
const minutes = ((Date.now() - started) / 60000).toFixed(1);
console.log(
  `\nAll stages in ${minutes} min${failedStages.length ? `; failed: ${failedStages.join(', ')}` : ''}.`,
);
console.log(`tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
process.exit(failedStages.length > 0 ? 1 : 0);
