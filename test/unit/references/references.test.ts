/** References to other objects in rendered objects: finding, paths, transformers, substitution. Pure. */
import {
  describeReference,
  findReferences,
  parseFieldPath,
  parseReference,
  redact,
  resolveValue,
  secretTexts,
  substitute,
  transform,
  transformerNamed,
  valueAt,
  type ReferenceFailureKind,
} from '../../../src/references/index.js';

/** The error `run` throws: its name, kind (for a ReferenceFailure) and message. */
function failureOf(run: () => unknown): { name: string; kind?: ReferenceFailureKind; message: string } {
  try {
    run();
  } catch (err) {
    const e = err as Error & { kind?: ReferenceFailureKind };
    return { name: e.name, ...(e.kind ? { kind: e.kind } : {}), message: e.message };
  }
  throw new Error('expected a failure');
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'db', labels: { 'app.kubernetes.io/name': 'postgres' } },
  spec: {
    ports: [
      { name: 'metrics', port: 9187 },
      { name: 'http', port: 8080 },
    ],
  },
  status: { endpoints: [{ host: 'db.example', port: 5432 }] },
  data: { password: b64('s3cret!'), count: '42', list: 'a, b,c', json: '{"a":[1,2]}' },
};

describe('field paths', () => {
  test.each([
    ['.data.password', b64('s3cret!')],
    ['{.data.password}', b64('s3cret!')],
    ['{ .data.count }', '42'],
    ['$.data.count', '42'],
    ['{.status.endpoints[0].host}', 'db.example'],
    ['.status.endpoints[-1].port', 5432],
    [".metadata.labels['app.kubernetes.io/name']", 'postgres'],
    ['.metadata.labels["app.kubernetes.io/name"]', 'postgres'],
    ['{.spec.ports[?(@.name=="http")].port}', 8080],
    ["{.spec.ports[?(@.name == 'metrics')].port}", 9187],
    ['{.spec.ports[?(@.port==8080)].name}', 'http'],
    ['{.spec.ports[?(@.name!="metrics")].port}', 8080],
    ['.spec.ports', service.spec.ports],
    ['.status', service.status],
    ["['spec']['ports'][1]['port']", 8080],
  ])('GIVEN %s THEN the value is found', (path, expected) => {
    expect(valueAt(service, parseFieldPath(path))).toEqual(expected);
  });

  test.each([
    ['.data.missing', 'no field .data.missing'],
    ['.status.endpoints[3].host', 'no element .status.endpoints[3]'],
    ['.status.endpoints[0].ip', 'no field .status.endpoints[0].ip'],
    ['.data.password.inner', 'no field .data.password.inner'],
    ['.data[0]', 'no element .data[0]'],
    ['{.spec.ports[?(@.name=="grpc")].port}', 'no element matches .spec.ports[?(@.name=="grpc")]'],
    [".metadata.labels['app']", 'no field .metadata.labels.app'],
  ])('GIVEN %s WHEN nothing is there THEN FieldNotFound says how far it got', (path, detail) => {
    const failure = failureOf(() => valueAt(service, parseFieldPath(path)));
    expect(failure).toEqual({
      name: 'ReferenceFailure',
      kind: 'FieldNotFound',
      message: `field not found: ${detail}`,
    });
  });

  test.each([
    ['data.password', /starts with a dot/],
    ['', /starts with a dot/],
    ['{.data.password', /not closed/],
    ['.data..password', /recursive descent/],
    ['..password', /recursive descent/],
    ['.data.*', /wildcard/],
    ['.items[*].name', /wildcard/],
    ['.items[0:2]', /slice/],
    ['.items[0,1]', /union/],
    [".labels['a','b']", /union/],
    ['.items[x]', /neither an index nor a quoted key/],
    ['.items[0', /not closed/],
    [".labels['a", /quote is not closed/],
    ['{range .items[*]}{.name}{end}', /range template/],
    ['.spec.ports[?(@.port>1)].name', /other than == and !=/],
    ['.spec.ports[?(@.name==http)].port', /quoted string, a number/],
    ['.spec.ports[?(@.name=="http"].port', /ends with \)\]/],
    ['.spec.ports[?(@)].port', /compares a field/],
    ['.data.pass word', /unexpected/],
    ['.data.key}}', /unexpected/],
    ['.', /field name is missing/],
  ])('GIVEN the path %j THEN it is ill-formed, saying why', (path, why) => {
    const failure = failureOf(() => parseFieldPath(path));
    expect(failure.name).toBe('IllFormedReference');
    expect(failure.message).toMatch(why);
  });
});

