/**
 * Resolving the references of the objects an operation applies, against a local stand-in of a
 * cluster's object client: all or nothing, what is waited for and what fails at once, one read per
 * referenced object, and values from Secrets kept out of messages.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { resolveReferences, type ResolvingFor } from '../../../src/activities/references.js';
import type { DesiredObject } from '../../../src/activities/desired-objects.js';
import type { ClusterClient } from '../../../src/kube/clients.js';
import type { KubeObject } from '../../../src/resources/types.js';

const NS = 'sf-i-1';
const SECRET_VALUE = 'p@ssw0rd-very-secret';
const b64 = (s: string) => Buffer.from(s).toString('base64');

const configMap = (name: string, data: Record<string, string>, labels?: Record<string, string>): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
    data,
  }) as KubeObject;

const EXISTING: KubeObject[] = [
  configMap('cfg', { port: '5432', hosts: '["a","b"]', word: 'abc' }),
  configMap('tier-1', { tier: 'gold' }, { role: 'tier' }),
  configMap('dup-1', {}, { role: 'dup' }),
  configMap('dup-2', {}, { role: 'dup' }),
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', namespace: NS },
    data: { password: b64(SECRET_VALUE) },
  } as KubeObject,
];

/** A cluster whose object client reads and lists `objects`, counting reads. */
function standIn(objects: readonly KubeObject[]) {
  const reads: string[] = [];
  const notFound = () => Object.assign(new Error('not found'), { code: 404 });
  const cluster = {
    id: '1',
    objects: {
      async read(spec: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }) {
        reads.push(`${spec.kind}/${spec.metadata.name}`);
        if (spec.apiVersion !== 'v1')
          throw new Error(`Unrecognized API version and kind: ${spec.apiVersion} ${spec.kind}`);
        const found = objects.find(
          (o) =>
            o.kind === spec.kind &&
            o.metadata.name === spec.metadata.name &&
            o.metadata.namespace === spec.metadata.namespace,
        );
        if (!found) throw notFound();
        return found;
      },
      async list(_apiVersion: string, kind: string, namespace: string, ...rest: unknown[]) {
        const selector = String(rest[4]);
        reads.push(`${kind}?${selector}`);
        const wanted = selector.split(',').map((pair) => pair.split('='));
        const items = objects.filter(
          (o) =>
            o.kind === kind &&
            o.metadata.namespace === namespace &&
            wanted.every(([k, v]) => o.metadata.labels?.[k!] === v),
        );
        return { items };
      },
    },
  } as unknown as ClusterClient;
  return { cluster, reads };
}

const ref = (body: Record<string, unknown>) => ({ getValueFrom: body });

const desired = (name: string, data: Record<string, unknown>, kind = 'ConfigMap'): DesiredObject => ({
  object: { apiVersion: 'v1', kind, metadata: { name, namespace: NS }, data } as KubeObject,
  ref: { apiVersion: 'v1', kind, name, namespace: NS },
});

function resolving(cluster: ClusterClient): ResolvingFor {
  return {
    cluster,
    namespace: NS,
    reach: {
      own: NS,
      registry: 'interoperator',
      service: { name: 'postgresql', allowedNamespaces: ['shared'] },
    },
    planName: 'small',
    action: 'provision',
    call: (_what, run) => run(),
  };
}

/** What `promise` rejects with: retryable or terminal, its type and message. */
async function rejection(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    const e = err as Error;
    return e instanceof ApplicationFailure
      ? { terminal: e.nonRetryable, type: e.type, message: e.message }
      : { terminal: false, message: e.message };
  }
  throw new Error('expected a rejection');
}

