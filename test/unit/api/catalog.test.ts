/** GET /v2/catalog over the example SFService and SFPlan (checklist rows 12–16 and 20 as served). */
import { MemoryCatalog, examplePlan, exampleService, planVariant } from '../../fixtures/catalog/index.js';
import { PLAN_ID, SERVICE_ID, testApi } from './support.js';

/** The catalog the example resources must produce, field by field. */
const EXAMPLE_CATALOG = {
  services: [
    {
      id: SERVICE_ID,
      name: 'postgresql',
      description:
        'Postgresql for internal development, testing, and documentation purposes of the Service Fabrik',
      tags: ['postgresql'],
      requires: [],
      bindable: true,
      instances_retrievable: true,
      bindings_retrievable: true,
      metadata: {
        displayName: 'PostgreSQL',
        longDescription:
          'Postgresql for internal development, testing, and documentation purposes of the Service Fabrik',
        providerDisplayName: 'SAP SE',
        documentationUrl: 'https://sap.com/',
        supportUrl: 'https://sap.com/',
      },
      dashboard_client: {
        id: 'postgresql-dashboard-client-id',
        secret: 'postgresql-dashboard-client-secret',
        redirect_uri: 'https://sap.com/',
      },
      plan_updateable: true,
      plans: [
        {
          id: PLAN_ID,
          name: 'v9.6-xxsmall',
          description:
            'Postgresql service of size 1 CPU / 2GB RAM / 20GB Disk Storage running inside a k8s container ',
          metadata: {
            'service-inventory-key': 'SERVICE-TBD',
            costs: [{ amount: { usd: 0.0 }, unit: 'MONTHLY' }],
            bullets: ['1 CPU', '2 GB Memory', '20 GB Disk'],
          },
          free: true,
          bindable: true,
          plan_updateable: true,
          schemas: {
            service_instance: {
              create: {
                parameters: {
                  $schema: 'http://json-schema.org/draft-06/schema#',
                  title: 'createServiceInstance',
                  type: 'object',
                  additionalProperties: false,
                  properties: { foo: { type: 'string', description: 'some description for foo field' } },
                  required: ['foo'],
                },
              },
            },
          },
        },
      ],
    },
  ],
};

describe('GET /v2/catalog', () => {
  test('GIVEN the example SFService and SFPlan WHEN the catalog is fetched THEN exactly the OSB catalog (row 12)', async () => {
    const { osb, broker } = testApi({ catalog: new MemoryCatalog() });
    const res = await osb.get('/v2/catalog');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual(EXAMPLE_CATALOG);
    expect(JSON.stringify(res.body)).not.toMatch(/templates|manager|context|serviceId|planUpdatable/);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN an empty catalog WHEN fetched THEN 200 {services: []}', async () => {
    const { osb } = testApi({ catalog: new MemoryCatalog([], []) });
    expect((await osb.get('/v2/catalog')).body).toEqual({ services: [] });
  });

  test('GIVEN the catalog changes WHEN fetched again THEN the new plans show, ids unchanged (row 15)', async () => {
    const catalog = new MemoryCatalog();
    const { osb } = testApi({ catalog });
    const before = (await osb.get('/v2/catalog')).body;
    catalog.planList = [...catalog.planList, planVariant('plan-a', 'a-small')];
    const after = (await osb.get('/v2/catalog')).body;
    expect(after.services[0].plans.map((p: { id: string; name: string }) => [p.name, p.id])).toEqual([
      ['a-small', 'plan-a'],
      ['v9.6-xxsmall', PLAN_ID],
    ]);
    expect(after.services[0].id).toBe(before.services[0].id);
  });

  test('GIVEN a plan that breaks a catalog rule WHEN fetched THEN it is left out and logged once per change, and a request naming it is still served (rows 17–18)', async () => {
    const broken = planVariant('plan-b', 'b-small', { maintenance_info: { version: 'v2' } });
    const catalog = new MemoryCatalog(undefined, [examplePlan(), broken]);
    const { osb, log, broker } = testApi({ catalog });
    for (let i = 0; i < 2; i++) {
      const plans = (await osb.get('/v2/catalog')).body.services[0].plans as { id: string }[];
      expect(plans.map((p) => p.id)).toEqual([PLAN_ID]);
    }
    const warned = [
      {
        level: 'warn',
        message: 'left out of the catalog',
        fields: {
          kind: 'SFPlan',
          name: 'plan-b',
          reason: 'maintenance_info.version "v2" is not a SemVer 2.0 version',
        },
      },
    ];
    expect(log.entries.filter((e) => e.level === 'warn')).toEqual(warned);
    // a change of the catalog: said again
    catalog.planList = [examplePlan(), { ...broken, metadata: { ...broken.metadata, resourceVersion: '2' } }];
    await osb.get('/v2/catalog');
    expect(log.entries.filter((e) => e.level === 'warn')).toEqual([...warned, ...warned]);
    // platforms that knew the plan before still reach it
    const res = await osb.put('/v2/service_instances/i-1?accepts_incomplete=true', {
      service_id: SERVICE_ID,
      plan_id: 'plan-b',
      organization_guid: 'o',
      space_guid: 's',
      parameters: { foo: 'bar' },
    });
    expect(res.status).toBe(202);
    expect(broker.calls.map((c) => c.method)).toContain('provision');
  });

  test('GIVEN plans with bindingRotatable and bindingLifetime WHEN fetched THEN binding_rotatable for the valid one, the invalid lifetime left out with its reason', async () => {
    const catalog = new MemoryCatalog(undefined, [
      examplePlan(),
      planVariant('plan-r', 'rotating', {
        bindingRotatable: true,
        bindingLifetime: { expiresAfter: '30d', renewBefore: '7d' },
      }),
      planVariant('plan-x', 'x-broken', { bindingLifetime: { expiresAfter: '1h', renewBefore: '2h' } }),
    ]);
    const { osb, log } = testApi({ catalog });
    const plans = (await osb.get('/v2/catalog')).body.services[0].plans as {
      id: string;
      binding_rotatable?: boolean;
    }[];
    expect(plans.map((p) => [p.id, p.binding_rotatable])).toEqual([
      ['plan-r', true],
      [PLAN_ID, undefined],
    ]);
    expect(log.entries.filter((e) => e.level === 'warn').map((e) => e.fields?.reason)).toEqual([
      'bindingLifetime.renewBefore (2h) must be shorter than expiresAfter (1h): the platform renews that long before the credentials expire',
    ]);
  });

  test('GIVEN a plan that names a new service WHEN fetched THEN the service shows once its plan exists', async () => {
    const catalog = new MemoryCatalog(
      [
        exampleService(),
        { ...exampleService(), spec: { ...exampleService().spec, id: 's-2', name: 'another' } },
      ],
      [examplePlan()],
    );
    const { osb } = testApi({ catalog });
    expect((await osb.get('/v2/catalog')).body.services.map((s: { name: string }) => s.name)).toEqual([
      'postgresql',
    ]);
  });
});
