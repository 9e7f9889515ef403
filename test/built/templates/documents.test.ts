/**
 * What rendered templates describe: YAML documents read by Go's yaml.v2 in the render threads as
 * the original read them, and checked to be Kubernetes objects. Exact values; differential.test.ts
 * compares the reading with native Go, and test/unit/templates/documents.test.ts the splitting.
 */
import {
  closeRenderer,
  parseObjects,
  parseValues,
  renderObjects,
  renderValues,
  TemplateError,
} from '../../../src/templates/index.js';

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
const obj = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });

afterAll(() => closeRenderer());

describe('parseObjects', () => {
  test.each([
    ['one object', cm('a'), [obj('a')]],
    ['several objects, in order', `${cm('a')}---\n${cm('b')}---\n${cm('c')}`, [obj('a'), obj('b'), obj('c')]],
    ['null documents dropped', `---\n~\n---\n${cm('a')}---\nnull\n`, [obj('a')]],
    ['no objects', '---\n# nothing to apply\n', []],
    ['duplicate keys: the last wins, as in the original', `${cm('a')}metadata:\n  name: b\n`, [obj('b')]],
    [
      'merge keys, as in the original',
      'base: &b {apiVersion: v1, kind: ConfigMap}\n---\n<<: {apiVersion: v1, kind: ConfigMap}\nmetadata: {name: m}\n',
      null,
    ],
  ])('%s', async (_, text, objects) => {
    if (objects === null) {
      await expect(parseObjects(text, 'provision')).rejects.toThrow(/document 1 is not a Kubernetes object/);
      expect(await parseObjects(text.split('---\n')[1]!, 'provision')).toEqual([obj('m')]);
    } else {
      expect(await parseObjects(text, 'provision')).toEqual(objects);
    }
  });

  test.each([
    ['a list', '- 1\n- 2\n', "the provision template's document 1 is a list, not a Kubernetes object"],
    [
      'a string',
      `${cm('a')}---\njust text\n`,
      "the provision template's document 2 is a string of 9 characters, not a Kubernetes object",
    ],
    ['a number', '42\n', "the provision template's document 1 is a number, not a Kubernetes object"],
    [
      'an object without a name',
      'apiVersion: v1\nkind: ConfigMap\n',
      "the provision template's document 1 is not a Kubernetes object: it needs apiVersion, kind and metadata.name",
    ],
  ])('%s is refused with a clear error', async (_, text, message) => {
    let err: unknown;
    try {
      await parseObjects(text, 'provision');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TemplateError);
    expect([(err as TemplateError).reason, (err as TemplateError).message]).toEqual(['template', message]);
  });

  test('invalid YAML says which template and which document wrote it', async () => {
    await expect(parseObjects(`${cm('a')}---\na: [1\n`, 'bind')).rejects.toThrow(
      /^the bind template rendered invalid YAML: document 2: yaml: /,
    );
  });

  test('an alias bomb is refused', async () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...'bcdefghij'
        .split('')
        .map((k, i) => `${k}: &${k} [${Array(10).fill(`*${'abcdefghij'[i]}`).join(', ')}]`),
    ].join('\n');
    await expect(parseValues(bomb, 'status')).rejects.toThrow(/invalid YAML: .*alias/i);
  });

  test('renderObjects renders and splits: a gotemplate with a range of objects', async () => {
    const template = {
      action: 'provision' as const,
      type: 'gotemplate' as const,
      content:
        '{{ range .names }}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ . }}\n{{ end }}',
    };
    expect(await renderObjects(template, 'provision', { names: ['db-a', 'db-b'] } as never)).toEqual([
      obj('db-a'),
      obj('db-b'),
    ]);
    // As in the original, an unquoted `y` is yaml.v2's boolean true: not a name.
    await expect(renderObjects(template, 'provision', { names: ['x', 'y'] } as never)).rejects.toThrow(
      "the provision template's document 2 is not a Kubernetes object",
    );
    expect(await renderObjects({ ...template, content: '---' }, 'bind', {})).toEqual([]);
  });
});

describe('parseValues', () => {
  test.each([
    ['a status', 'provision:\n  state: succeeded\n', { provision: { state: 'succeeded' } }],
    ['nothing', '\n# no status yet\n', {}],
    ['a label selector (clusterSelector)', 'plan=abc,tier in (a, b)', 'plan=abc,tier in (a, b)'],
    [
      'scalars as yaml.v2 reads them: yes, on and y are booleans, 0777 octal, a date stays a string',
      'a: yes\nb: on\nc: n\nd: 0777\ne: 0o17\nf: 1_000\ng: 1e3\nh: 2001-12-14\ni: "yes"\nj: 1:20\n',
      { a: true, b: true, c: false, d: 511, e: 15, f: 1000, g: 1000, h: '2001-12-14', i: 'yes', j: '1:20' },
    ],
    ['keys that read as booleans are printed as Go prints them', 'y: 1\nno: 2\n', { true: 1, false: 2 }],
  ])('%s', async (_, text, value) => {
    expect(await parseValues(text, 'status')).toEqual(value);
  });

  test('a value JSON cannot carry is refused', async () => {
    await expect(parseValues('a: .inf\n', 'status')).rejects.toThrow(
      /^the status template rendered invalid YAML: .*unsupported value: \+Inf/,
    );
  });

  test('__proto__ keys stay own data and pollute nothing', async () => {
    const value = (await parseValues(
      '__proto__:\n  polluted: true\nconstructor:\n  prototype:\n    polluted: true\n',
      'status',
    )) as object;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'constructor']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('several documents are an error', async () => {
    await expect(parseValues('a: 1\n---\nb: 2\n', 'status')).rejects.toThrow(
      /^the status template rendered invalid YAML: expected one document, found 2$/,
    );
  });
});

describe('rendering and reading in one trip to the render thread', () => {
  // The thread splits and reads what it rendered itself; it must give exactly what reading the
  // rendered text gives (its copy of the splitting rule included), values and errors alike.
  const outcome = (p: Promise<unknown>) =>
    p.then(
      (value) => ({ value }),
      (err: Error) => ({ error: err.message }),
    );
  const texts = [
    'a: 1\n',
    '---\na: 1\n',
    'a: 1\n---  \nb: 2\n--- # next\nc: 3\n',
    'a: 1\n---\n\n---\n# only a comment\n---\nb: 2\n',
    '\n---\n---\n',
    'a: 1\r\n---\r\nb: 2\r\n',
    'a: "x --- y"\nb: ---\n',
    'a: |\n  ---\n  text\n',
    `${cm('a')}---\n${cm('b')}`,
    `---\n~\n---\n${cm('a')}---\nnull\n`,
    `${cm('a')}---\na: [1\n`,
    'a: yes\nb: 0777\nh: 2001-12-14\n',
    'a: .inf\n',
    '- 1\n- 2\n',
    '',
  ];
  test.each(texts.map((text) => [JSON.stringify(text), text]))('%s', async (_, text) => {
    for (const type of ['gotemplate', 'mustache'] as const) {
      const template = { action: 'provision' as const, type, content: text };
      expect(await outcome(renderValues(template, 'status', {}))).toEqual(
        await outcome(parseValues(text, 'status')),
      );
      expect(await outcome(renderObjects(template, 'provision', {}))).toEqual(
        await outcome(parseObjects(text, 'provision')),
      );
    }
  });
});
