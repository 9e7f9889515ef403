/**
 * Differential test: every case of the corpus rendered through our API (Go compiled to
 * WebAssembly, in a worker thread, data passed from JavaScript) and by the same Go code built
 * natively (dist/wasm/render-native, built by `npm run build`), which must agree byte for byte,
 * errors included.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import readline from 'node:readline';
import { closeRenderer, renderTemplate } from '../../../src/templates/index.js';
import { CORPUS, type Case } from './corpus.js';

const NATIVE = 'dist/wasm/render-native';

/** Renders every case with native Go, in one process: one JSON line in, one out. */
async function renderNatively(cases: readonly Case[]): Promise<{ output?: string; error?: string }[]> {
  if (!existsSync(NATIVE)) throw new Error(`${NATIVE} is missing: run \`npm run build\``);
  const child = spawn(NATIVE, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout });
  const results: { output?: string; error?: string }[] = [];
  const done = new Promise<void>((resolve) => lines.on('close', resolve));
  lines.on('line', (line) => results.push(JSON.parse(line) as { output?: string; error?: string }));
  for (const c of cases) {
    child.stdin.write(
      `${JSON.stringify({ name: 'status', template: c.template, data: JSON.stringify(c.data), maxOutput: 4 << 20 })}\n`,
    );
  }
  child.stdin.end();
  await done;
  return results;
}

afterAll(() => closeRenderer());

test('the corpus is large enough to mean something', () => {
  expect(CORPUS.length).toBeGreaterThanOrEqual(150);
  expect(new Set(CORPUS.map((c) => c.name)).size).toBe(CORPUS.length);
});

test('our API renders every case exactly as native Go does', async () => {
  const native = await renderNatively(CORPUS);
  expect(native).toHaveLength(CORPUS.length);
  const differences: string[] = [];
  let errors = 0;
  for (const [i, c] of CORPUS.entries()) {
    const ours = await renderTemplate(
      { action: 'status', type: 'gotemplate', content: c.template },
      'status',
      c.data,
    ).then(
      (output) => ({ output }),
      (err: Error) => ({ error: err.message }),
    );
    if ('error' in ours) errors += 1;
    if (JSON.stringify(ours) !== JSON.stringify(native[i])) {
      differences.push(
        `${c.name}:\n  ours:   ${JSON.stringify(ours)}\n  native: ${JSON.stringify(native[i])}`,
      );
    }
  }
  expect(differences).toEqual([]);
  // The corpus exercises failures too, not only happy paths.
  expect(errors).toBeGreaterThan(8);
});