describe('format transformers', () => {
  test.each<[string[], unknown, unknown]>([
    [[], { a: 1 }, { a: 1 }],
    [['ToString'], 42, '42'],
    [['ToString'], true, 'true'],
    [['ToString'], 'x', 'x'],
    [['ToString'], { a: 1 }, '{"a":1}'],
    [['StringToInt'], '42', 42],
    [['StringToInt'], ' -7 ', -7],
    [['StringToFloat'], '2.5', 2.5],
    [['StringToFloat'], '1e3', 1000],
    [['StringToBool'], 'TRUE', true],
    [['StringToBool'], 'false', false],
    [['Base64ToString'], b64('héllo wörld'), 'héllo wörld'],
    [['Base64ToString'], 'aGk', 'hi'],
    [['StringToBase64'], 'hi', 'aGk='],
    [['ArrayToCSString'], ['a', 1, true], 'a,1,true'],
    [['CSStringToArray'], 'a, b,c', ['a', 'b', 'c']],
    [['CSStringToArray'], '  ', []],
    [['JsonToObject'], '{"a":[1,2]}', { a: [1, 2] }],
    [['ObjectToJson'], { a: [1, 2] }, '{"a":[1,2]}'],
    [['Base64ToString', 'StringToInt'], b64('8080'), 8080],
    [['base64ToString', 'stringToInt'], b64('8080'), 8080],
    [['BASE64TOSTRING', 'JsonToObject'], b64('[1]'), [1]],
    [['ToString', 'StringToBase64', 'Base64ToString'], 5, '5'],
  ])('GIVEN %j over %j THEN %j', (names, value, expected) => {
    expect(transform(value, names.map(transformerNamed))).toEqual(expected);
  });

  test.each<[string, unknown, ReferenceFailureKind, RegExp]>([
    ['StringToInt', 'abc', 'ValueNotTransformable', /not an integer/],
    ['StringToInt', '1.5', 'ValueNotTransformable', /not an integer/],
    ['StringToInt', '99999999999999999999', 'ValueNotTransformable', /too large/],
    ['StringToInt', 42, 'WrongValueType', /takes a string, not a number/],
    ['StringToFloat', 'x1', 'ValueNotTransformable', /not a number/],
    ['StringToFloat', '', 'ValueNotTransformable', /not a number/],
    ['StringToFloat', ['1'], 'WrongValueType', /not an array/],
    ['StringToBool', 'yes', 'ValueNotTransformable', /neither true nor false/],
    ['StringToBool', null, 'WrongValueType', /not null/],
    ['Base64ToString', 'not base64!', 'ValueNotTransformable', /not base64/],
    ['Base64ToString', b64('\u0000') === 'AA==' ? '/w==' : '/w==', 'ValueNotTransformable', /not UTF-8/],
    ['Base64ToString', { a: 1 }, 'WrongValueType', /not an object/],
    ['StringToBase64', 7, 'WrongValueType', /not a number/],
    ['ArrayToCSString', 'a,b', 'WrongValueType', /takes an array, not a string/],
    ['CSStringToArray', ['a'], 'WrongValueType', /not an array/],
    ['JsonToObject', '{nope', 'ValueNotTransformable', /not JSON/],
    ['JsonToObject', { a: 1 }, 'WrongValueType', /not an object/],
  ])('GIVEN %s over %j THEN %s', (name, value, kind, why) => {
    const failure = failureOf(() => transform(value, [transformerNamed(name)]));
    expect(failure.kind).toBe(kind);
    expect(failure.message).toMatch(why);
  });

  test('GIVEN a failing transformer THEN the message never shows the value', () => {
    const failure = failureOf(() => transform('hunter2-not-a-number', [transformerNamed('StringToInt')]));
    expect(failure.message).not.toContain('hunter2');
  });

  test.each([['Base64Decode'], ['to-string'], [''], [3]])(
    'GIVEN the transformer %j THEN it is ill-formed',
    (name) => {
      const failure = failureOf(() => transformerNamed(name));
      expect(failure.name).toBe('IllFormedReference');
      expect(failure.message).toMatch(/is not a transformer; known: ToString, StringToInt/);
    },
  );

  test('GIVEN a pipeline THEN every value on the way is seen', () => {
    const seen: unknown[] = [];
    transform(b64('42'), ['Base64ToString', 'StringToInt'].map(transformerNamed), (v) => seen.push(v));
    expect(seen).toEqual([b64('42'), '42', 42]);
  });
});

