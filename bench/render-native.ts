/**
 * The reference renderer: the same Go code as the WebAssembly module (src/templates/gotemplate/go,
 * command cmd/render-native), built natively with the local Go toolchain into the cache directory.
 * The differential tests and the render benchmark compare our API against it.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../dev/local/paths.js';
import { cacheDir } from '../dev/settings.js';

const run = promisify(execFile);

/** One render for the native renderer: `data` is the template data as JSON text, as our API sends it. */
export interface NativeCase {
  readonly name: string;
  readonly template: string;
  readonly data: string;
  /** Most bytes of output; 0 for no limit. */
  readonly maxOutput: number;
}

/** What the native renderer answered: the output, or Go's error message. */
export type NativeResult = { readonly output: string } | { readonly error: string };

function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${process.env.PATH ?? ''}${path.delimiter}/usr/local/go/bin` };
}

let built: Promise<string> | undefined;

/**
 * Builds cmd/render-native with `go build` (Go's build cache makes it quick when nothing changed)
 * and returns the binary's path.
 */
export function buildNativeRenderer(): Promise<string> {
  built ??= (async () => {
    const out = path.join(cacheDir(), 'gotemplate');
    mkdirSync(out, { recursive: true });
    const binary = path.join(out, 'render-native');
    try {
      await run('go', ['build', '-trimpath', '-o', binary, './cmd/render-native'], {
        cwd: path.join(repoRoot(), 'src', 'templates', 'gotemplate', 'go'),
        env: goEnv(),
        timeout: 600_000,
      });
    } catch (err) {
      const e = err as Error & { stderr?: string };
      throw new Error(`building the native Go renderer failed (is Go installed?): ${e.stderr || e.message}`);
    }
    return binary;
  })();
  return built;
}

/** Runs the binary with `input` on its stdin; returns its stdout. */
function pipe(binary: string, args: readonly string[], input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`${binary} exited with ${code}: ${Buffer.concat(err).toString('utf8')}`));
    });
    child.stdin.end(input);
  });
}

/** Renders every case with native Go, in one process: gotemplates, or jsonnet programs. */
export async function renderNatively(
  cases: readonly NativeCase[],
  engine: 'gotemplate' | 'jsonnet' = 'gotemplate',
): Promise<NativeResult[]> {
  const binary = await buildNativeRenderer();
  const input = cases.map((c) => JSON.stringify(c)).join('\n');
  const results = (await pipe(binary, engine === 'jsonnet' ? ['-jsonnet'] : [], input))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as NativeResult);
  if (results.length !== cases.length) {
    throw new Error(`the native renderer answered ${results.length} of ${cases.length} cases`);
  }
  return results;
}

/** Renders one case `times` times in the native process; returns the milliseconds per render. */
export async function benchNatively(c: NativeCase, times: number): Promise<number> {
  const binary = await buildNativeRenderer();
  const stdout = await pipe(binary, ['-bench', String(times)], JSON.stringify(c));
  return Number(stdout.trim()) / 1e6;
}

/** What native Go says of a list of YAML documents (render.Documents): their values as JSON, or why not. */
export interface NativeDocuments {
  readonly json?: string;
  readonly error?: string;
  readonly index?: number;
}

/** Reads every list of YAML documents with native Go's render.Documents, in one process. */
export async function readDocumentsNatively(
  cases: readonly (readonly string[])[],
): Promise<NativeDocuments[]> {
  const binary = await buildNativeRenderer();
  const input = cases.map((docs) => JSON.stringify({ docs })).join('\n');
  const results = (await pipe(binary, ['-documents'], input))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as NativeDocuments);
  if (results.length !== cases.length) {
    throw new Error(`the native reader answered ${results.length} of ${cases.length} cases`);
  }
  return results;
}
