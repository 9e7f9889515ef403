/**
 * Bindings that add to an object of the instance (a user in the operator's postgresql), two at a
 * time, with each example plan: the design document's, whose bind and unbind templates render the
 * whole postgresql as read (`toYaml $postgresql`, with the user added or taken out), and the
 * mustache and jsonnet twins, which render the user alone. Unbinding one takes its user out and
 * leaves the other's, whichever was bound first; the postgresql's managed fields name each binding
 * for its own user, not for the whole object.
 */
import { randomUUID } from 'node:crypto';
import { clusters } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
} from '../support/system.js';

const PLANS = [
  {
    name: 'gotemplate (design document)',
    serviceId: '24731fb8-7b84-5f57-914f-c3d55d793dd4',
    planId: '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88',
    prefix: 'sapcp',
    // Its schema asks for one.
    parameters: { foo: 'bar' } as Record<string, unknown>,
  },
  {
    name: 'mustache',
    serviceId: '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01',
    planId: '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02',
    prefix: 'mpg',
    parameters: {},
  },
  {
    name: 'jsonnet',
    serviceId: '122989ea-ed62-48aa-ade7-b290b8d0e834',
    planId: '96edc916-b56c-4dc9-b39e-e5e6d55b739e',
    prefix: 'jpg',
    parameters: {},
  },
];

interface Postgresql {
  metadata: { managedFields?: { manager?: string; fieldsV1?: { 'f:spec'?: { 'f:users'?: object } } }[] };
  spec: { users: Record<string, unknown> };
}

describe('two bindings that add to one object of their instance', () => {
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  const [master] = clusters();

  beforeAll(async () => {
    operator = await startOperator();
    system = await startProcess('all', await systemSettings());
    osb = osbClient(system.url);
    await installCatalog('examples/postgresql', 'examples/mustache', 'examples/jsonnet');
  });
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
  });

  test.each(PLANS)(
    'GIVEN the $name plan and two bindings WHEN the first is unbound THEN its user goes and the second’s stays',
    async (plan) => {
      const instanceId = randomUUID();
      const path = `/v2/service_instances/${instanceId}`;
      const provision = await osb(
        'PUT',
        `${path}?accepts_incomplete=true`,
        provisionBody(plan.serviceId, plan.planId, plan.parameters),
      );
      expect(provision.status).toBe(202);
      expect((await untilSettled(osb, `${path}/last_operation`)).body.state).toBe('succeeded');
      const postgresql = async () =>
        (await master!.custom.getNamespacedCustomObject({
          group: 'acid.zalan.do',
          version: 'v1',
          plural: 'postgresqls',
          namespace: `sf-${instanceId}`,
          name: `${plan.prefix}-${instanceId}`,
        })) as Postgresql;
      const users = async () => Object.keys((await postgresql()).spec.users).sort();
      const body = { service_id: plan.serviceId, plan_id: plan.planId };
      const query = `service_id=${plan.serviceId}&plan_id=${plan.planId}`;

      const [first, second] = [randomUUID(), randomUUID()];
      expect((await osb('PUT', `${path}/service_bindings/${first}`, body)).status).toBe(201);
      expect((await osb('PUT', `${path}/service_bindings/${second}`, body)).status).toBe(201);
      expect(await users()).toEqual([first, second, 'main'].sort());
      // Each binding's field manager owns its own user alone.
      const owned = (await postgresql()).metadata.managedFields
        ?.filter((m) => m.manager?.startsWith('interoperator/binding/'))
        .map((m) => Object.keys(m.fieldsV1?.['f:spec']?.['f:users'] ?? {}).length);
      expect(owned).toEqual([1, 1]);

      expect((await osb('DELETE', `${path}/service_bindings/${first}?${query}`)).status).toBe(200);
      expect(await users()).toEqual([second, 'main'].sort());
      expect((await osb('DELETE', `${path}/service_bindings/${second}?${query}`)).status).toBe(200);
      expect(await users()).toEqual(['main']);

      const deprovision = await osb('DELETE', `${path}?accepts_incomplete=true&${query}`);
      expect(deprovision.status).toBe(202);
      expect((await untilSettled(osb, `${path}/last_operation`)).body.state).toBe('succeeded');
    },
    120_000,
  );
});
