/**
 * Helm render benchmark: the test chart test/fixtures/helm/webapp (10 templates, a subchart, a CRD)
 * rendered many times through our API (Helm's engine compiled to WebAssembly, in worker threads,
 * the chart already fetched) and by the `helm template` binary (a process per render, as a service
 * owner runs it), in one run, with the same values, release and namespace. The first render through
 * our API (the helm module compiled and its thread started) is timed apart.
 *
 *   npm run build && node dist/bench/helm-render.js [renders]
 *
 * The helm binary: INTEROP_HELM, else the one tools/build-binaries.sh built into the cache.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { repoRoot } from '../dev/local/paths.js';
import type { PlanTemplate } from '../src/resources/types.js';
import { closeRenderer, releaseName, renderTemplate } from '../src/templates/index.js';

const renders = Number(process.argv[2] ?? 200);

function findHelm(): string {
  if (process.env.INTEROP_HELM) return process.env.INTEROP_HELM;
  const bin = path.join(
    process.env.INTEROP_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'interoperator'),
    'bin',
  );
  const found = existsSync(bin)
    ? readdirSync(bin)
        .filter((d) => d.startsWith('helm-'))
        .sort()
        .reverse()
        .map((d) => path.join(bin, d, 'helm'))
        .find((f) => existsSync(f))
    : undefined;
  if (!found) throw new Error('no helm binary: run `npm run build:binaries helm` or set INTEROP_HELM');
  return found;
}

const VALUES = 'database:\n  host: db.example.com\ningress:\n  enabled: true\n';
const CAPABILITIES = {
  kubeVersion: 'v1.31.2',
  apiVersions: ['v1', 'apps/v1', 'networking.k8s.io/v1', 'example.com/v1', 'example.com/v1/Widget'],
};

const ms = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `mean ${(values.reduce((a, b) => a + b, 0) / values.length).toFixed(2)} ms, p50 ${at(0.5).toFixed(2)} ms, p99 ${at(0.99).toFixed(2)} ms`;
};

async function main(): Promise<void> {
  const helm = findHelm();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'helm-bench-'));
  const chartFile = path.join(tmp, 'webapp.tgz');
  const valuesFile = path.join(tmp, 'values.yaml');
  const fixtures = path.join(repoRoot(), 'test', 'fixtures', 'helm');
  const chart = execFileSync('tar', ['-czf', '-', '-C', fixtures, 'webapp']);
  writeFileSync(chartFile, chart);
  writeFileSync(valuesFile, VALUES);
  const template: PlanTemplate = {
    action: 'provision',
    type: 'helm',
    url: 'http://unused.invalid/c.tgz',
    content: VALUES,
  };
  const data = { instance: { metadata: { name: 'abc', namespace: 'sf-abc' } } };
  const release = releaseName('abc');
  const ours = () => renderTemplate(template, 'provision', data, { chart, capabilities: CAPABILITIES });
  const theirs = () =>
    execFileSync(
      helm,
      [
        'template',
        release,
        chartFile,
        '--namespace',
        'sf-abc',
        '--include-crds',
        '-f',
        valuesFile,
        '--kube-version',
        CAPABILITIES.kubeVersion,
        '--api-versions',
        'example.com/v1/Widget',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );

  try {
    const first = performance.now();
    await ours();
    console.log(
      `our API, first render (module compiled, thread started): ${(performance.now() - first).toFixed(0)} ms`,
    );
    for (let i = 0; i < 20; i += 1) await ours();
    theirs();

    // Alternating rounds, so both see the same machine.
    const oursMs: number[] = [];
    const theirsMs: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      for (let i = 0; i < renders / 2; i += 1) {
        const started = performance.now();
        await ours();
        oursMs.push(performance.now() - started);
      }
      for (let i = 0; i < Math.max(1, renders / 20); i += 1) {
        const started = performance.now();
        theirs();
        theirsMs.push(performance.now() - started);
      }
    }
    console.log(`our API (one at a time, warm), ${oursMs.length} renders: ${ms(oursMs)}`);
    console.log(`helm template (a process each), ${theirsMs.length} renders: ${ms(theirsMs)}`);
  } finally {
    await closeRenderer();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
