/**
 * The chart rendered by a real helm binary: INTEROP_HELM, or the newest one tools/build-binaries.sh
 * built into the cache (~/.cache/interoperator/bin/helm-<version>/helm).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

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

/** One object of the rendered chart. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
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