describe('parsing a reference', () => {
  test.each<[string, unknown, object]>([
    [
      'a Secret by name, apiVersion defaulted',
      { kind: 'Secret', name: 'db', path: '.data.password' },
      { kind: 'Secret', apiVersion: 'v1', name: 'db', path: '.data.password', transformers: [] },
    ],
    [
      'labels as a map, a namespace, transformers',
      {
        kind: 'Postgresql',
        apiVersion: 'acid.zalan.do/v1',
        labels: { app: 'db', tier: 1 },
        namespace: 'shared',
        path: '{.status.host}',
        'format-transformers': ['ToString'],
      },
      {
        kind: 'Postgresql',
        apiVersion: 'acid.zalan.do/v1',
        labels: { app: 'db', tier: '1' },
        namespace: 'shared',
        transformers: ['ToString'],
      },
    ],
    [
      "labels as the SDK's key=value list",
      { kind: 'ConfigMap', labels: ['app.kubernetes.io/name=db', 'x=y'], path: '.data.a' },
      { labels: { 'app.kubernetes.io/name': 'db', x: 'y' } },
    ],
  ])('GIVEN %s THEN it is read', (_, body, expected) => {
    expect(parseReference(body)).toMatchObject(expected);
  });

  test.each<[string, unknown, RegExp]>([
    ['not a map', 'Secret/db', /is a map/],
    ['a list', [{ kind: 'Secret' }], /is a map/],
    ['no kind', { name: 'db', path: '.a' }, /needs a kind/],
    ['an empty kind', { kind: ' ', name: 'db', path: '.a' }, /needs a kind/],
    [
      'a custom kind without apiVersion',
      { kind: 'Postgresql', name: 'db', path: '.a' },
      /needs an apiVersion/,
    ],
    [
      'an apiVersion not a string',
      { kind: 'Secret', apiVersion: 1, name: 'db', path: '.a' },
      /apiVersion .* not a string/,
    ],
    ['neither name nor labels', { kind: 'Secret', path: '.a' }, /either a name or labels$/],
    ['both name and labels', { kind: 'Secret', name: 'a', labels: { a: 'b' }, path: '.a' }, /not both/],
    ['a name not a string', { kind: 'Secret', name: 5, path: '.a' }, /name .* not a string/],
    [
      'a namespace not a string',
      { kind: 'Secret', name: 'a', namespace: {}, path: '.a' },
      /namespace .* not a string/,
    ],
    ['no path', { kind: 'Secret', name: 'a' }, /needs a path/],
    ['a path not a string', { kind: 'Secret', name: 'a', path: ['.a'] }, /needs a path/],
    [
      'an unknown field (a typo)',
      { kind: 'Secret', name: 'a', path: '.a', formatTransformers: [] },
      /no field "formatTransformers"/,
    ],
    [
      'a defaultValue (not supported)',
      { kind: 'Secret', name: 'a', path: '.a', defaultValue: 'x' },
      /no field "defaultValue"/,
    ],
    [
      'transformers not a list',
      { kind: 'Secret', name: 'a', path: '.a', 'format-transformers': 'ToString' },
      /list of transformer names/,
    ],
    [
      'an unknown transformer',
      { kind: 'Secret', name: 'a', path: '.a', 'format-transformers': ['Decode'] },
      /"Decode" is not a transformer/,
    ],
    ['empty labels', { kind: 'Secret', labels: {}, path: '.a' }, /selects nothing/],
    ['labels not key=value', { kind: 'Secret', labels: ['app'], path: '.a' }, /not key=value/],
    ['labels of the wrong shape', { kind: 'Secret', labels: 'app=db', path: '.a' }, /map of label to value/],
    ['a label value not a string', { kind: 'Secret', labels: { a: { b: 1 } }, path: '.a' }, /not a string/],
    [
      'a label key that is not one',
      { kind: 'Secret', labels: { 'a b': 'c' }, path: '.a' },
      /not a label key/,
    ],
    [
      'a label value that is not one',
      { kind: 'Secret', labels: { a: 'b c' }, path: '.a' },
      /not a label value/,
    ],
    ['an unsupported path', { kind: 'Secret', name: 'a', path: '.items[*].x' }, /wildcard/],
  ])('GIVEN %s THEN it is ill-formed, saying why', (_, body, why) => {
    const failure = failureOf(() => parseReference(body));
    expect(failure.name).toBe('IllFormedReference');
    expect(failure.message).toMatch(why);
  });

  test.each([
    [{ kind: 'Secret', name: 'db', path: '.data.p' }, 'Secret db, path .data.p'],
    [
      { kind: 'ConfigMap', name: 'c', namespace: 'shared', path: '{.data.a}' },
      'ConfigMap c in shared, path {.data.a}',
    ],
    [
      { kind: 'Service', labels: { app: 'db', tier: 'x' }, path: '.spec' },
      'Service with labels app=db,tier=x, path .spec',
    ],
  ])('GIVEN %j THEN messages name it %s', (body, text) => {
    expect(describeReference(parseReference(body))).toBe(text);
  });
});

