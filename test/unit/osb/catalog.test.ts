/** The OSB catalog from SFService/SFPlan resources, and the lookup by id. Pure. */
import { catalogLookup, checkCatalog, osbCatalog, osbPlan, osbService } from '../../../src/osb/catalog.js';
import type { SFPlan, SFService } from '../../../src/resources/types.js';

const service = (id: string, name: string, spec: Partial<SFService['spec']> = {}): SFService => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFService',
  metadata: { name: id },
  spec: { id, name, description: `${name} service`, bindable: true, ...spec },
});
const plan = (id: string, name: string, serviceId: string, spec: Partial<SFPlan['spec']> = {}): SFPlan => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: { name: id },
  spec: { id, name, description: `${name} plan`, serviceId, templates: [], ...spec },
});

describe('osbCatalog', () => {
  test('GIVEN services and plans in any order WHEN mapped THEN services by name then id, plans grouped and sorted the same way', () => {
    const services = [service('s-b', 'beta'), service('s-a2', 'alpha'), service('s-a1', 'alpha')];
    const plans = [
      plan('p-3', 'large', 's-b'),
      plan('p-2', 'Small', 's-a1'),
      plan('p-1', 'medium', 's-a1'),
      plan('p-4', 'only', 's-a2'),
      plan('p-5', 'small', 's-b'),
    ];
    const names = (catalog: ReturnType<typeof osbCatalog>) =>
      catalog.services.map((s) => [s.id, s.plans.map((p) => p.id)]);
    expect(names(osbCatalog(services, plans))).toEqual([
      ['s-a1', ['p-2', 'p-1']], // code-point order: 'Small' < 'medium'
      ['s-a2', ['p-4']],
      ['s-b', ['p-3', 'p-5']],
    ]);
    expect(osbCatalog([...services].reverse(), [...plans].reverse())).toEqual(osbCatalog(services, plans));
  });

  test('GIVEN a service without plans and a plan of no service WHEN mapped THEN both are left out', () => {
    const catalog = osbCatalog(
      [service('s-1', 'empty'), service('s-2', 'full')],
      [plan('p-1', 'a', 's-2'), plan('p-x', 'orphan', 's-9')],
    );
    expect(catalog.services.map((s) => [s.id, s.plans.map((p) => p.id)])).toEqual([['s-2', ['p-1']]]);
  });

  test('GIVEN the inputs WHEN mapped THEN they are not reordered in place', () => {
    const plans = [plan('p-2', 'b', 's-1'), plan('p-1', 'a', 's-1')];
    osbCatalog([service('s-1', 'x')], plans);
    expect(plans.map((p) => p.spec.id)).toEqual(['p-2', 'p-1']);
  });
});

