/**
 * The routes Service Fabrik's broker was registered with: `/<platform>/v2` and
 * `/<platform>/region/<region>/v2` beside `/v2`; authentication by a client certificate an
 * ingress verified; the version and catalog flags of GET instance and GET binding; and
 * `send_binding_metadata`.
 */
import type { InstanceView } from '../../../src/osb/service-broker.js';
import { subjectRdns } from '../../../src/api/client-subject.js';
import { MemoryCatalog, planVariant } from '../../fixtures/catalog/index.js';
import {
  PASSWORD,
  PLANS,
  SERVICE_ID,
  USERNAME,
  basic,
  provisionBody,
  testApi,
  testCatalog,
} from './support.js';

/** The test catalog, with the sync plan offered on cf only. */
function cfOnlyCatalog(): MemoryCatalog {
  const catalog = testCatalog();
  catalog.planList = catalog.planList.map((p) =>
    p.spec.id === PLANS.sync
      ? planVariant(PLANS.sync, 'sync', { ...p.spec, schemas: undefined, supported_platform: ['cf'] })
      : p,
  );
  return catalog;
}

const planIds = (body: { services: { plans: { id: string }[] }[] }) =>
  body.services.flatMap((s) => s.plans.map((p) => p.id));

describe('platform prefixes', () => {
  test('GIVEN a plan offered on cf only WHEN each platform reads the catalog THEN only cf and /v2 show it', async () => {
    const { osb } = testApi({ catalog: cfOnlyCatalog() });
    for (const [path, shown] of [
      ['/v2/catalog', true],
      ['/cf/v2/catalog', true],
      ['/cf/region/eu10/v2/catalog', true],
      ['/k8s/v2/catalog', false],
      ['/sm/region/eu10/v2/catalog', false],
    ] as const) {
      const res = await osb.get(path);
      expect([path, res.status, planIds(res.body).includes(PLANS.sync)]).toEqual([path, 200, shown]);
      expect(planIds(res.body)).toContain(PLANS.example);
    }
  });

  test('GIVEN a plan offered on cf only WHEN provisioned on k8s THEN 400 and the broker is not called', async () => {
    const { osb, broker } = testApi({ catalog: cfOnlyCatalog() });
    const res = await osb.put('/k8s/v2/service_instances/i-1', provisionBody(PLANS.sync));
    expect([res.status, res.body]).toEqual([
      400,
      { error: 'BadRequest', description: 'Plan sync is not offered on platform k8s; it is offered on cf.' },
    ]);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN a provision and a bind on /cf/region/eu10/v2 THEN the broker gets the platform and the region', async () => {
    const { osb, broker } = testApi({ catalog: cfOnlyCatalog() });
    const provisioned = await osb.put('/cf/region/eu10/v2/service_instances/i-1', provisionBody(PLANS.sync));
    expect([provisioned.status, provisioned.body]).toEqual([201, {}]);
    expect(broker.requests('provision')).toEqual([
      expect.objectContaining({ instanceId: 'i-1', platformRoute: { platform: 'cf', region: 'eu10' } }),
    ]);
    const bind = await osb.put('/cf/region/eu10/v2/service_instances/i-1/service_bindings/b-1', {
      service_id: SERVICE_ID,
      plan_id: PLANS.sync,
    });
    expect(bind.status).toBe(201);
    expect(broker.requests('bind')).toEqual([
      expect.objectContaining({ bindingId: 'b-1', platformRoute: { platform: 'cf', region: 'eu10' } }),
    ]);
    await osb.put('/v2/service_instances/i-2', provisionBody(PLANS.sync));
    expect(broker.requests('provision')[1]).not.toHaveProperty('platformRoute');
  });

  test('GIVEN a region that is no label value THEN 400', async () => {
    const { osb, broker } = testApi();
    const res = await osb.put('/cf/region/-eu/v2/service_instances/i-1', provisionBody(PLANS.sync));
    expect([res.status, res.body.error]).toEqual([400, 'BadRequest']);
    expect(broker.calls).toEqual([]);
  });

  test.each(['/xx/v2/catalog', '/cfx/v2/catalog', '/cf/region/v2/catalog', '/cf/regions/eu10/v2/catalog'])(
    'GIVEN the unknown prefix of %s THEN 404 in the OSB error format',
    async (path) => {
      const res = await testApi().osb.get(path);
      expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
    },
  );

  test.each(['/cf/v2/catalog', '/k8s/region/eu10/v2/service_instances/i-1', '/CF/v2/catalog'])(
    'GIVEN %s without credentials THEN 401 (it is an OSB path)',
    async (path) => {
      const res = await testApi().http.get(path).set('X-Broker-API-Version', '2.17');
      expect([res.status, res.body.error]).toEqual([401, 'Unauthorized']);
    },
  );

  test('GIVEN a prefixed path without the version header THEN 412', async () => {
    const res = await testApi().http.get('/sm/v2/catalog').set('Authorization', basic(USERNAME, PASSWORD));
    expect([res.status, res.body.error]).toEqual([412, 'PreconditionFailed']);
  });

  test('GIVEN a wrong method on a prefixed path THEN 405 with Allow, and the request identity is echoed', async () => {
    const res = await testApi()
      .osb.delete('/cf/region/eu10/v2/catalog')
      .set('X-Broker-API-Request-Identity', 'req-9');
    expect([
      res.status,
      res.headers.allow,
      res.headers['x-broker-api-request-identity'],
      res.body.error,
    ]).toEqual([405, 'HEAD, GET', 'req-9', 'MethodNotAllowed']);
  });
});

