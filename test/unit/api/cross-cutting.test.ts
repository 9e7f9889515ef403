/**
 * Rules every route follows: authentication, the version header, the identity headers, the error
 * format, unknown routes and methods, and what a failure shows (checklist rows 1–6, 9, 10).
 */
import { OsbError, unavailable } from '../../../src/osb/errors.js';
import { PLANS, SERVICE_ID, basic, provisionBody, testApi, PASSWORD, USERNAME } from './support.js';

const INSTANCE = '/v2/service_instances/i-1';
const identity = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64');

describe('Basic authentication (row 1)', () => {
  const routes: [string, string][] = [
    ['GET', '/v2/catalog'],
    ['PUT', INSTANCE],
    ['PATCH', INSTANCE],
    ['DELETE', `${INSTANCE}?service_id=s&plan_id=p`],
    ['GET', INSTANCE],
    ['GET', `${INSTANCE}/last_operation`],
    ['PUT', `${INSTANCE}/service_bindings/b-1`],
    ['DELETE', `${INSTANCE}/service_bindings/b-1?service_id=s&plan_id=p`],
    ['GET', `${INSTANCE}/service_bindings/b-1`],
    ['GET', `${INSTANCE}/service_bindings/b-1/last_operation`],
    ['GET', '/v2/no-such-route'],
    ['POST', '/v2/catalog'],
    // Other cases of the same paths: never served without credentials.
    ['GET', '/V2/catalog'],
    ['PUT', '/V2/service_instances/i-1'],
    ['GET', '/V2/service_instances/i-1/last_operation'],
    ['DELETE', '/v2/SERVICE_INSTANCES/i-1?service_id=s&plan_id=p'],
  ];

  test.each(routes)(
    'GIVEN no Authorization WHEN %s %s THEN 401 with a Basic challenge, before any other check',
    async (method, path) => {
      const { http, broker } = testApi();
      // no version header either: authentication comes first
      const res = await http[method.toLowerCase() as 'get'](path).send('{not json');
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Basic realm="interoperator", charset="UTF-8"');
      expect(res.body).toEqual({
        error: 'Unauthorized',
        description: 'Authentication is required to access this broker.',
      });
      expect(broker.calls).toEqual([]);
    },
  );

  test.each([
    ['a wrong password', basic(USERNAME, 'wrong')],
    ['a wrong user', basic('admin', PASSWORD)],
    ['no password part', `Basic ${Buffer.from(USERNAME).toString('base64')}`],
    ['another scheme', `Bearer ${PASSWORD}`],
    ['a malformed base64 value', 'Basic %%%'],
    ['an empty header', ''],
  ])('GIVEN %s WHEN GET /v2/catalog THEN 401', async (_name, authorization) => {
    const { http } = testApi();
    const res = await http
      .get('/v2/catalog')
      .set('Authorization', authorization)
      .set('X-Broker-API-Version', '2.17');
    expect([res.status, res.body.error]).toEqual([401, 'Unauthorized']);
  });

  test('GIVEN two credentials during a rotation WHEN either is used THEN both are accepted, others are not', async () => {
    const { http } = testApi({
      credentials: () => [
        { username: 'old', password: 'old-secret' },
        { username: 'new', password: 'new-secret' },
      ],
    });
    const get = (auth: string) =>
      http.get('/v2/catalog').set('Authorization', auth).set('X-Broker-API-Version', '2.17');
    expect((await get(basic('old', 'old-secret'))).status).toBe(200);
    expect((await get(basic('new', 'new-secret'))).status).toBe(200);
    expect((await get(basic('old', 'new-secret'))).status).toBe(401);
  });

  test('GIVEN credentials that change WHEN the function returns new ones THEN the next request uses them', async () => {
    let current = { username: 'a', password: 'one' };
    const { http } = testApi({ credentials: () => current });
    const get = (auth: string) =>
      http.get('/v2/catalog').set('Authorization', auth).set('X-Broker-API-Version', '2.17');
    expect((await get(basic('a', 'one'))).status).toBe(200);
    current = { username: 'a', password: 'two' };
    expect((await get(basic('a', 'one'))).status).toBe(401);
    expect((await get(basic('a', 'two'))).status).toBe(200);
  });

  test('GIVEN a header accepted before WHEN the credentials are rotated THEN it is refused, and the rotated-out one too', async () => {
    const old = { username: 'a', password: 'one' };
    const next = { username: 'a', password: 'two' };
    let current: { username: string; password: string }[] = [old];
    const { http } = testApi({ credentials: () => current });
    const get = (auth: string) =>
      http.get('/v2/catalog').set('Authorization', auth).set('X-Broker-API-Version', '2.17');
    // Accepted each time it is sent while it is configured, refused once it is not.
    expect([(await get(basic('a', 'one'))).status, (await get(basic('a', 'one'))).status]).toEqual([
      200, 200,
    ]);
    current = [old, next];
    expect([(await get(basic('a', 'one'))).status, (await get(basic('a', 'two'))).status]).toEqual([
      200, 200,
    ]);
    current = [next];
    expect([(await get(basic('a', 'one'))).status, (await get(basic('a', 'two'))).status]).toEqual([
      401, 200,
    ]);
  });

  test('GIVEN many spellings of one credential WHEN each is sent twice THEN each is accepted both times', async () => {
    const { http } = testApi();
    const token = Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64');
    const spellings = ['Basic', 'basic', 'BASIC', 'bAsIc', 'Basic '].flatMap((scheme) => [
      `${scheme} ${token}`,
      `${scheme}\t${token}`,
    ]);
    for (const authorization of [...spellings, ...spellings]) {
      const res = await http
        .get('/v2/catalog')
        .set('Authorization', authorization)
        .set('X-Broker-API-Version', '2.17');
      expect([authorization, res.status]).toEqual([authorization, 200]);
    }
    const wrong = await http
      .get('/v2/catalog')
      .set('Authorization', basic(USERNAME, `${PASSWORD}x`))
      .set('X-Broker-API-Version', '2.17');
    expect(wrong.status).toBe(401);
  });

  test('GIVEN an empty configured password WHEN a client sends it THEN 401 (fail closed)', async () => {
    const { http } = testApi({ credentials: () => ({ username: 'broker', password: '' }) });
    const res = await http
      .get('/v2/catalog')
      .set('Authorization', basic('broker', ''))
      .set('X-Broker-API-Version', '2.17');
    expect(res.status).toBe(401);
  });

  test('GIVEN a password containing a colon WHEN it is sent THEN it is accepted', async () => {
    const { http } = testApi({ credentials: () => ({ username: 'broker', password: 'a:b:c' }) });
    const res = await http
      .get('/v2/catalog')
      .set('Authorization', basic('broker', 'a:b:c'))
      .set('X-Broker-API-Version', '2.17');
    expect(res.status).toBe(200);
  });
});

