/** The OSB catalog from SFService/SFPlan resources, and the lookup by id. Pure. */
import { catalogLookup, osbCatalog, osbPlan, osbService } from '../../../src/osb/catalog.js';
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
          schemas: { service_instance: { create: { parameters: { type: 'object' } } } },
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