const ref = (body: Record<string, unknown>) => ({ getValueFrom: body });

describe('finding and substituting references', () => {
  const rendered = {
    apiVersion: 'acid.zalan.do/v1',
    kind: 'Postgresql',
    metadata: { name: 'pg', labels: { tier: ref({ kind: 'ConfigMap', name: 'cfg', path: '.data.tier' }) } },
    spec: {
      port: ref({
        kind: 'ConfigMap',
        name: 'cfg',
        path: '.data.port',
        'format-transformers': ['StringToInt'],
      }),
      users: [{ name: 'admin', password: ref({ kind: 'Secret', name: 'db', path: '.data.password' }) }],
      nested: [[ref({ kind: 'Service', name: 'db', path: '.spec.clusterIP' })]],
      plain: { getValueFromX: 1, value: null },
    },
  };

  test('GIVEN references at any depth THEN each is found with where it stands, in document order', () => {
    const found = findReferences(rendered);
    expect(found.map((f) => [f.at, f.reference.kind, f.reference.path])).toEqual([
      [['metadata', 'labels', 'tier'], 'ConfigMap', '.data.tier'],
      [['spec', 'port'], 'ConfigMap', '.data.port'],
      [['spec', 'users', 0, 'password'], 'Secret', '.data.password'],
      [['spec', 'nested', 0, 0], 'Service', '.spec.clusterIP'],
    ]);
  });

  test('GIVEN the values THEN a copy carries them in place of the references; the original is unchanged', () => {
    const before = JSON.stringify(rendered);
    const found = findReferences(rendered);
    const out = substitute(rendered, found, ['gold', 5432, 'pw', '10.0.0.1']) as typeof rendered;
    expect(out).toEqual({
      ...rendered,
      metadata: { name: 'pg', labels: { tier: 'gold' } },
      spec: {
        port: 5432,
        users: [{ name: 'admin', password: 'pw' }],
        nested: [['10.0.0.1']],
        plain: { getValueFromX: 1, value: null },
      },
    });
    expect(JSON.stringify(rendered)).toBe(before);
    expect(findReferences(out)).toEqual([]);
  });

  test('GIVEN a reference that is the whole value of a list item or an object value THEN it is replaced by any JSON value', () => {
    const obj = { a: [ref({ kind: 'Secret', name: 's', path: '.data' })] };
    const found = findReferences(obj);
    expect(substitute(obj, found, [{ x: [1] }])).toEqual({ a: [{ x: [1] }] });
  });

  test('GIVEN an object without references THEN none is found and substitution copies it', () => {
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: 'b' } };
    expect(findReferences(obj)).toEqual([]);
    expect(substitute(obj, [], [])).toEqual(obj);
  });

  test.each<[string, unknown, RegExp]>([
    [
      'getValueFrom beside other keys',
      { spec: { a: { getValueFrom: { kind: 'Secret', name: 's', path: '.a' }, other: 1 } } },
      /at spec\.a has keys beside getValueFrom/,
    ],
    [
      'a reference as the name',
      { metadata: { name: ref({ kind: 'Secret', name: 's', path: '.a' }) } },
      /metadata\.name says which object/,
    ],
    [
      'a reference as the namespace',
      { metadata: { namespace: ref({ kind: 'Secret', name: 's', path: '.a' }) } },
      /metadata\.namespace says/,
    ],
    [
      'a reference as the kind',
      { kind: ref({ kind: 'Secret', name: 's', path: '.a' }) },
      /kind says which object/,
    ],
    [
      'a malformed reference deep in a list',
      { spec: { xs: [1, { v: ref({ kind: 'Secret', path: '.a' }) }] } },
      /at spec\.xs\[1\]\.v: a reference to Secret gives either a name or labels/,
    ],
    [
      'a reference whose body is not a map',
      { data: { a: { getValueFrom: null } } },
      /at data\.a: getValueFrom is a map/,
    ],
    [
      'a key with dots in the location',
      { data: { 'a.b': ref({ kind: 'Foo', name: 'x', path: '.a' }) } },
      /at data\["a\.b"\]: a reference to Foo needs an apiVersion/,
    ],
    ['the object itself a reference', ref({ kind: 'Secret', name: 's', path: '.a' }), /^the reference: /],
  ])('GIVEN %s THEN it is ill-formed, saying where', (_, obj, why) => {
    const failure = failureOf(() => findReferences(obj));
    expect(failure.name).toBe('IllFormedReference');
    expect(failure.message).toMatch(why);
  });
});