describe('authentication by a client certificate an ingress verified', () => {
  const clientSubject = subjectRdns('/C=DE/O=Example/OU=Platform/CN=sm')!;
  const withCertificate = (subject?: string) => {
    const t = testApi({ clientSubject }).http.get('/sm/v2/catalog').set('X-Broker-API-Version', '2.17');
    t.set('ssl-client-cert', '-----BEGIN%20CERTIFICATE-----%0A...');
    return subject === undefined ? t : t.set('ssl-client-subject-dn', subject);
  };

  test('GIVEN the subject in another order THEN 200', async () => {
    expect((await withCertificate('CN=sm,OU=Platform,O=Example,C=DE')).status).toBe(200);
  });

  test.each<[string, string | undefined, string]>([
    [
      'another subject',
      'CN=other,OU=Platform,O=Example,C=DE',
      "The client certificate's subject is not accepted by this broker.",
    ],
    [
      'a subject with an RDN more',
      'CN=sm,OU=Platform,OU=x,O=Example,C=DE',
      "The client certificate's subject is not accepted by this broker.",
    ],
    ['no subject header', undefined, "The client certificate's subject is missing."],
  ])('GIVEN %s THEN 401 with an OSB error body, and no challenge', async (_name, subject, description) => {
    const res = await withCertificate(subject);
    expect([res.status, res.body]).toEqual([401, { error: 'Unauthorized', description }]);
    // No header a client sends answers a certificate: no Basic challenge (as Service Fabrik's broker).
    expect(res.headers['www-authenticate']).toBeUndefined();
  });

  test('GIVEN no certificate header, even with the Basic credentials THEN 401', async () => {
    const res = await testApi({ clientSubject })
      .http.get('/v2/catalog')
      .set('X-Broker-API-Version', '2.17')
      .set('Authorization', basic(USERNAME, PASSWORD))
      .set('ssl-client-subject-dn', 'CN=sm,OU=Platform,O=Example,C=DE');
    expect([res.status, res.body]).toEqual([
      401,
      { error: 'Unauthorized', description: 'A client certificate is required to access this broker.' },
    ]);
    expect(res.headers['www-authenticate']).toBeUndefined();
  });

  test('GIVEN client certificates for the OSB API WHEN the admin API is called without credentials THEN 401 with its Basic challenge', async () => {
    const res = await testApi({ clientSubject }).http.get('/admin/instances');
    expect([res.status, res.headers['www-authenticate']]).toEqual([
      401,
      'Basic realm="interoperator", charset="UTF-8"',
    ]);
  });
});

