/**
 * Generated secrets, the pure part: what an SFSecret may ask for (and the description of what it
 * may not), the order CAs are generated in, what templates see of the versions, and the version
 * bookkeeping of a rotation and of the bindings made with a version.
 */
import {
  dueForRotation,
  generatedTemplateData,
  generationOrder,
  isGeneratedSecret,
  parseDuration,
  parseGeneratedSecret,
  recordedAfterGeneration,
  rotated,
  unusedVersions,
  type GeneratedSecretSpec,
  type GeneratedSecretStatus,
} from '../../../src/resources/sfsecret.js';
import type { KubeObject } from '../../../src/resources/types.js';

const sfSecret = (spec: unknown, name = 'db'): KubeObject => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFSecret',
  metadata: { name },
  spec,
});

describe('what an SFSecret may ask for', () => {
  test.each<[string, unknown, Partial<GeneratedSecretSpec>]>([
    ['a password with defaults', { type: 'password' }, { type: 'password', secretName: 'db', length: 32 }],
    [
      'a password of 64',
      { type: 'password', length: 64, secretName: 'x-admin' },
      { length: 64, secretName: 'x-admin' },
    ],
    ['an rsa key', { type: 'rsa' }, { type: 'rsa', bits: 2048 }],
    ['an ssh key of 4096 bits', { type: 'ssh', bits: 4096 }, { type: 'ssh', bits: 4096 }],
    [
      'a CA',
      { type: 'certificate', commonName: 'my CA', isCA: true },
      { type: 'certificate', commonName: 'my CA', isCA: true, validityDays: 3650, alternativeNames: [] },
    ],
    [
      'a certificate signed by a generated CA',
      {
        type: 'certificate',
        commonName: 'db',
        alternativeNames: ['db.ns.svc', '10.0.0.1'],
        ca: { generated: 'ca' },
      },
      {
        isCA: false,
        validityDays: 365,
        ca: { generated: 'ca' },
        alternativeNames: ['db.ns.svc', '10.0.0.1'],
      },
    ],
    [
      'a certificate signed by a CA Secret',
      { type: 'certificate', commonName: 'db', ca: { secretName: 'corp-ca' } },
      { ca: { secretName: 'corp-ca' } },
    ],
  ])('GIVEN %s THEN it is valid', (_, spec, expected) => {
    expect(parseGeneratedSecret(sfSecret(spec))).toMatchObject({ name: 'db', ...expected });
  });

  test.each<[string, KubeObject, string]>([
    ['no spec', sfSecret(undefined), 'SFSecret db: it has no spec'],
    [
      'an unknown type',
      sfSecret({ type: 'passphrase' }),
      'SFSecret db: spec.type "passphrase" is not one of password, rsa, ssh, certificate',
    ],
    [
      'an option of another type',
      sfSecret({ type: 'password', commonName: 'x' }),
      'SFSecret db: spec.commonName is no option of a password; a password takes secretName, length',
    ],
    [
      'a password too short',
      sfSecret({ type: 'password', length: 4 }),
      'SFSecret db: spec.length must be a whole number from 8 to 256',
    ],
    ['a length as text', sfSecret({ type: 'password', length: '32' }), 'spec.length must be a whole number'],
    [
      'odd key bits',
      sfSecret({ type: 'rsa', bits: 1024 }),
      'SFSecret db: spec.bits must be one of 2048, 3072, 4096',
    ],
    [
      'a certificate without a common name',
      sfSecret({ type: 'certificate' }),
      'SFSecret db: spec.commonName must be a text of 1 to 64 characters',
    ],
    [
      'a bad alternative name',
      sfSecret({ type: 'certificate', commonName: 'db', alternativeNames: ['a b'] }),
      'spec.alternativeNames must be a list of DNS names or IP addresses',
    ],
    [
      'a CA of two kinds',
      sfSecret({ type: 'certificate', commonName: 'db', ca: { generated: 'a', secretName: 'b' } }),
      'spec.ca must be {generated: <an SFSecret of the instance>} or {secretName: <a Secret with tls.crt and tls.key>}',
    ],
    [
      'a certificate signed by itself',
      sfSecret({ type: 'certificate', commonName: 'db', ca: { generated: 'db' } }),
      'SFSecret db: spec.ca names the SFSecret itself',
    ],
    [
      'a validity of zero days',
      sfSecret({ type: 'certificate', commonName: 'db', validityDays: 0 }),
      'spec.validityDays must be a whole number from 1 to 36500',
    ],
    [
      'a name that is no DNS label',
      sfSecret({ type: 'password' }, 'DB_pass'),
      'SFSecret DB_pass: metadata.name must be',
    ],
    [
      'a secretName that is no DNS label',
      sfSecret({ type: 'password', secretName: 'a.b' }),
      'spec.secretName must be',
    ],
  ])('GIVEN %s THEN the problem says so', (_, obj, problem) => {
    const parsed = parseGeneratedSecret(obj);
    expect('problem' in parsed && parsed.problem).toContain(problem);
  });

  test('only osb.servicefabrik.io/v1alpha1 SFSecret is one', () => {
    expect(isGeneratedSecret(sfSecret({}))).toBe(true);
    expect(isGeneratedSecret({ apiVersion: 'v1', kind: 'SFSecret' })).toBe(false);
    expect(isGeneratedSecret({ apiVersion: 'osb.servicefabrik.io/v1alpha1', kind: 'Secret' })).toBe(false);
  });
});

