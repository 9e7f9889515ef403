/**
 * Generated OSB requests for the fuzz test (fast-check arbitraries): every method on every path,
 * valid and hostile ids (unicode, 1,000 characters, `..`, encoded slashes, prototype names),
 * bodies of every JSON type, malformed JSON, deep nesting, huge parameters, wrong content types,
 * and every header variant (API version, originating and request identity, authorization).
 */
import fc from 'fast-check';

/** One request as it goes on the wire. */
export interface FuzzRequest {
  readonly method: string;
  /** The path and query, encoded as sent. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Buffer;
  /** The instance id the path names, as the broker decodes it, when it names one. */
  readonly instanceId?: string;
  /** A wrong password the request sends, when it sends one. */
  readonly wrongPassword?: string;
}

/** What the generator builds requests from. */
export interface FuzzTargets {
  readonly username: string;
  readonly password: string;
  /** The landscape's service and plan ids, most requests name these. */
  readonly serviceId: string;
  readonly planIds: readonly string[];
  /** Instances and bindings that exist (provisioned before the run). */
  readonly knownInstances: readonly string[];
  readonly knownBindings: readonly string[];
  /** Ids that do not exist yet, reused so that valid requests stay few and bounded. */
  readonly freshIds: readonly string[];
}

const METHODS = ['GET', 'PUT', 'PATCH', 'DELETE', 'POST', 'HEAD', 'OPTIONS', 'PROPFIND', 'MKCOL', 'PURGE'];

/** Names every JavaScript object inherits, and ids that walk paths. */
const PROTOTYPE_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  'valueOf',
  '__defineGetter__',
];
const PATH_IDS = ['..', '.', '%2e%2e', '%2F', '%252F', 'a/b', '../../etc/passwd', '..%2f..%2fcatalog', '%00'];

const latin1 = (maxLength: number) =>
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    maxLength,
  });

const hostileString = fc.oneof(
  fc.constantFrom(...PROTOTYPE_NAMES, ...PATH_IDS, '', ' ', 'null', 'NaN', '-1', '\u0000', '\uffff'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
  fc.constantFrom('x'.repeat(1000), 'é'.repeat(1000), '😀'.repeat(1000), 'a'.repeat(5000)),
);

const ids = (t: FuzzTargets) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...t.knownInstances) },
    { weight: 2, arbitrary: fc.constantFrom(...t.freshIds) },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 4, arbitrary: hostileString },
  );

const bindingIds = (t: FuzzTargets) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...t.knownBindings) },
    { weight: 2, arbitrary: fc.constantFrom(...t.freshIds) },
    { weight: 3, arbitrary: hostileString },
  );

