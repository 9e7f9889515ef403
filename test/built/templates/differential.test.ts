/**
 * Differential test: every case of the corpus rendered through our API (the data as JSON text into
 * Go compiled to WebAssembly, in a worker thread) and by the same Go code built natively
 * (bench/render-native.ts, fed the same JSON text), which must agree byte for byte, errors
 * included. So the test proves the WebAssembly bridge and the JavaScript plumbing, not Go.
 */
import { existsSync } from 'node:fs';
import { readDocumentsNatively, renderNatively } from '../../../bench/render-native.js';
import {
  closeRenderer,
  DEFAULT_LIMITS,
  parseValues,
  renderTemplate,
  splitDocuments,
} from '../../../src/templates/index.js';
import { builtWasmFile } from '../../../src/templates/gotemplate/pool.js';
import { CORPUS } from './corpus.js';

const NAME = 'status';

afterAll(() => closeRenderer());

test('the WebAssembly renderer is built (npm run build)', () => {
  const wasm = builtWasmFile();
  expect({ wasm, built: existsSync(wasm) }).toEqual({ wasm, built: true });
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

/** YAML corners where YAML 1.1 (yaml.v2, the original's reader), YAML 1.2 and JavaScript differ. */
const YAML_CORNERS = [
  'a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\n',
  'a: 0777\nb: 0o17\nc: 0x1F\nd: 0b101\ne: 1_000\nf: -0\ng: +12\n',
  'a: 1e3\nb: .5\nc: 1.0\nd: 1e+06\ne: 9007199254740993\nf: -.inf\n',
  'a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\nc: 1:20\nd: ~\ne: null\nf: Null\n',
  'y: 1\nn: 2\non: 3\n1: 4\n1.5: 5\n~: 6\n',
  'a: &x {b: 1}\nc: *x\nd:\n  <<: *x\n  e: 2\n',
  'a: 1\na: 2\n',
  "a: 'it''s'\nb: \"\\u00e9\\t\"\nc: |\n  line\n  two\nd: >\n  folded\n  text\n",
  'plan=abc,tier in (a, b)',
  '- 1\n- [2, 3]\n- {a: b}\n',
  'a: [1\n',
  'a: b: c\n',
  '{a: 1, b: [x, y], c: {d: e}}',
  '__proto__: {polluted: true}\nconstructor: {prototype: {polluted: true}}\n',
  '? [a, b]\n: c\n',
  'a: !!str 123\nb: !!int "7"\nc: !!float 1\n',
  '"a": "<b>&</b>"\n',
];

test('our API reads rendered YAML exactly as native Go (yaml.v2, as the original) does', async () => {
  // GIVEN the corners, and every single-document output of the corpus as native Go rendered it
  const rendered = await renderNatively(
    CORPUS.map((c) => ({
      name: NAME,
      template: c.template,
      data: JSON.stringify(c.data),
      maxOutput: DEFAULT_LIMITS.maxOutputBytes,
    })),
  );
  const texts = [
    ...YAML_CORNERS,
    ...rendered.flatMap((r) => ('output' in r && splitDocuments(r.output).length <= 1 ? [r.output] : [])),
  ];
  const native = await readDocumentsNatively(texts.map((text) => splitDocuments(text)));
  // WHEN our API reads each as a status template's output
  const ours = await Promise.all(
    texts.map((text) =>
      parseValues(text, NAME).then(
        (value) => ({ value: JSON.stringify(value) }),
        (err: Error) => ({ error: err.message }),
      ),
    ),
  );
  // THEN both agree on every value and every error
  const differences = texts.flatMap((text, i) => {
    const n = native[i]!;
    const expected =
      n.error !== undefined
        ? {
            error: `the ${NAME} template rendered invalid YAML: ${n.index !== undefined ? `document ${n.index + 1}: ` : ''}${n.error}`,
          }
        : { value: JSON.stringify((JSON.parse(n.json!) as unknown[])[0] ?? {}) };
    return JSON.stringify(ours[i]) === JSON.stringify(expected)
      ? []
      : [
          `${JSON.stringify(text)}:\n  ours:   ${JSON.stringify(ours[i])}\n  native: ${JSON.stringify(expected)}`,
        ];
  });
  expect(differences).toEqual([]);
  expect(texts.length).toBeGreaterThan(200);
  // and the reading is yaml.v2's: YAML 1.1 booleans and octals
  expect(await parseValues(YAML_CORNERS[0]!, NAME)).toEqual({
    a: true,
    b: false,
    c: true,
    d: false,
    e: true,
    f: false,
  });
});