describe('osbService and osbPlan', () => {
  test('GIVEN every field WHEN mapped THEN the OSB names, in OSB order', () => {
    const s = service('s-1', 'full', {
      tags: ['a'],
      requires: ['volume_mount'],
      instancesRetrievable: true,
      bindingsRetrievable: false,
      allowContextUpdates: true,
      metadata: { displayName: 'Full' },
      dashboardClient: { id: 'c', secret: 's', redirectURI: 'https://r' },
      planUpdatable: false,
      context: { internal: true },
    });
    const p = plan('p-1', 'small', 's-1', {
      metadata: { bullets: ['1 CPU'] },
      free: false,
      bindable: true,
      planUpdatable: true,
      schemas: { service_instance: { create: { parameters: { type: 'object' } } } },
      maintenance_info: { version: '1.2.3', description: 'PostgreSQL 16' },
      maximum_polling_duration: 600,
      manager: { async: true },
      update_predecessors: ['p-0'],
      context: { cpu: 1 },
    });
    const mapped = osbService(s, [p]);
    expect(mapped).toEqual({
      id: 's-1',
      name: 'full',
      description: 'full service',
      tags: ['a'],
      requires: ['volume_mount'],
      bindable: true,
      instances_retrievable: true,
      bindings_retrievable: false,
      allow_context_updates: true,
      metadata: { displayName: 'Full' },
      dashboard_client: { id: 'c', secret: 's', redirect_uri: 'https://r' },
      plan_updateable: false,
      plans: [
        {
          id: 'p-1',
          name: 'small',
          description: 'small plan',
          metadata: { bullets: ['1 CPU'] },
          free: false,
          bindable: true,
          plan_updateable: true,
          schemas: {
            service_instance: {
              create: { parameters: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' } },
            },
          },
          maintenance_info: { version: '1.2.3', description: 'PostgreSQL 16' },
          maximum_polling_duration: 600,
        },
      ],
    });
    expect(Object.keys(mapped)).toEqual([
      'id',
      'name',
      'description',
      'tags',
      'requires',
      'bindable',
      'instances_retrievable',
      'bindings_retrievable',
      'allow_context_updates',
      'metadata',
      'dashboard_client',
      'plan_updateable',
      'plans',
    ]);
  });

  test('GIVEN only the required fields WHEN mapped THEN nothing undefined appears', () => {
    expect(osbPlan(plan('p-1', 'a', 's-1'))).toEqual({ id: 'p-1', name: 'a', description: 'a plan' });
    expect(Object.keys(osbService(service('s-1', 'x'), []))).toEqual([
      'id',
      'name',
      'description',
      'bindable',
      'plans',
    ]);
  });

  test.each([
    ['a partial dashboard client', { id: 'c' }, { id: 'c' }],
    ['an empty dashboard client', {}, undefined],
  ])('GIVEN %s WHEN mapped THEN dashboard_client is %p', (_n, client, expected) => {
    expect(osbService(service('s-1', 'x', { dashboardClient: client }), []).dashboard_client).toEqual(
      expected,
    );
  });
});

describe('osbPlan schemas', () => {
  test('GIVEN a schema that declares its draft WHEN mapped THEN it is served as written; one that does not gets draft-04, which validates it', () => {
    const declared = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' };
    const p = plan('p-1', 'small', 's-1', {
      schemas: {
        service_instance: { create: { parameters: declared }, update: {} },
        service_binding: { create: { parameters: { type: 'object' } } },
      },
    });
    expect(osbPlan(p).schemas).toEqual({
      service_instance: { create: { parameters: declared }, update: {} },
      service_binding: {
        create: { parameters: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' } },
      },
    });
    expect(p.spec.schemas?.service_binding?.create?.parameters).toEqual({ type: 'object' });
  });
});

describe('checkCatalog (checklist rows 13–19)', () => {
  const left = (result: ReturnType<typeof checkCatalog>) =>
    result.problems.map((p) => `${p.kind} ${p.name}: ${p.reason}`);
  const ids = (result: ReturnType<typeof checkCatalog>) => [
    result.services.map((s) => s.spec.id),
    result.plans.map((p) => p.spec.id),
  ];

  test('GIVEN a valid catalog WHEN checked THEN everything stays and nothing is said', () => {
    const result = checkCatalog(
      [service('s-1', 'one', { requires: ['volume_mount'] })],
      [plan('p-1', 'small', 's-1', { maintenance_info: { version: '1.2.3-rc.1+build.5' } })],
    );
    expect(ids(result)).toEqual([['s-1'], ['p-1']]);
    expect(result.problems).toEqual([]);
  });

  test('GIVEN a plan and a service being deleted WHEN checked THEN they are no longer offered, silently', () => {
    const deleting = <T extends { metadata: object }>(o: T): T => ({
      ...o,
      metadata: { ...o.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
    });
    const result = checkCatalog(
      [service('s-1', 'one'), deleting(service('s-2', 'two'))],
      [plan('p-1', 'a', 's-1'), deleting(plan('p-2', 'b', 's-1')), plan('p-3', 'c', 's-2')],
    );
    expect(ids(result)).toEqual([['s-1'], ['p-1']]);
    expect(left(result)).toEqual(['SFPlan p-3: its service s-2 is not in the catalog']);
  });

  test.each([
    ['an empty description', { description: ' ' }, 'it needs a non-empty id, name and description'],
    ['an empty name', { name: '' }, 'it needs a non-empty id, name and description'],
    ['a bindable that is not a boolean', { bindable: 'yes' }, 'bindable must be true or false'],
    [
      'an unknown requires',
      { requires: ['route_forwarding', 'gpu'] },
      'requires "gpu", which is not one of syslog_drain, route_forwarding, volume_mount',
    ],
  ])('GIVEN a service with %s WHEN checked THEN it and its plans are left out', (_, spec, reason) => {
    const result = checkCatalog(
      [service('s-1', 'one', spec as never), service('s-2', 'two')],
      [plan('p-1', 'a', 's-1'), plan('p-2', 'b', 's-2')],
    );
    expect(ids(result)).toEqual([['s-2'], ['p-2']]);
    expect(left(result)).toEqual([
      `SFService s-1: ${reason}`,
      'SFPlan p-1: its service s-1 is not in the catalog',
    ]);
  });

  const bigSchema = {
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string' }])),
  };
  test.each([
    ['an empty id', { id: '' }, 'it needs a non-empty id, name and description'],
    [
      'a maintenance_info.version that is not SemVer',
      { maintenance_info: { version: '1.2' } },
      'maintenance_info.version "1.2" is not a SemVer 2.0 version',
    ],
    [
      'a schema over 64 kB',
      { schemas: { service_binding: { create: { parameters: bigSchema } } } },
      `the service_binding.create parameter schema has ${Buffer.byteLength(JSON.stringify(bigSchema))} bytes; at most 65536 are allowed`,
    ],
    [
      'a schema that refers outside itself',
      {
        schemas: {
          service_instance: {
            update: {
              parameters: { properties: { a: { $ref: '#/definitions/x' }, b: { $ref: 'https://x/s.json' } } },
            },
          },
        },
      },
      'the service_instance.update parameter schema refers outside itself ($ref "https://x/s.json")',
    ],
    [
      'a bindingLifetime with a malformed expiresAfter',
      { bindingLifetime: { expiresAfter: '30 days' } },
      'bindingLifetime.expiresAfter "30 days" is not a duration such as 720h, 30d or 1h30m',
    ],
    [
      'a bindingLifetime whose renewBefore is longer than its expiresAfter',
      { bindingLifetime: { expiresAfter: '24h', renewBefore: '2d' } },
      'bindingLifetime.renewBefore (2d) must be shorter than expiresAfter (24h): the platform renews that long before the credentials expire',
    ],
    [
      'a schema that does not compile',
      { schemas: { service_instance: { create: { parameters: { type: 'thing' } } } } },
      expect.stringMatching(
        /^the service_instance\.create parameter schema cannot be used: schema is invalid/,
      ),
    ],
    [
      'a schema of an unknown draft',
      { schemas: { service_instance: { create: { parameters: { $schema: 'https://example.org/mine' } } } } },
      expect.stringMatching(
        /^the service_instance\.create parameter schema cannot be used: \$schema "https:\/\/example.org\/mine" is not supported/,
      ),
    ],
    [
      'a helm template for its status',
      { templates: [{ action: 'status', type: 'helm', url: 'https://charts.example/a.tgz' }] },
      'its status template is of type helm, which only provision and bind templates may be',
    ],
    [
      'a HELM template for its sources',
      { templates: [{ action: 'sources', type: 'HELM', url: 'https://charts.example/a.tgz' }] },
      'its sources template is of type helm, which only provision and bind templates may be',
    ],
    [
      'a helm provision template without a url',
      { templates: [{ action: 'provision', type: 'helm', content: 'a: 1' }] },
      'its provision template is of type helm and has no url (its chart)',
    ],
  ])('GIVEN a plan with %s WHEN checked THEN it alone is left out', (_, spec, reason) => {
    const result = checkCatalog(
      [service('s-1', 'one')],
      [plan('p-1', 'a', 's-1', spec as never), plan('p-2', 'b', 's-1')],
    );
    expect(ids(result)).toEqual([['s-1'], ['p-2']]);
    expect(result.problems).toEqual([{ kind: 'SFPlan', name: 'p-1', reason }]);
  });

  test('GIVEN colliding ids and names WHEN checked THEN the first in catalog order stays and the others are named with what took their place', () => {
    const named = <T extends SFService | SFPlan>(o: T, name: string): T => ({ ...o, metadata: { name } });
    const result = checkCatalog(
      [
        named(service('s-2', 'alpha'), 'alpha-2'),
        named(service('s-1', 'alpha'), 'alpha-1'),
        named(service('s-3', 'gamma'), 'gamma'),
        named(service('s-3', 'delta'), 'delta'),
      ],
      [
        named(plan('p-1', 'small', 's-1'), 'small-1'),
        named(plan('p-2', 'small', 's-3'), 'small-2'),
        named(plan('p-3', 'small', 's-3'), 'small-3'),
        named(plan('p-1', 'large', 's-3'), 'large'),
        named(plan('s-1', 'medium', 's-3'), 'medium'),
      ],
    );
    expect(ids(result)).toEqual([['s-3'], ['p-1', 'p-2']]);
    expect(result.plans.map((p) => p.metadata.name)).toEqual(['large', 'small-2']);
    expect(left(result)).toEqual([
      'SFService alpha-2: its name alpha is taken by SFService alpha-1',
      'SFService gamma: its id s-3 is taken by SFService delta',
      'SFPlan medium: its id s-1 is taken by SFService alpha-1',
      'SFPlan small-1: its id p-1 is taken by SFPlan large',
      'SFPlan small-3: its name small is taken in its service by SFPlan small-2',
      'SFService alpha-1: it has no plan in the catalog',
    ]);
  });

  test('GIVEN a service whose plans are all left out WHEN checked THEN it is left out too', () => {
    const result = checkCatalog([service('s-1', 'one')], [plan('p-1', 'a', 's-1', { description: '' })]);
    expect(ids(result)).toEqual([[], []]);
    expect(left(result)).toEqual([
      'SFPlan p-1: it needs a non-empty id, name and description',
      'SFService s-1: it has no plan in the catalog',
    ]);
  });
});

describe('catalogLookup', () => {
  test('GIVEN ids WHEN looked up THEN the resources, or undefined', () => {
    const s = service('s-1', 'x');
    const p = plan('p-1', 'a', 's-1');
    const lookup = catalogLookup([s], [p]);
    expect([lookup.service('s-1'), lookup.plan('p-1'), lookup.service('p-1'), lookup.plan('nope')]).toEqual([
      s,
      p,
      undefined,
      undefined,
    ]);
  });

  test('GIVEN two plans claiming one id WHEN looked up in either list order THEN the first by name wins', () => {
    const a = plan('p-1', 'a', 's-1');
    const b = plan('p-1', 'b', 's-1');
    expect(catalogLookup([], [b, a]).plan('p-1')).toBe(a);
    expect(catalogLookup([], [a, b]).plan('p-1')).toBe(a);
  });
});

test('GIVEN helm templates for provision and bind WHEN checked THEN the plan stays', () => {
  const chart = 'https://charts.example/a.tgz';
  const result = checkCatalog(
    [service('s-1', 'one')],
    [
      plan('p-1', 'a', 's-1', {
        templates: [
          { action: 'provision', type: 'helm', url: chart, content: 'a: 1' },
          { action: 'bind', type: 'Helm', url: chart },
        ],
      } as never),
    ],
  );
  expect(result.problems).toEqual([]);
  expect(result.plans.map((p) => p.spec.id)).toEqual(['p-1']);
});

describe('binding_rotatable in the catalog', () => {
  const rotatable = (spec: Partial<SFPlan['spec']> = {}) =>
    plan('p-1', 'a', 's-1', { bindingRotatable: true, ...spec });
  test.each([
    ['a rotatable plan of a bindable service', service('s-1', 'x'), rotatable(), true],
    [
      'a rotatable plan that is bindable itself',
      service('s-1', 'x', { bindable: false }),
      rotatable({ bindable: true }),
      true,
    ],
    [
      'a rotatable plan of a service that is not bindable',
      service('s-1', 'x', { bindable: false }),
      rotatable(),
      undefined,
    ],
    [
      'a rotatable plan that is not bindable itself',
      service('s-1', 'x'),
      rotatable({ bindable: false }),
      undefined,
    ],
    ['a plan that says false', service('s-1', 'x'), rotatable({ bindingRotatable: false }), undefined],
    ['a plan that says nothing', service('s-1', 'x'), plan('p-1', 'a', 's-1'), undefined],
  ])('GIVEN %s WHEN mapped THEN binding_rotatable is %p', (_n, svc, p, expected) => {
    expect(osbService(svc, [p]).plans[0]?.binding_rotatable).toBe(expected);
    expect(osbCatalog([svc], [p]).services[0]?.plans[0]?.binding_rotatable).toBe(expected);
  });

  test('GIVEN a valid bindingLifetime WHEN checked THEN the plan stays (the lifetime is not part of the OSB plan)', () => {
    const p = plan('p-1', 'a', 's-1', { bindingLifetime: { expiresAfter: '30d', renewBefore: '7d' } });
    const result = checkCatalog([service('s-1', 'x')], [p]);
    expect(result.problems).toEqual([]);
    expect(Object.keys(osbPlan(p))).toEqual(['id', 'name', 'description']);
  });
});
