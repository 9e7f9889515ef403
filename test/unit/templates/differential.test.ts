/**
 * Differential test: every case of the corpus rendered through our API (the data as JSON text into
 * Go compiled to WebAssembly, in a worker thread) and by the same Go code built natively
 * (bench/render-native.ts, fed the same JSON text), which must agree byte for byte, errors
 * included. So the test proves the WebAssembly bridge and the JavaScript plumbing, not Go.
 */
import { existsSync } from 'node:fs';
import { renderNatively } from '../../../bench/render-native.js';
import { closeRenderer, DEFAULT_LIMITS, renderTemplate } from '../../../src/templates/index.js';
import { wasmFile } from '../../../src/templates/gotemplate/pool.js';
import { CORPUS } from './corpus.js';

const NAME = 'status';

afterAll(() => closeRenderer());

test('the WebAssembly renderer is built (npm run build)', () => {
  expect({ wasm: wasmFile(), built: existsSync(wasmFile()) }).toEqual({ wasm: wasmFile(), built: true });
});

test('the corpus is large enough to mean something', () => {
  expect(CORPUS.length).toBeGreaterThanOrEqual(250);
  expect(new Set(CORPUS.map((c) => c.name)).size).toBe(CORPUS.length);
});

test('our API renders every case exactly as native Go does', async () => {
  // GIVEN the corpus, rendered natively from the same JSON text our API sends
  const native = await renderNatively(
    CORPUS.map((c) => ({
      name: NAME,
      template: c.template,
      data: JSON.stringify(c.data),
      maxOutput: DEFAULT_LIMITS.maxOutputBytes,
    })),
  );
  // WHEN our API renders every case, all at once through the pool
  const ours = await Promise.all(
    CORPUS.map((c) =>
      renderTemplate({ action: NAME, type: 'gotemplate', content: c.template }, NAME, c.data).then(
        (output) => ({ output }),
        (err: Error) => ({ error: err.message }),
      ),
    ),
  );
  // THEN both agree on every case, errors included
  const differences = CORPUS.flatMap((c, i) =>
    JSON.stringify(ours[i]) === JSON.stringify(native[i])
      ? []
      : [`${c.name}:\n  ours:   ${JSON.stringify(ours[i])}\n  native: ${JSON.stringify(native[i])}`],
  );
  expect(differences).toEqual([]);
  // and the corpus exercises failures as well as output
  const errors = ours.filter((r) => 'error' in r).length;
  expect(errors).toBeGreaterThan(30);
  expect(CORPUS.length - errors).toBeGreaterThan(200);
});