describe('X-Broker-API-Version (rows 2–4)', () => {
  const get = (version: string | undefined) => {
    const { http } = testApi();
    const req = http.get('/v2/catalog').set('Authorization', basic(USERNAME, PASSWORD));
    return version === undefined ? req : req.set('X-Broker-API-Version', version);
  };

  test.each([
    [undefined, 'The X-Broker-API-Version header is required; this broker serves 2.12 to 2.17.'],
    ['', 'The X-Broker-API-Version header is required; this broker serves 2.12 to 2.17.'],
    [
      'latest',
      'The X-Broker-API-Version header "latest" is not MAJOR.MINOR; this broker serves 2.12 to 2.17.',
    ],
    ['2', 'The X-Broker-API-Version header "2" is not MAJOR.MINOR; this broker serves 2.12 to 2.17.'],
    [
      '2.11',
      'X-Broker-API-Version 2.11 is not supported; this broker serves 2.12 to 2.17. Send X-Broker-API-Version: 2.17.',
    ],
    [
      '3.0',
      'X-Broker-API-Version 3.0 is not supported; this broker serves 2.12 to 2.17. Send X-Broker-API-Version: 2.17.',
    ],
  ])('GIVEN version %p WHEN GET /v2/catalog THEN 412 PreconditionFailed', async (version, description) => {
    const res = await get(version);
    expect(res.status).toBe(412);
    expect(res.body).toEqual({ error: 'PreconditionFailed', description });
  });

  test.each(['2.12', '2.13', '2.14', '2.15', '2.16', '2.17', '2.18'])(
    'GIVEN version %s WHEN GET /v2/catalog THEN 200',
    async (version) => {
      expect((await get(version)).status).toBe(200);
    },
  );

  test('GIVEN no version WHEN a state-changing route is called THEN 412 and the broker is not called', async () => {
    const { http, broker } = testApi();
    const res = await http
      .put(`${INSTANCE}?accepts_incomplete=true`)
      .set('Authorization', basic(USERNAME, PASSWORD))
      .send(provisionBody());
    expect(res.status).toBe(412);
    expect(broker.calls).toEqual([]);
  });
});