describe('resolving references before applying', () => {
  test('GIVEN objects without references THEN they are given as they are, and nothing is read', async () => {
    const { cluster, reads } = standIn(EXISTING);
    const objects = [desired('out', { a: 'b' })];
    const resolved = await resolveReferences(resolving(cluster), objects);
    expect(resolved.desired).toEqual(objects);
    expect(reads).toEqual([]);
    expect(resolved.holdsSecret('anything')).toBe(false);
  });

  test('GIVEN references in several objects THEN every one is resolved, each referenced object read once', async () => {
    const { cluster, reads } = standIn(EXISTING);
    const resolved = await resolveReferences(resolving(cluster), [
      desired('out', {
        port: ref({ kind: 'ConfigMap', name: 'cfg', path: '.data.port' }),
        hosts: ref({
          kind: 'ConfigMap',
          name: 'cfg',
          path: '.data.hosts',
          'format-transformers': ['JsonToObject', 'ArrayToCSString'],
        }),
        tier: ref({ kind: 'ConfigMap', labels: { role: 'tier' }, path: '.data.tier' }),
      }),
      desired('creds', { password: ref({ kind: 'Secret', name: 'db', path: '.data.password' }) }, 'Secret'),
    ]);
    expect(resolved.desired.map((d) => (d.object as KubeObject & { data: unknown }).data)).toEqual([
      { port: '5432', hosts: 'a,b', tier: 'gold' },
      { password: b64(SECRET_VALUE) },
    ]);
    expect(reads).toEqual(['ConfigMap/cfg', 'ConfigMap?role=tier', 'Secret/db']);
    expect(resolved.holdsSecret({ x: SECRET_VALUE })).toBe(false);
    expect(resolved.holdsSecret({ x: b64(SECRET_VALUE) })).toBe(true);
  });

  test('GIVEN a referenced object that is missing THEN the step is retried, saying which reference it waits for', async () => {
    const { cluster } = standIn(EXISTING);
    const failure = await rejection(
      resolveReferences(resolving(cluster), [
        desired('out', {
          a: ref({ kind: 'ConfigMap', name: 'later', path: '.data.a' }),
          b: ref({ kind: 'ConfigMap', labels: ['role=none'], path: '.data.b' }),
        }),
      ]),
    );
    expect(failure).toEqual({
      terminal: false,
      message: `waiting for referenced object ConfigMap later in ${NS}, path .data.a (for data.a of ConfigMap out): referenced object not found (it does not exist) (and 1 more)`,
    });
  });

  test.each<[string, Record<string, unknown>, RegExp]>([
    [
      'no object with the labels',
      { kind: 'ConfigMap', labels: { role: 'none' }, path: '.a' },
      /not found \(no object has these labels\)$/,
    ],
    [
      'a kind not served',
      { kind: 'Foo', apiVersion: 'example.com/v1', name: 'x', path: '.a' },
      /not found \(cluster 1 serves no Foo of example.com\/v1\)$/,
    ],
  ])('GIVEN %s THEN it is waited for', async (_, body, why) => {
    const { cluster } = standIn(EXISTING);
    const failure = await rejection(
      resolveReferences(resolving(cluster), [desired('out', { a: ref(body) })]),
    );
    expect(failure.terminal).toBe(false);
    expect(failure.message).toMatch(/^waiting for referenced object /);
    expect(failure.message).toMatch(why);
  });

  test.each<[string, Record<string, unknown>, string]>([
    [
      'a wrong path',
      { kind: 'ConfigMap', name: 'cfg', path: '.data.nope' },
      'field not found: no field .data.nope',
    ],
    [
      'a value that cannot be transformed',
      { kind: 'ConfigMap', name: 'cfg', path: '.data.word', 'format-transformers': ['StringToInt'] },
      'value cannot be transformed: StringToInt: the string is not an integer',
    ],
    [
      'a value of the wrong type',
      { kind: 'ConfigMap', name: 'cfg', path: '.data', 'format-transformers': ['Base64ToString'] },
      'value of the wrong type: Base64ToString takes a string, not an object',
    ],
    [
      'labels that select several objects',
      { kind: 'ConfigMap', labels: { role: 'dup' }, path: '.data' },
      'its labels select 2 objects, and a reference reads exactly one',
    ],
  ])(
    'GIVEN %s THEN the operation fails at once, naming the object, the reference and the failure',
    async (_, body, what) => {
      const { cluster } = standIn(EXISTING);
      const failure = await rejection(
        resolveReferences(resolving(cluster), [desired('out', { x: ref(body) })]),
      );
      expect(failure.terminal).toBe(true);
      expect(failure.type).toBe('ReferenceError');
      expect(failure.message).toContain(
        'the provision template of plan small: a reference cannot be resolved: ',
      );
      expect(failure.message).toContain(`(for data.x of ConfigMap out): ${what}`);
    },
  );

  test('GIVEN one reference waited for and one that cannot resolve THEN the operation fails at once (waiting would not help)', async () => {
    const { cluster } = standIn(EXISTING);
    const failure = await rejection(
      resolveReferences(resolving(cluster), [
        desired('first', { a: ref({ kind: 'ConfigMap', name: 'later', path: '.data.a' }) }),
        desired('second', { b: ref({ kind: 'ConfigMap', name: 'cfg', path: '.data.nope' }) }),
      ]),
    );
    expect(failure).toMatchObject({ terminal: true, type: 'ReferenceError' });
    expect(failure.message).toContain('ConfigMap second');
  });

  test('GIVEN a failure on a Secret THEN its message names the reference, never the value', async () => {
    const { cluster } = standIn(EXISTING);
    const failure = await rejection(
      resolveReferences(resolving(cluster), [
        desired('out', {
          p: ref({
            kind: 'Secret',
            name: 'db',
            path: '.data.password',
            'format-transformers': ['Base64ToString', 'StringToInt'],
          }),
        }),
      ]),
    );
    expect(failure.terminal).toBe(true);
    expect(failure.message).toContain(`Secret db in ${NS}, path .data.password`);
    expect(failure.message).not.toContain(SECRET_VALUE);
    expect(failure.message).not.toContain(b64(SECRET_VALUE));
  });

  test.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a reference that is not one',
      { kind: 'ConfigMap', path: '.a' },
      /the provision template of plan small renders ConfigMap out with the reference at data\.x: a reference to ConfigMap gives either a name or labels/,
    ],
    [
      'a reference into the registry',
      { kind: 'Secret', name: 'kubeconfig', namespace: 'interoperator', path: '.data' },
      /reference to Secret in the registry's namespace interoperator, which no template may reach/,
    ],
    [
      'a reference into a namespace its service does not list',
      { kind: 'ConfigMap', name: 'settings', namespace: 'kube-system', path: '.data' },
      /renders ConfigMap out with a reference to ConfigMap in namespace kube-system, which is not the instance's own: a service's owner allows a namespace by listing it in spec\.allowedNamespaces of SFService postgresql/,
    ],
    [
      'a reference into another instance',
      { kind: 'Secret', name: 'db', namespace: 'sf-other', path: '.data' },
      /sf-other, the namespace of another instance/,
    ],
  ])('GIVEN %s THEN the template fails, and nothing is read', async (_, body, why) => {
    const { cluster, reads } = standIn(EXISTING);
    const failure = await rejection(
      resolveReferences(resolving(cluster), [desired('out', { x: ref(body) })]),
    );
    expect(failure).toMatchObject({ terminal: true, type: 'TemplateError' });
    expect(failure.message).toMatch(why);
    expect(reads).toEqual([]);
  });

  test('GIVEN resolved values from a Secret WHEN an apply fails quoting one THEN the failure says it redacted, of the same kind', async () => {
    const { cluster } = standIn(EXISTING);
    const resolved = await resolveReferences(resolving(cluster), [
      desired('out', {
        p: ref({
          kind: 'Secret',
          name: 'db',
          path: '.data.password',
          'format-transformers': ['Base64ToString'],
        }),
      }),
    ]);
    const retried = await rejection(
      resolved.applying(() => Promise.reject(new Error(`data.p: Invalid value: "${SECRET_VALUE}"`))),
    );
    expect(retried).toEqual({ terminal: false, message: 'data.p: Invalid value: "[redacted]"' });
    const ended = await rejection(
      resolved.applying(() =>
        Promise.reject(
          ApplicationFailure.nonRetryable(`bad ${b64(SECRET_VALUE)} and ${SECRET_VALUE}`, 'InvalidObject'),
        ),
      ),
    );
    expect(ended).toEqual({
      terminal: true,
      type: 'InvalidObject',
      message: 'bad [redacted] and [redacted]',
    });
  });

  test('GIVEN a short value from a Secret WHEN an apply fails quoting it THEN the message is withheld', async () => {
    const { cluster } = standIn([
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'pin', namespace: NS },
        data: { pin: b64('42') },
      } as KubeObject,
    ]);
    const resolved = await resolveReferences(resolving(cluster), [
      desired('out', {
        p: ref({ kind: 'Secret', name: 'pin', path: '.data.pin', 'format-transformers': ['Base64ToString'] }),
      }),
    ]);
    const failure = await rejection(
      resolved.applying(() => Promise.reject(new Error('port 42 is out of range'))),
    );
    expect(failure.message).toMatch(/its message is withheld/);
    expect(failure.message).not.toContain('42');
  });
});