/** A path segment for an id: percent-encoded, encoded twice, or as it is when it may be sent so. */
const segment = (id: string, how: 'encoded' | 'twice' | 'raw'): string => {
  if (how === 'raw' && /^[\x21-\x7e]+$/.test(id) && !/[?#]/.test(id)) return id;
  const once = encodeURIComponent(id);
  return how === 'twice' ? encodeURIComponent(once) : once;
};

const pathOf = (t: FuzzTargets) =>
  fc
    .record({
      shape: fc.constantFrom(
        'catalog',
        'instance',
        'instance',
        'instance',
        'instance',
        'instanceLastOperation',
        'binding',
        'binding',
        'binding',
        'bindingLastOperation',
        'unknown',
        'healthz',
        'admin',
        'case',
        'dotdot',
        'root',
      ),
      instanceId: ids(t),
      bindingId: bindingIds(t),
      how: fc.constantFrom('encoded', 'encoded', 'encoded', 'twice', 'raw') as fc.Arbitrary<
        'encoded' | 'twice' | 'raw'
      >,
      suffix: fc.oneof({ weight: 20, arbitrary: fc.constant('') }, fc.constantFrom('/', '//', '/x', '?')),
    })
    .map(({ shape, instanceId, bindingId, how, suffix }) => {
      const i = segment(instanceId, how);
      const b = segment(bindingId, how);
      const instance = `/v2/service_instances/${i}`;
      const paths: Record<string, [string, boolean]> = {
        catalog: ['/v2/catalog', false],
        instance: [instance, true],
        instanceLastOperation: [`${instance}/last_operation`, true],
        binding: [`${instance}/service_bindings/${b}`, true],
        bindingLastOperation: [`${instance}/service_bindings/${b}/last_operation`, true],
        unknown: [`/v2/${i}`, false],
        healthz: ['/healthz', false],
        admin: [`/admin/instances/${i}`, false],
        case: [`/V2/SERVICE_INSTANCES/${i}`, false],
        dotdot: [`/v2/service_instances/${i}/../../catalog`, false],
        root: ['/', false],
      };
      const [path, namesInstance] = paths[shape]!;
      // The id as the router decodes it from the path (a malformed encoding reaches no route).
      let decoded: string | undefined;
      try {
        decoded = decodeURIComponent(i);
      } catch {
        decoded = undefined;
      }
      return {
        path: `${path}${suffix === '?' ? '' : suffix}`,
        instanceId: namesInstance ? decoded : undefined,
      };
    });

const serviceIds = (t: FuzzTargets) =>
  fc.oneof({ weight: 8, arbitrary: fc.constant(t.serviceId) }, { weight: 2, arbitrary: hostileString });
const planIds = (t: FuzzTargets) =>
  fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...t.planIds) }, { weight: 2, arbitrary: hostileString });

const query = (t: FuzzTargets) =>
  fc
    .record(
      {
        accepts_incomplete: fc.oneof(
          { weight: 6, arbitrary: fc.constant('true') },
          {
            weight: 1,
            arbitrary: fc.constantFrom('false', 'TRUE', '1', '', 'yes', 'true&accepts_incomplete=false'),
          },
        ),
        service_id: serviceIds(t).map(encodeURIComponent),
        plan_id: planIds(t).map(encodeURIComponent),
        operation: hostileString.map(encodeURIComponent),
        extra: fc.constantFrom(
          '__proto__[x]=1',
          'constructor.prototype.x=1',
          '%zz',
          '&&&',
          'a=' + 'b'.repeat(5000),
        ),
      },
      { requiredKeys: ['accepts_incomplete', 'service_id', 'plan_id'] },
    )
    .map((q) =>
      Object.entries(q)
        .map(([k, v]) => (k === 'extra' ? v : `${k}=${v}`))
        .join('&'),
    );

/** A JSON value nested `depth` levels deep, as text (JSON.stringify would overflow the stack first). */
const nested = (depth: number, array: boolean): string =>
  array ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

const prototypeObject = fc.constantFrom(
  JSON.parse('{"__proto__":{"polluted":true}}') as object,
  JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}') as object,
  { constructor: 'x', toString: 1, hasOwnProperty: null, valueOf: [] },
);

/** An OSB body: the fields a provision, update or bind has, each of them valid or anything else. */
const osbBody = (t: FuzzTargets) =>
  fc.record(
    {
      service_id: fc.oneof({ weight: 6, arbitrary: fc.constant(t.serviceId) }, fc.jsonValue({ maxDepth: 2 })),
      plan_id: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...t.planIds) },
        fc.jsonValue({ maxDepth: 2 }),
      ),
      organization_guid: fc.oneof(fc.constant('org'), hostileString, fc.jsonValue({ maxDepth: 1 })),
      space_guid: fc.oneof(fc.constant('space'), hostileString, fc.jsonValue({ maxDepth: 1 })),
      parameters: fc.oneof(
        fc.constant({ foo: 'bar' }),
        fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
        prototypeObject,
        fc.jsonValue({ maxDepth: 2 }),
      ),
      context: fc.oneof(
        fc.constant({ platform: 'cloudfoundry', organization_guid: 'org', space_guid: 'space' }),
        fc.constant({ platform: 'kubernetes', namespace: 'kube-system', clusterid: 'x' }),
        prototypeObject,
        fc.jsonValue({ maxDepth: 2 }),
      ),
      maintenance_info: fc.oneof(fc.constant({ version: '1.0.0' }), fc.jsonValue({ maxDepth: 2 })),
      previous_values: fc.oneof(
        fc.record({ plan_id: planIds(t), service_id: serviceIds(t) }),
        fc.jsonValue({ maxDepth: 2 }),
      ),
      bind_resource: fc.oneof(fc.constant({ app_guid: 'app' }), fc.jsonValue({ maxDepth: 2 })),
      app_guid: fc.jsonValue({ maxDepth: 1 }),
      predecessor_binding_id: fc.oneof(fc.constantFrom(...t.knownBindings), hostileString),
    },
    { requiredKeys: ['service_id', 'plan_id'] },
  );