describe('identity headers (rows 5–6)', () => {
  test('GIVEN X-Broker-API-Request-Identity WHEN any request THEN it is echoed, errors included', async () => {
    const { osb, http } = testApi();
    const ok = await osb.get('/v2/catalog').set('X-Broker-API-Request-Identity', 'req-123');
    expect(ok.headers['x-broker-api-request-identity']).toBe('req-123');
    const unauthorized = await http.get('/v2/catalog').set('X-Broker-API-Request-Identity', 'req-456');
    expect([unauthorized.status, unauthorized.headers['x-broker-api-request-identity']]).toEqual([
      401,
      'req-456',
    ]);
    const notFound = await osb.get('/v2/nothing').set('X-Broker-API-Request-Identity', 'req-789');
    expect([notFound.status, notFound.headers['x-broker-api-request-identity']]).toEqual([404, 'req-789']);
  });

  test('GIVEN no request identity WHEN a request THEN the response has none', async () => {
    const { osb } = testApi();
    expect((await osb.get('/v2/catalog')).headers['x-broker-api-request-identity']).toBeUndefined();
  });

  test('GIVEN an originating identity WHEN provisioning THEN the broker gets it decoded, with the version and request identity', async () => {
    const { osb, broker } = testApi();
    const res = await osb
      .put(INSTANCE, provisionBody())
      .set(
        'X-Broker-API-Originating-Identity',
        `kubernetes ${identity({ username: 'alice', uid: '1', groups: ['dev'] })}`,
      )
      .set('X-Broker-API-Request-Identity', 'req-1');
    expect(res.status).toBe(201);
    expect(broker.lastMeta()).toEqual({
      apiVersion: '2.17',
      originatingIdentity: {
        platform: 'kubernetes',
        value: { username: 'alice', uid: '1', groups: ['dev'] },
      },
      requestIdentity: 'req-1',
    });
  });

  test('GIVEN no originating identity WHEN provisioning THEN it works and the meta has none', async () => {
    const { osb, broker } = testApi({ version: '2.13' });
    expect((await osb.put(INSTANCE, provisionBody())).status).toBe(201);
    expect(broker.lastMeta()).toEqual({ apiVersion: '2.13' });
  });

  test.each([
    ['no value part', 'cloudfoundry'],
    ['a value that is not base64', 'cloudfoundry %%%'],
    ['base64 that is not JSON', `cloudfoundry ${Buffer.from('user alice').toString('base64')}`],
    ['JSON that is not an object', `cloudfoundry ${identity(['alice'])}`],
  ])(
    'GIVEN an originating identity with %s WHEN provisioning THEN it works and the meta says the identity was unreadable',
    async (_name, header) => {
      const { osb, broker } = testApi();
      const res = await osb.put(INSTANCE, provisionBody()).set('X-Broker-API-Originating-Identity', header);
      expect(res.status).toBe(201);
      expect(broker.lastMeta()).toEqual({
        apiVersion: '2.17',
        originatingIdentity: { platform: 'cloudfoundry', unreadable: true },
      });
    },
  );
});