describe('the order of generation', () => {
  const spec = (name: string, extra: Partial<GeneratedSecretSpec> = {}): GeneratedSecretSpec => ({
    name,
    type: 'certificate',
    secretName: name,
    commonName: name,
    ...extra,
  });

  test('GIVEN certificates before the CAs that sign them THEN each CA comes first', () => {
    const order = generationOrder([
      spec('leaf', { ca: { generated: 'intermediate' } }),
      spec('intermediate', { isCA: true, ca: { generated: 'root' } }),
      spec('root', { isCA: true }),
      { name: 'pw', type: 'password', secretName: 'pw' },
    ]);
    expect(Array.isArray(order) && order.map((s) => s.name)).toEqual(['root', 'intermediate', 'leaf', 'pw']);
  });

  test.each<[string, GeneratedSecretSpec[], string]>([
    [
      'a CA not rendered',
      [spec('leaf', { ca: { generated: 'ca' } })],
      'spec.ca names ca, which the template does not render',
    ],
    [
      'a CA that is no CA',
      [spec('leaf', { ca: { generated: 'ca' } }), spec('ca')],
      'which is no certificate with isCA: true',
    ],
    ['a name twice', [spec('a'), spec('a')], 'SFSecret a is rendered twice'],
    [
      'a secretName twice',
      [spec('a'), { ...spec('b'), secretName: 'a' }],
      'two SFSecrets use the secretName a',
    ],
    [
      'CAs signing each other',
      [spec('a', { isCA: true, ca: { generated: 'b' } }), spec('b', { isCA: true, ca: { generated: 'a' } })],
      'is signed, through its CAs, by itself',
    ],
  ])('GIVEN %s THEN the problem says so', (_, specs, problem) => {
    const order = generationOrder(specs);
    expect('problem' in order && order.problem).toContain(problem);
  });
});

describe('versions', () => {
  const NOW = '2026-01-01T00:00:00.000Z';
  const entry: GeneratedSecretStatus = {
    name: 'password',
    type: 'password',
    secretName: 'db-admin',
    version: 1,
    secret: 'db-admin-v1',
    versions: [1],
    createdAt: NOW,
  };
  const declared = (name: string, secretName = name): GeneratedSecretSpec => ({
    name,
    type: 'password',
    secretName,
  });

  test('GIVEN a first render THEN templates see version 1 of each declared secret, the recorded ones as recorded', () => {
    expect(generatedTemplateData(undefined, [declared('password', 'db-admin')])).toEqual({
      password: { secretName: 'db-admin-v1', version: 1 },
    });
    expect(
      generatedTemplateData([{ ...entry, version: 3, secret: 'db-admin-v3' }], [declared('password')]),
    ).toEqual({
      password: { secretName: 'db-admin-v3', version: 3 },
    });
  });

  test('GIVEN a re-render THEN what the record keeps is unchanged and only new secrets are added at version 1', () => {
    const kept = { ...entry, version: 2, secret: 'db-admin-v2', versions: [1, 2] };
    expect(
      recordedAfterGeneration([kept], [declared('password', 'db-admin'), declared('api-key')], 'later'),
    ).toEqual([
      kept,
      {
        name: 'api-key',
        type: 'password',
        secretName: 'api-key',
        version: 1,
        secret: 'api-key-v1',
        versions: [1],
        createdAt: 'later',
      },
    ]);
  });

  test('GIVEN a rotation THEN version N+1 is current and N is kept; the same run again changes nothing', () => {
    const next = rotated(entry, 'later', 'run-1');
    expect(next).toEqual({
      ...entry,
      version: 2,
      secret: 'db-admin-v2',
      versions: [1, 2],
      createdAt: 'later',
      rotatedBy: 'run-1',
    });
    expect(rotated(next, 'even later', 'run-1')).toBe(next);
    expect(rotated(next, 'even later', 'run-2')).toMatchObject({ version: 3, versions: [1, 2, 3] });
  });

  test.each<[string, (readonly { name: string; version: number; secret: string }[] | undefined)[], number[]]>(
    [
      ['no bindings', [], [1, 2]],
      ['a binding made with version 1', [[{ name: 'password', version: 1, secret: 'db-admin-v1' }]], [2]],
      [
        'a binding made with version 1 of another secret',
        [[{ name: 'other', version: 1, secret: 'o-v1' }]],
        [1, 2],
      ],
      ['a binding with no versions recorded', [undefined], [1, 2]],
      [
        'bindings made with versions 1 and 2',
        [[{ name: 'password', version: 1, secret: 'x' }], [{ name: 'password', version: 2, secret: 'y' }]],
        [],
      ],
    ],
  )('GIVEN version 3 current and %s THEN the unused versions are %j', (_, bindings, unused) => {
    const current = { ...entry, version: 3, secret: 'db-admin-v3', versions: [1, 2, 3] };
    expect(unusedVersions(current, bindings)).toEqual(unused);
  });
});

describe('rotateAfter', () => {
  test.each<[unknown, number | undefined]>([
    ['90d', 90 * 86_400],
    ['12h', 12 * 3600],
    ['1h30m', 5400],
    ['45s', 45],
    ['0s', undefined],
    ['1w', undefined],
    ['10', undefined],
    ['', undefined],
    [90, undefined],
  ])('GIVEN %j THEN %j seconds', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  test('GIVEN secrets made at different times THEN those older than rotateAfter are due', () => {
    const made = (name: string, createdAt: string): GeneratedSecretStatus => ({
      name,
      type: 'password',
      secretName: name,
      version: 1,
      secret: `${name}-v1`,
      versions: [1],
      createdAt,
    });
    const now = Date.parse('2026-01-10T00:00:00Z');
    const due = dueForRotation(
      [
        made('old', '2026-01-01T00:00:00Z'),
        made('edge', '2026-01-09T00:00:00Z'),
        made('new', '2026-01-09T12:00:00Z'),
      ],
      86_400,
      now,
    );
    expect(due.map((d) => d.name)).toEqual(['old', 'edge']);
  });
});