const body = (t: FuzzTargets): fc.Arbitrary<Buffer | undefined> =>
  fc.oneof(
    { weight: 10, arbitrary: osbBody(t).map((b) => Buffer.from(JSON.stringify(b))) },
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify(v))) },
    { weight: 2, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        // malformed JSON: cut short, not JSON at all, a BOM, bytes that are not UTF-8, NUL
        osbBody(t).chain((b) => {
          const text = JSON.stringify(b);
          return fc.nat({ max: Math.max(0, text.length - 1) }).map((n) => Buffer.from(text.slice(0, n)));
        }),
        fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
        fc.constant(Buffer.from(`\ufeff{"service_id":"${t.serviceId}"}`)),
        fc.constant(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])),
        fc.constant(Buffer.from('{"a":1}\u0000{"b":2}')),
        fc.constant(Buffer.from('{"a":1,"a":2,"service_id":1e999999}')),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .record({ depth: fc.constantFrom(100, 1_000, 10_000, 100_000), array: fc.boolean() })
        .map(({ depth, array }) => Buffer.from(nested(depth, array))),
    },
    {
      weight: 1,
      // huge parameters: around the body limit (1 MiB), below and above it
      arbitrary: fc.constantFrom(100_000, 900_000, 1_100_000, 3_000_000).map((size) =>
        Buffer.from(
          JSON.stringify({
            service_id: t.serviceId,
            plan_id: t.planIds[0],
            parameters: { big: 'x'.repeat(size), list: Array.from({ length: 1000 }, (_, i) => i) },
          }),
        ),
      ),
    },
  );

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Authorization: mostly right, else every kind of wrong. */
interface Auth {
  readonly header?: string;
  readonly wrongPassword?: string;
}

const authorization = (t: FuzzTargets): fc.Arbitrary<Auth> =>
  fc.oneof(
    { weight: 20, arbitrary: fc.constant<Auth>({ header: basic(t.username, t.password) }) },
    {
      weight: 2,
      arbitrary: fc.oneof<fc.Arbitrary<Auth>[]>(
        fc.constant({}),
        fc
          .string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 16, maxLength: 16 })
          .map((hex) => {
            const wrong = `wrong-${hex}`;
            return { header: basic(t.username, wrong), wrongPassword: wrong };
          }),
        fc.constant({ header: basic('admin', t.password) }),
        fc.constant({ header: basic(t.username, '') }),
        fc.constant({ header: `Bearer ${t.password}` }),
        fc.constant({ header: 'Basic %%%' }),
        fc.constant({ header: `Basic ${Buffer.from(t.username).toString('base64')}` }),
        fc.constant({ header: `basic ${Buffer.from(`${t.username}:${t.password}`).toString('base64')}` }),
        fc.constant({ header: `Basic ${'A'.repeat(8000)}` }),
        latin1(100).map((s) => ({ header: s })),
        fc.string({ unit: 'grapheme', maxLength: 20 }).map((u) => ({ header: basic(u, t.password) })),
      ),
    },
  );

const version = fc.oneof(
  { weight: 20, arbitrary: fc.constant('2.17') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      undefined,
      '2.12',
      '2.14',
      '2.11',
      '2.18',
      '3.0',
      '1.0',
      '',
      'abc',
      ' 2.17',
      '2.17.1',
      '2',
      '2.',
      '99999999999999999999.1',
      '2.17, 2.16',
    ),
  },
);