describe('routes and methods', () => {
  test('GIVEN an unknown /v2 route WHEN it is called THEN 404 in the OSB error format, as JSON', async () => {
    const { osb } = testApi();
    const res = await osb.get('/v2/service_plans');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ error: 'NotFound', description: 'There is no route GET /v2/service_plans.' });
  });

  test.each([
    ['GET', '/V2/catalog'],
    ['PUT', '/V2/service_instances/i-1'],
    ['GET', '/v2/Service_Instances/i-1/last_operation'],
    ['DELETE', '/v2/service_instances/i-1/SERVICE_BINDINGS/b-1?service_id=s&plan_id=p'],
  ])(
    'GIVEN %s %s (the path in another case) WHEN called with credentials THEN 404 and the broker is not called',
    async (method, path) => {
      const { osb, broker } = testApi();
      const res = await osb[method.toLowerCase() as 'put'](path, provisionBody());
      expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
      expect(broker.calls).toEqual([]);
    },
  );

  test.each([
    ['/%762/catalog', 'a percent-encoded letter'],
    ['/v2/%63atalog', 'a percent-encoded letter'],
    ['/v2%2Fcatalog', 'an encoded slash'],
    ['//v2/catalog', 'a doubled slash'],
  ])(
    'GIVEN %s (%s in a fixed segment) WHEN called THEN 404 (401 without credentials under /v2), never served',
    async (path) => {
      const { http, osb, broker } = testApi();
      const anonymous = await http.get(path).set('X-Broker-API-Version', '2.17');
      expect([anonymous.status]).toEqual([path.startsWith('/v2/') ? 401 : 404]);
      const res = await osb.get(path);
      expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
      expect(broker.calls).toEqual([]);
    },
  );

  test.each([
    ['a trailing slash', 'i-1', '/v2/service_instances/i-1/last_operation/'],
    ['an encoded space', 'a b', '/v2/service_instances/a%20b/last_operation'],
    ['an encoded slash', 'a/b', '/v2/service_instances/a%2Fb/last_operation'],
    ['a non-ASCII id', 'é', '/v2/service_instances/%C3%A9/last_operation'],
    ['a 1000-character id', 'x'.repeat(1000), `/v2/service_instances/${'x'.repeat(1000)}/last_operation`],
    ['an id named like a prototype key', '__proto__', '/v2/service_instances/__proto__/last_operation'],
    ['an encoded prototype key', 'constructor', '/v2/service_instances/%63onstructor/last_operation'],
  ])(
    'GIVEN a path with %s WHEN last_operation is read THEN the route gets the decoded id',
    async (_name, id, path) => {
      const { osb, broker } = testApi();
      broker.lastOperations.set(id, { state: 'succeeded' });
      const res = await osb.get(path);
      expect([res.status, res.body]).toEqual([200, { state: 'succeeded' }]);
      expect(broker.calls.map((c) => c.args[0])).toEqual([id]);
    },
  );

  test.each([
    ['an empty id', '/v2/service_instances//last_operation'],
    ['a malformed percent-encoding', '/v2/service_instances/%E0%A4%A/last_operation'],
  ])('GIVEN %s WHEN last_operation is read THEN 404 and the broker is not called', async (_name, path) => {
    const { osb, broker } = testApi();
    const res = await osb.get(path);
    expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN OPTIONS on a route WHEN called THEN 200 with Allow and no body; HEAD answers like GET without a body', async () => {
    const { osb, http } = testApi();
    const options = await http
      .options('/v2/catalog')
      .set('Authorization', basic(USERNAME, PASSWORD))
      .set('X-Broker-API-Version', '2.17');
    expect([options.status, options.headers.allow, options.text]).toEqual([200, 'HEAD, GET', '']);
    const head = await http
      .head('/v2/catalog')
      .set('Authorization', basic(USERNAME, PASSWORD))
      .set('X-Broker-API-Version', '2.17');
    const get = await osb.get('/v2/catalog');
    expect([head.status, head.headers['content-length'], head.text]).toEqual([
      200,
      get.headers['content-length'],
      undefined,
    ]);
  });

  test('GIVEN an unknown route outside /v2 WHEN it is called without auth THEN 404, not 401', async () => {
    const { http } = testApi();
    const res = await http.get('/metrics');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'NotFound', description: 'There is no route GET /metrics.' });
  });

  test.each([
    ['POST', '/v2/catalog', 'GET, HEAD'],
    ['DELETE', '/v2/catalog', 'GET, HEAD'],
    ['POST', INSTANCE, 'HEAD, GET, PUT, PATCH, DELETE'],
    ['PATCH', `${INSTANCE}/service_bindings/b-1`, 'HEAD, GET, PUT, DELETE'],
    ['PUT', `${INSTANCE}/last_operation`, 'HEAD, GET'],
  ])('GIVEN %s on %s WHEN called THEN 405 with Allow and an OSB error body', async (method, path, allow) => {
    const { osb } = testApi();
    const res = await osb[method.toLowerCase() as 'post'](path, {});
    expect(res.status).toBe(405);
    expect(res.headers.allow?.split(', ').sort()).toEqual(allow.split(', ').sort());
    expect(res.body).toEqual({
      error: 'MethodNotAllowed',
      description: `${method} is not allowed on ${path.split('?')[0]}; allowed: ${res.headers.allow}.`,
    });
  });

  test('GIVEN a method the broker does not implement WHEN called THEN 501 in the OSB error format', async () => {
    const { http } = testApi();
    const res = await http
      .copy('/v2/catalog')
      .set('Authorization', basic(USERNAME, PASSWORD))
      .set('X-Broker-API-Version', '2.17');
    expect(res.status).toBe(501);
    expect(res.body).toEqual({
      error: 'NotImplemented',
      description: 'COPY is not implemented by this broker.',
    });
  });

  test('GIVEN /healthz WHEN called without auth or version THEN 200 {status: ok}', async () => {
    const { http } = testApi();
    const res = await http.get('/healthz');
    expect([res.status, res.body]).toEqual([200, { status: 'ok' }]);
  });
});

