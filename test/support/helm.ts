/**
 * The chart rendered by a real helm binary: INTEROP_HELM, or the newest one tools/build-binaries.sh
 * built into the cache (~/.cache/interoperator/bin/helm-<version>/helm).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Tool } from './tools.js';

export const CHART_DIR = path.join(process.cwd(), 'charts', 'interoperator');

/** A helm binary, or undefined when there is none. */
export function findHelm(): string | undefined {
  if (process.env.INTEROP_HELM) return process.env.INTEROP_HELM;
  const bin = path.join(
    process.env.INTEROP_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'interoperator'),
    'bin',
  );
  if (!existsSync(bin)) return undefined;
  return readdirSync(bin)
    .filter((d) => d.startsWith('helm-'))
    .sort()
    .reverse()
    .map((d) => path.join(bin, d, 'helm'))
    .find((f) => existsSync(f));
}

/** helm, for {@link describeWithTool}: a test that needs it fails under CI=true when it is missing. */
export const helmTool = (found = findHelm()): Tool => ({
  found,
  name: 'helm',
  install: '`tools/build-binaries.sh helm` builds it (or INTEROP_HELM names one)',
});

/** One object of the rendered chart. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  rules?: unknown[];
}

/**
 * `helm template <release> charts/interoperator --namespace <namespace> --set ...`, parsed. A
 * failing template (a `fail` in the chart) throws with helm's message.
 */
export function renderChart(
  helm: string,
  options: { release?: string; namespace: string; set?: readonly string[] },
): Manifest[] {
  const out = execFileSync(
    helm,
    [
      'template',
      options.release ?? 'r',
      CHART_DIR,
      '--namespace',
      options.namespace,
      ...(options.set ?? []).flatMap((s) => ['--set', s]),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

/** The test charts written here (test/fixtures/helm), each in its own folder. */
export const FIXTURE_CHARTS = path.join(process.cwd(), 'test', 'fixtures', 'helm');

/** A chart folder packed as `helm package` packs it: a gzipped tarball of the folder. */
export function packChart(dir: string): Buffer {
  return execFileSync('tar', ['-czf', '-', '-C', path.dirname(dir), path.basename(dir)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** What `helm template` is given besides the chart. */
export interface HelmTemplateOptions {
  readonly release: string;
  readonly namespace: string;
  /** A values file (`-f`). */
  readonly valuesFile?: string;
  readonly kubeVersion?: string;
  /** Added to Helm's default API versions (`--api-versions`). */
  readonly apiVersions?: readonly string[];
}

/**
 * `helm template` of a chart (folder or archive) with `--include-crds`, as text; a failing render
 * throws with helm's message.
 */
export function helmTemplate(helm: string, chart: string, options: HelmTemplateOptions): string {
  return execFileSync(
    helm,
    [
      'template',
      options.release,
      chart,
      '--namespace',
      options.namespace,
      '--include-crds',
      ...(options.valuesFile ? ['-f', options.valuesFile] : []),
      ...(options.kubeVersion ? ['--kube-version', options.kubeVersion] : []),
      ...(options.apiVersions ?? []).flatMap((v) => ['--api-versions', v]),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

/** The objects of multi-document YAML, sorted by apiVersion, kind and name (empty documents dropped). */
export function objectsIn(text: string): Manifest[] {
  const key = (m: Manifest) => `${m.apiVersion}/${m.kind}/${m.metadata.name}`;
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null)
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