const originatingIdentity = fc.oneof(
  { weight: 16, arbitrary: fc.constant(undefined) },
  fc
    .jsonValue({ maxDepth: 2 })
    .map((v) => `cloudfoundry ${Buffer.from(JSON.stringify(v)).toString('base64')}`),
  fc.constant(`kubernetes ${Buffer.from('{"username":"u","uid":"1","groups":["a"]}').toString('base64')}`),
  latin1(60),
  fc.constant(`cloudfoundry ${'A'.repeat(12_000)}`),
  fc.constant('cloudfoundry %%%'),
);

const requestIdentity = fc.oneof(
  { weight: 16, arbitrary: fc.constant(undefined) },
  fc.uuid(),
  latin1(80),
  fc.constant('r'.repeat(6000)),
);

const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  '*/*',
  ';;;',
);

const contentEncoding = fc.oneof(
  { weight: 10, arbitrary: fc.constant(undefined) },
  fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-unknown', 'gzip, gzip'),
);

/** Requests to the broker: each a method, a path with its query, headers and a body. */
export function fuzzRequests(t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom('GET', 'PUT', 'PATCH', 'DELETE') },
        fc.constantFrom(...METHODS),
      ),
      target: pathOf(t),
      query: fc.option(query(t), { freq: 5 }),
      auth: authorization(t),
      version,
      originatingIdentity,
      requestIdentity,
      contentType,
      contentEncoding,
      body: body(t),
      extraHeader: fc.oneof(
        { weight: 12, arbitrary: fc.constant(undefined) },
        fc.constantFrom<[string, string]>(
          ['X-Forwarded-For', '127.0.0.1, 10.0.0.1'],
          ['Expect', '100-continue'],
          ['Transfer-Encoding', 'chunked'],
          ['X-Http-Method-Override', 'DELETE'],
          ['Cookie', 'a='.repeat(3000)],
          ['X-Large', 'h'.repeat(20_000)],
          ['Accept', 'text/html'],
          ['Range', 'bytes=0-1'],
        ),
      ),
    })
    .map((r) => {
      const headers: Record<string, string> = {};
      if (r.auth.header !== undefined) headers.Authorization = r.auth.header;
      if (r.version !== undefined) headers['X-Broker-API-Version'] = r.version;
      if (r.originatingIdentity !== undefined)
        headers['X-Broker-API-Originating-Identity'] = r.originatingIdentity;
      if (r.requestIdentity !== undefined) headers['X-Broker-API-Request-Identity'] = r.requestIdentity;
      if (r.contentType !== undefined) headers['Content-Type'] = r.contentType;
      if (r.contentEncoding !== undefined) headers['Content-Encoding'] = r.contentEncoding;
      if (r.extraHeader) headers[r.extraHeader[0]] = r.extraHeader[1];
      const request: FuzzRequest = {
        method: r.method,
        path: r.query === null ? r.target.path : `${r.target.path}?${r.query}`,
        headers,
        ...(r.body !== undefined ? { body: r.body } : {}),
        ...(r.target.instanceId !== undefined ? { instanceId: r.target.instanceId } : {}),
        ...(r.auth.wrongPassword ? { wrongPassword: r.auth.wrongPassword } : {}),
      };
      return Object.assign(request, { [fc.toStringMethod]: () => describeRequest(request) });
    });
}

const cut = (text: string, length: number) =>
  text.length > length ? `${text.slice(0, length)}… (${text.length} characters)` : text;

/** A request in a few lines, long values cut: how a failure shows it. */
export function describeRequest(r: FuzzRequest): string {
  const headers = Object.entries(r.headers).map(([k, v]) => `${k}: ${cut(JSON.stringify(v), 120)}`);
  const body = r.body ? cut(JSON.stringify(r.body.toString('utf8')), 300) : '(no body)';
  return [`${r.method} ${cut(r.path, 300)}`, ...headers, body].join('\n  ');
}