describe('failures (rows 9–10, no stack traces)', () => {
  test('GIVEN the broker throws an unknown error WHEN provisioning THEN 500 InternalError, generic text, logged', async () => {
    const { osb, broker, log } = testApi();
    broker.respond.provision = async () => {
      throw new Error('connect ECONNREFUSED 10.0.0.1:7233 at Socket.afterConnect');
    };
    const res = await osb.put(INSTANCE, provisionBody());
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      error: 'InternalError',
      description:
        'The broker failed to process the request; the operator of this broker can find the cause in its logs.',
    });
    expect(res.text).not.toMatch(/ECONNREFUSED|\.ts:|\.js:|at /);
    expect(log.errors()).toEqual([
      {
        level: 'error',
        message: 'request failed',
        fields: expect.objectContaining({
          method: 'PUT',
          path: '/v2/service_instances/i-1',
          status: 500,
          error: 'connect ECONNREFUSED 10.0.0.1:7233 at Socket.afterConnect',
          stack: expect.stringContaining('Error: connect ECONNREFUSED'),
        }),
      },
    ]);
  });

  test('GIVEN the broker throws a 503 with a retry time WHEN provisioning THEN 503 with Retry-After', async () => {
    const { osb, broker } = testApi();
    broker.respond.provision = async () => {
      throw unavailable('Try later.', 15);
    };
    const res = await osb.put(INSTANCE, provisionBody());
    expect([res.status, res.headers['retry-after'], res.body]).toEqual([
      503,
      '15',
      { error: 'ServiceUnavailable', description: 'Try later.' },
    ]);
  });

  test('GIVEN the broker throws a non-Error value WHEN provisioning THEN 500 and the value is logged', async () => {
    const { osb, broker, log } = testApi();
    broker.respond.provision = () => Promise.reject('boom');
    const res = await osb.put(INSTANCE, provisionBody());
    expect([res.status, res.body.error]).toEqual([500, 'InternalError']);
    expect(log.errors()[0]?.fields?.error).toBe('boom');
  });

  test('GIVEN the broker throws an OsbError WHEN provisioning THEN its status and body, not logged as a failure', async () => {
    const { osb, broker, log } = testApi();
    broker.respond.provision = async () => {
      throw new OsbError(
        409,
        'An instance with this id already exists with different attributes.',
        'Conflict',
      );
    };
    const res = await osb.put(INSTANCE, provisionBody());
    expect([res.status, res.body]).toEqual([
      409,
      {
        error: 'Conflict',
        description: 'An instance with this id already exists with different attributes.',
      },
    ]);
    expect(log.errors()).toEqual([]);
  });

  test('GIVEN an OsbError from another copy of the module (same name and shape) WHEN thrown THEN it is still mapped', async () => {
    const { osb, broker } = testApi();
    const foreign = Object.assign(new Error('x'), {
      name: 'OsbError',
      status: 422,
      description: 'Another operation for this service instance is in progress.',
      toBody: () => ({
        error: 'ConcurrencyError',
        description: 'Another operation for this service instance is in progress.',
      }),
    });
    broker.respond.update = async () => {
      throw foreign;
    };
    broker.instances.set('i-1', { instanceId: 'i-1', serviceId: SERVICE_ID, planId: PLANS.sync });
    const res = await osb.patch(INSTANCE, { service_id: SERVICE_ID, parameters: {} });
    expect([res.status, res.body.error]).toEqual([422, 'ConcurrencyError']);
  });

  test('GIVEN the broker throws a 5xx OsbError WHEN provisioning THEN its description is kept and it is logged', async () => {
    const { osb, broker, log } = testApi();
    broker.respond.provision = async () => {
      throw new OsbError(504, 'The provision did not finish within 30 s and was rolled back.', 'Timeout');
    };
    const res = await osb.put(INSTANCE, provisionBody());
    expect([res.status, res.body]).toEqual([
      504,
      { error: 'Timeout', description: 'The provision did not finish within 30 s and was rolled back.' },
    ]);
    expect(log.errors()).toHaveLength(1);
  });

  test('GIVEN a request WHEN it is answered THEN one access log line is written', async () => {
    const { osb, log } = testApi();
    await osb.get('/v2/catalog').set('X-Broker-API-Request-Identity', 'req-9');
    expect(log.entries.filter((e) => e.level === 'info')).toEqual([
      {
        level: 'info',
        message: 'osb request',
        fields: {
          method: 'GET',
          path: '/v2/catalog',
          status: 200,
          durationMs: expect.any(Number),
          requestIdentity: 'req-9',
        },
      },
    ]);
  });

  test('GIVEN a binding request that is accepted WHEN answered THEN its access log line names the instance, the binding and the operation', async () => {
    const { osb, broker, log } = testApi();
    broker.respond.bind = async () => ({ kind: 'accepted', operation: 'bind:run-1' });
    const res = await osb
      .put('/v2/service_instances/i-1/service_bindings/b-1?accepts_incomplete=true', {
        service_id: SERVICE_ID,
        plan_id: PLANS.asyncBinding,
      })
      .set('X-Broker-API-Request-Identity', 'req-1');
    expect(res.status).toBe(202);
    expect(log.entries).toEqual([
      {
        level: 'info',
        message: 'osb request',
        fields: {
          method: 'PUT',
          path: '/v2/service_instances/i-1/service_bindings/b-1',
          status: 202,
          durationMs: expect.any(Number),
          requestIdentity: 'req-1',
          instanceId: 'i-1',
          bindingId: 'b-1',
          operation: 'bind:run-1',
        },
      },
    ]);
  });

  test.each([
    ['a method no route has', 'SEARCH', '/v2/catalog', 501, 'NotImplemented'],
    ['a method the route does not take', 'POST', '/v2/catalog', 405, 'MethodNotAllowed'],
    ['an unknown route', 'GET', '/v2/no-such-route', 404, 'NotFound'],
    ['no credentials', 'GET', '/v2/catalog', 401, 'Unauthorized'],
  ])(
    "GIVEN %s WHEN answered THEN only the access log line, at info, with the error's code and no stack: a client's mistake is not the broker's failure",
    async (_name, method, path, status, code) => {
      const { http, osb, log } = testApi();
      const withAuth = status !== 401;
      const request = withAuth
        ? method === 'SEARCH'
          ? http
              .search(path)
              .set('Authorization', basic(USERNAME, PASSWORD))
              .set('X-Broker-API-Version', '2.17')
          : method === 'POST'
            ? osb.post(path, {})
            : osb.get(path)
        : http.get(path);
      const res = await request;
      expect(res.status).toBe(status);
      expect(log.entries).toEqual([
        {
          level: 'info',
          message: 'osb request',
          fields: {
            method,
            path,
            status,
            durationMs: expect.any(Number),
            ...(code ? { error: code } : {}),
          },
        },
      ]);
      expect(JSON.stringify(log.entries)).not.toMatch(/stack|\.ts:|\.js:/);
    },
  );
});