describe('resolving a value', () => {
  test.each<[string, Record<string, unknown>, unknown]>([
    [
      'a Secret field decoded',
      { kind: 'Secret', name: 'db', path: '.data.password', 'format-transformers': ['Base64ToString'] },
      's3cret!',
    ],
    ['a status field', { kind: 'Service', name: 'db', path: '{.status.endpoints[0].host}' }, 'db.example'],
    [
      'a number from a string',
      { kind: 'ConfigMap', name: 'c', path: '.data.count', 'format-transformers': ['StringToInt'] },
      42,
    ],
    [
      'a list from a string',
      { kind: 'ConfigMap', name: 'c', path: '.data.list', 'format-transformers': ['CSStringToArray'] },
      ['a', 'b', 'c'],
    ],
    [
      'an object from JSON',
      { kind: 'ConfigMap', name: 'c', path: '.data.json', 'format-transformers': ['JsonToObject'] },
      { a: [1, 2] },
    ],
    [
      'a structure as it is',
      { kind: 'Service', name: 'db', path: '.spec.ports[0]' },
      { name: 'metrics', port: 9187 },
    ],
  ])('GIVEN %s THEN the value', (_, body, expected) => {
    expect(resolveValue(parseReference(body), service)).toEqual(expected);
  });

  test.each<[string, Record<string, unknown>, ReferenceFailureKind]>([
    ['a wrong path', { kind: 'Secret', name: 'db', path: '.data.pasword' }, 'FieldNotFound'],
    [
      'a string that is no number',
      { kind: 'ConfigMap', name: 'c', path: '.data.list', 'format-transformers': ['StringToInt'] },
      'ValueNotTransformable',
    ],
    [
      'a structure to decode',
      { kind: 'Service', name: 'db', path: '.spec.ports', 'format-transformers': ['Base64ToString'] },
      'WrongValueType',
    ],
  ])('GIVEN %s THEN it fails with %s', (_, body, kind) => {
    expect(failureOf(() => resolveValue(parseReference(body), service)).kind).toBe(kind);
  });
});

describe('keeping values from Secrets out of messages', () => {
  test('GIVEN a message that quotes a secret value, its base64 or its JSON escape THEN each is redacted', () => {
    const secrets = [...secretTexts('pa"ss-word'), ...secretTexts('longervalue')];
    const message = `Invalid value: "pa\\"ss-word" and ${b64('pa"ss-word')} and longervalue and pa"ss-word`;
    expect(redact(message, secrets)).toBe(
      'Invalid value: "[redacted]" and [redacted] and [redacted] and [redacted]',
    );
  });

  test('GIVEN a short secret value in the message THEN redaction gives up (the caller withholds the message)', () => {
    expect(redact('port 80 is invalid', secretTexts('80'))).toBeUndefined();
    expect(redact('nothing here', secretTexts('80'))).toBe('nothing here');
  });

  test.each([[null], [undefined], ['']])('GIVEN %j THEN there is nothing to redact', (value) => {
    expect(secretTexts(value)).toEqual([]);
  });

  test('GIVEN a structured value THEN its JSON text is redacted', () => {
    expect(redact('got {"user":"u1","pw":"xyz"}', secretTexts({ user: 'u1', pw: 'xyz' }))).toBe(
      'got [redacted]',
    );
  });
});
