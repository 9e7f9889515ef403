/**
 * The layering has one source, the rule `npm run lint` checks (.dependency-cruiser.cjs). Every folder
 * and file of src/ is in a layer; the README and docs/architecture.md list the same layers in the
 * same order, and the docs' table says of each what the rule lets it import.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = process.cwd();

interface Rule {
  readonly name: string;
  readonly from: { readonly path: string };
  readonly to: { readonly pathNot?: readonly string[] };
}

const { forbidden } = createRequire(path.join(root, 'package.json'))('./.dependency-cruiser.cjs') as {
  forbidden: readonly Rule[];
};

/** A layer's name from the pattern of its home: `^src/kube/` is `kube`, `^src/config\.ts$` is `config.ts`. */
const layerOf = (pattern: string): string =>
  pattern
    .replace(/^\^src\//, '')
    .replace(/(\/|\$)$/, '')
    .replace(/\\\./g, '.');

/** The layers, bottom up as the rule lists them, each with the layers it may import. */
const layers = forbidden
  .filter((rule) => rule.name.startsWith('layer-'))
  .map((rule) => {
    const name = layerOf(rule.from.path);
    const may = (rule.to.pathNot ?? []).map(layerOf).filter((other) => other !== name);
    return { name, may };
  });
const names = layers.map((layer) => layer.name);

const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const quoted = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The README's list: the quoted names after "The layers of `src/`, bottom up:", up to the sentence's end. */
function readmeLayers(): string[] {
  const list = /The layers of `src\/`, bottom up:([\s\S]*?)\.\s/.exec(read('README.md'));
  if (!list) throw new Error('README.md has no sentence "The layers of `src/`, bottom up: …."');
  return quoted(list[1]!);
}

/** The rows of the table in docs/architecture.md's section "The layers": each layer and what it may import. */
function documentedLayers(): { name: string; may: string[] }[] {
  const text = read('docs/architecture.md');
  const start = text.indexOf('## The layers');
  if (start < 0) throw new Error('docs/architecture.md has no section "The layers"');
  const end = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  return section
    .split('\n')
    .filter((line) => /^\| `src\//.test(line))
    .map((line) => {
      const cells = line.split(/(?<!\\)\|/).map((cell) => cell.trim());
      const name = /^`src\/([^`]+)`$/.exec(cells[1]!)?.[1] ?? cells[1]!;
      return { name, may: quoted(cells[3] ?? '').filter((word) => names.includes(word)) };
    });
}

describe('the layers', () => {
  test('GIVEN src/ WHEN its folders and files are listed THEN each is a layer of the rule, and each layer is there', () => {
    const entries = readdirSync(path.join(root, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || entry.name.endsWith('.ts'))
      .map((entry) => entry.name);
    expect([...entries].sort()).toEqual([...names].sort());
  });

  test('GIVEN the README WHEN its layers are read THEN they are the rule’s, in its order', () => {
    expect(readmeLayers()).toEqual(names);
  });

  test('GIVEN docs/architecture.md WHEN its table of layers is read THEN it has the rule’s layers, in its order', () => {
    expect(documentedLayers().map((row) => row.name)).toEqual(names);
  });

  test.each(layers)(
    'GIVEN the layer $name WHEN the docs say what it may import THEN they say what the rule allows',
    ({ name, may }) => {
      const row = documentedLayers().find((documented) => documented.name === name);
      expect([...new Set(row?.may)].sort()).toEqual([...may].sort());
    },
  );
});