describe('ids an operation is started for', () => {
  const long = 'x'.repeat(256);
  const accented = 'é'.repeat(128);
  test.each([
    ['a provision', 'put', `/v2/service_instances/${long}?accepts_incomplete=true`, 'instance_id'],
    ['an update', 'patch', `/v2/service_instances/${long}?accepts_incomplete=true`, 'instance_id'],
    ['a deprovision', 'delete', `/v2/service_instances/${long}?accepts_incomplete=true`, 'instance_id'],
    ['a bind', 'put', `/v2/service_instances/i-1/service_bindings/${long}`, 'binding_id'],
    [
      'a bind of a long instance id',
      'put',
      `/v2/service_instances/${long}/service_bindings/b-1`,
      'instance_id',
    ],
    [
      'an unbind',
      'delete',
      `/v2/service_instances/i-1/service_bindings/${encodeURIComponent(accented)}`,
      'binding_id',
    ],
  ])(
    'GIVEN %s with an id over 255 bytes of UTF-8 WHEN it is asked THEN 400 naming the id, and the broker is not called',
    async (_name, method, path, name) => {
      const { osb, broker } = testApi();
      const query = `service_id=${SERVICE_ID}&plan_id=${PLANS.sync}`;
      const res = await osb[method as 'put'](`${path}${path.includes('?') ? '&' : '?'}${query}`).send(
        provisionBody(PLANS.sync),
      );
      expect([res.status, res.body]).toEqual([
        400,
        {
          error: 'BadRequest',
          description: `${name} is longer than the broker accepts (255 bytes of UTF-8).`,
        },
      ]);
      expect(broker.calls).toEqual([]);
    },
  );

  test('GIVEN an id of 255 bytes WHEN it is provisioned THEN the broker is called', async () => {
    const { osb, broker } = testApi();
    const res = await osb
      .put(`/v2/service_instances/${'x'.repeat(255)}?accepts_incomplete=true`)
      .send(provisionBody(PLANS.sync));
    expect(res.status).toBeLessThan(300);
    expect(broker.calls.map((c) => c.method)).toEqual(['provision']);
  });
});