describe('GET instance and GET binding', () => {
  const instance: InstanceView = {
    instanceId: 'i-1',
    serviceId: SERVICE_ID,
    planId: PLANS.sync,
    operation: { type: 'provision', state: 'succeeded' },
  };

  test.each(['2.12', '2.13'])(
    'GIVEN version %s THEN 412 with an error body, and the broker is not asked',
    async (version) => {
      const { osb, broker } = testApi({ version });
      broker.instances.set('i-1', instance);
      const res = await osb.get('/v2/service_instances/i-1');
      expect([res.status, res.body]).toEqual([
        412,
        {
          error: 'PreconditionFailed',
          description: `Fetching a service instance needs X-Broker-API-Version 2.14 or later; the request sent ${version}.`,
        },
      ]);
      const binding = await osb.get('/cf/v2/service_instances/i-1/service_bindings/b-1');
      expect([binding.status, binding.body.description]).toEqual([
        412,
        `Fetching a service binding needs X-Broker-API-Version 2.14 or later; the request sent ${version}.`,
      ]);
      expect(broker.calls).toEqual([]);
    },
  );

  test('GIVEN version 2.14 THEN 200', async () => {
    const { osb, broker } = testApi({ version: '2.14' });
    broker.instances.set('i-1', instance);
    expect((await osb.get('/v2/service_instances/i-1')).status).toBe(200);
  });

  test('GIVEN a service that does not declare instances_retrievable nor bindings_retrievable THEN 400 for an existing one, 404 for an unknown one', async () => {
    const catalog = testCatalog();
    catalog.serviceList = catalog.serviceList.map((s) =>
      s.spec.id === SERVICE_ID
        ? { ...s, spec: { ...s.spec, instancesRetrievable: false, bindingsRetrievable: undefined } }
        : s,
    );
    const { osb, broker } = testApi({ catalog });
    broker.instances.set('i-1', instance);
    broker.bindings.set('i-1/b-1', {
      bindingId: 'b-1',
      instanceId: 'i-1',
      serviceId: SERVICE_ID,
      planId: PLANS.sync,
      operation: { type: 'bind', state: 'succeeded' },
      response: { credentials: { password: 'p' } },
    });
    const res = await osb.get('/v2/service_instances/i-1');
    expect([res.status, res.body]).toEqual([
      400,
      {
        error: 'BadRequest',
        description:
          'Service postgresql does not support fetching its instances (instances_retrievable is not true).',
      },
    ]);
    const binding = await osb.get('/v2/service_instances/i-1/service_bindings/b-1');
    expect([binding.status, binding.body]).toEqual([
      400,
      {
        error: 'BadRequest',
        description:
          'Service postgresql does not support fetching its bindings (bindings_retrievable is not true).',
      },
    ]);
    expect((await osb.get('/v2/service_instances/i-unknown')).status).toBe(404);
  });
});

describe('send_binding_metadata', () => {
  const metadata = { expires_at: '2030-01-01T00:00:00.000Z', renew_before: '2029-12-01T00:00:00.000Z' };
  const bound = (sendBindingMetadata?: boolean) => {
    const api = testApi(sendBindingMetadata === undefined ? {} : { sendBindingMetadata });
    api.broker.respond.bind = async () => ({
      kind: 'done',
      created: true,
      response: { credentials: { password: 'p' }, metadata },
    });
    return api.osb.put('/cf/v2/service_instances/i-1/service_bindings/b-1', {
      service_id: SERVICE_ID,
      plan_id: PLANS.sync,
    });
  };

  test('GIVEN the default THEN the bind answer carries the metadata', async () => {
    expect((await bound()).body).toEqual({ credentials: { password: 'p' }, metadata });
  });

  test('GIVEN sendBindingMetadata false THEN the bind answer leaves it out', async () => {
    const res = await bound(false);
    expect([res.status, res.body]).toEqual([201, { credentials: { password: 'p' } }]);
  });
});
