/**
 * The service instance routes: provision, update, deprovision, fetch and last_operation
 * (checklist rows 11, 21–66 as far as the HTTP layer decides them, and 90).
 */
import { concurrencyError, conflict, gone } from '../../../src/osb/errors.js';
import {
  CONTEXT_SERVICE_ID,
  OTHER_SERVICE_ID,
  PLANS,
  SERVICE_ID,
  provisionBody,
  testApi,
} from './support.js';

const ID = 'i-1';
const PATH = `/v2/service_instances/${ID}`;
const ASYNC = `${PATH}?accepts_incomplete=true`;
const deletePath = (planId: string, extra = '') =>
  `${PATH}?service_id=${SERVICE_ID}&plan_id=${planId}${extra}`;

describe('PUT /v2/service_instances/:instance_id (provision)', () => {
  test('GIVEN a sync plan WHEN provisioned THEN 201 {} and the broker gets the whole request (row 23)', async () => {
    const { osb, broker } = testApi();
    const res = await osb.put(
      PATH,
      provisionBody(PLANS.sync, { context: { platform: 'kubernetes', namespace: 'ns' } }),
    );
    expect([res.status, res.body]).toEqual([201, {}]);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(broker.requests('provision')).toEqual([
      {
        instanceId: ID,
        serviceId: SERVICE_ID,
        planId: PLANS.sync,
        organizationGuid: 'org-guid',
        spaceGuid: 'space-guid',
        context: { platform: 'kubernetes', namespace: 'ns' },
        acceptsIncomplete: false,
      },
    ]);
  });

  test('GIVEN the async example plan WHEN provisioned with accepts_incomplete=true THEN 202 {operation, dashboard_url} (rows 22, 33)', async () => {
    const { osb, broker } = testApi();
    broker.respond.provision = async () => ({
      kind: 'accepted',
      operation: 'provision:run-1',
      dashboardUrl: 'https://dash/i-1',
    });
    const res = await osb.put(ASYNC, provisionBody(PLANS.example, { parameters: { foo: 'bar' } }));
    expect([res.status, res.body]).toEqual([
      202,
      { operation: 'provision:run-1', dashboard_url: 'https://dash/i-1' },
    ]);
  });

  test.each([
    ['without accepts_incomplete', PATH],
    ['with accepts_incomplete=false', `${PATH}?accepts_incomplete=false`],
  ])(
    'GIVEN the async example plan WHEN provisioned %s THEN 422 AsyncRequired (row 21)',
    async (_name, path) => {
      const { osb, broker } = testApi();
      const res = await osb.put(path, provisionBody(PLANS.example, { parameters: { foo: 'bar' } }));
      expect([res.status, res.body]).toEqual([
        422,
        {
          error: 'AsyncRequired',
          description:
            'Plan v9.6-xxsmall runs provision, update and deprovision asynchronously; send accepts_incomplete=true.',
        },
      ]);
      expect(broker.calls).toEqual([]);
    },
  );

  test('GIVEN an async plan and a body that fails later checks WHEN no accepts_incomplete THEN 422 first (spec §9.5)', async () => {
    const { osb } = testApi();
    const res = await osb.put(PATH, {
      service_id: SERVICE_ID,
      plan_id: PLANS.example,
      parameters: { bar: 1 },
    });
    expect([res.status, res.body.error]).toEqual([422, 'AsyncRequired']);
  });

  test('GIVEN an invalid body WHEN sent with accepts_incomplete=true THEN 400 (spec §9.5)', async () => {
    const { osb } = testApi();
    const res = await osb.put(ASYNC, { service_id: SERVICE_ID, plan_id: PLANS.example });
    expect([res.status, res.body]).toEqual([
      400,
      { error: 'BadRequest', description: 'organization_guid is required.' },
    ]);
  });

  test('GIVEN the broker finds the instance provisioned identically WHEN PUT again THEN 200 with the dashboard (row 31)', async () => {
    const { osb, broker } = testApi();
    broker.respond.provision = async () => ({
      kind: 'done',
      created: false,
      dashboardUrl: 'https://dash/i-1',
    });
    const res = await osb.put(PATH, provisionBody());
    expect([res.status, res.body]).toEqual([200, { dashboard_url: 'https://dash/i-1' }]);
  });

  test('GIVEN the broker reports a different existing instance WHEN PUT THEN 409 as the broker says (row 32)', async () => {
    const { osb, broker } = testApi();
    broker.respond.provision = async () => {
      throw conflict('An instance with this id already exists with different attributes.');
    };
    const res = await osb.put(PATH, provisionBody());
    expect([res.status, res.body.error]).toEqual([409, 'Conflict']);
  });

  test.each([
    ['service_id absent', { plan_id: PLANS.sync }, 'service_id is required.'],
    ['service_id empty', { service_id: '', plan_id: PLANS.sync }, 'service_id is required.'],
    ['plan_id absent', { service_id: SERVICE_ID }, 'plan_id is required.'],
    ['plan_id empty', { service_id: SERVICE_ID, plan_id: '' }, 'plan_id is required.'],
    ['service_id not a string', { service_id: 7, plan_id: PLANS.sync }, 'service_id must be a string.'],
    [
      'organization_guid absent',
      { ...provisionBody(), organization_guid: undefined },
      'organization_guid is required.',
    ],
    ['space_guid empty', { ...provisionBody(), space_guid: '' }, 'space_guid is required.'],
    [
      'parameters not an object',
      provisionBody(PLANS.sync, { parameters: [1] }),
      'parameters must be a JSON object.',
    ],
    [
      'context not an object',
      provisionBody(PLANS.sync, { context: 'k8s' }),
      'context must be a JSON object.',
    ],
    [
      'maintenance_info.version not a string',
      provisionBody(PLANS.sync, { maintenance_info: { version: 2 } }),
      'maintenance_info.version must be a string.',
    ],
    [
      'an unknown service_id',
      provisionBody(PLANS.sync, { service_id: 'nope' }),
      "service_id nope is not a service of this broker's catalog.",
    ],
    ['an unknown plan_id', provisionBody('nope'), "plan_id nope is not a plan of this broker's catalog."],
    [
      'a plan of another service',
      provisionBody(PLANS.other),
      `plan_id ${PLANS.other} (plan other) does not belong to service_id ${SERVICE_ID} (service postgresql).`,
    ],
  ])(
    'GIVEN %s WHEN provisioned THEN 400 with a description, and nothing is called (rows 11, 24–26)',
    async (_n, body, description) => {
      const { osb, broker } = testApi();
      const res = await osb.put(ASYNC, body);
      expect([res.status, res.body]).toEqual([400, { error: 'BadRequest', description }]);
      expect(broker.calls).toEqual([]);
    },
  );

  test('GIVEN parameters that violate the draft-06 create schema WHEN provisioned THEN 400 InvalidParameters listing the paths (row 27)', async () => {
    const { osb, broker } = testApi();
    const res = await osb.put(ASYNC, provisionBody(PLANS.example, { parameters: { foo: 1, bar: true } }));
    expect([res.status, res.body]).toEqual([
      400,
      {
        error: 'InvalidParameters',
        description:
          'The parameters do not match the service_instance.create.parameters schema of plan v9.6-xxsmall: parameters.bar is not allowed; parameters.foo must be string.',
      },
    ]);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN no parameters and a create schema with a required field WHEN provisioned THEN 400 (absent counts as {})', async () => {
    const { osb } = testApi();
    const res = await osb.put(ASYNC, provisionBody(PLANS.example));
    expect(res.body.description).toBe(
      'The parameters do not match the service_instance.create.parameters schema of plan v9.6-xxsmall: parameters.foo is required.',
    );
  });

  test('GIVEN a plan whose schema ajv cannot compile WHEN provisioned THEN 500 that names the plan, and it is logged', async () => {
    const { osb, broker, log } = testApi();
    const res = await osb.put(PATH, provisionBody(PLANS.brokenSchema, { parameters: {} }));
    expect(res.status).toBe(500);
    expect(res.body.error).toBe('InternalError');
    expect(res.body.description).toMatch(
      /^The service_instance\.create\.parameters schema of plan broken-schema \(plan-broken-schema\) is invalid: schema is invalid: data\/type must be equal to one of the allowed values.*The broker's operator must correct the SFPlan\.$/,
    );
    expect(broker.calls).toEqual([]);
    expect(log.errors()).toHaveLength(1);
  });

  test.each([
    [
      'a version other than the plan’s',
      PLANS.maintained,
      '1.0.0',
      'maintenance_info.version 1.0.0 is not the current version 2.0.0 of plan maintained; fetch the catalog again.',
    ],
    [
      'a version for a plan without maintenance_info',
      PLANS.sync,
      '1.0.0',
      'Plan sync has no maintenance_info; maintenance_info.version 1.0.0 cannot be applied.',
    ],
  ])(
    'GIVEN %s WHEN provisioned THEN 422 MaintenanceInfoConflict (row 28)',
    async (_n, planId, version, description) => {
      const { osb, broker } = testApi();
      const res = await osb.put(PATH, provisionBody(planId, { maintenance_info: { version } }));
      expect([res.status, res.body]).toEqual([422, { error: 'MaintenanceInfoConflict', description }]);
      expect(broker.calls).toEqual([]);
    },
  );

  test.each([
    ['the plan’s version', { version: '2.0.0' }, { version: '2.0.0' }],
    ['no version (interop, row 29)', {}, undefined],
  ])('GIVEN maintenance_info with %s WHEN provisioned THEN 201', async (_n, info, passed) => {
    const { osb, broker } = testApi();
    const res = await osb.put(PATH, provisionBody(PLANS.maintained, { maintenance_info: info }));
    expect(res.status).toBe(201);
    expect((broker.requests('provision')[0] as { maintenanceInfo?: unknown }).maintenanceInfo).toEqual(
      passed,
    );
  });

  test('GIVEN the broker reports the same provision still running WHEN PUT again THEN 202 with its operation (row 30)', async () => {
    const { osb, broker } = testApi();
    broker.respond.provision = async () => ({ kind: 'accepted', operation: 'provision:run-1' });
    const first = await osb.put(ASYNC, provisionBody(PLANS.example, { parameters: { foo: 'x' } }));
    const again = await osb.put(ASYNC, provisionBody(PLANS.example, { parameters: { foo: 'x' } }));
    expect([first.status, first.body, again.status, again.body]).toEqual([
      202,
      { operation: 'provision:run-1' },
      202,
      { operation: 'provision:run-1' },
    ]);
  });

  test('GIVEN the broker answers 202 to a request without accepts_incomplete WHEN provisioning THEN 500, never an unasked-for 202', async () => {
    const { osb, broker, log } = testApi();
    broker.respond.provision = async () => ({ kind: 'accepted', operation: 'provision:1' });
    const res = await osb.put(PATH, provisionBody());
    expect([res.status, res.body.error]).toEqual([500, 'InternalError']);
    expect(log.errors()[0]?.fields?.error).toBe(
      'The service layer answered a provision asynchronously although the request did not allow it.',
    );
  });

  test.each([['maybe'], ['TRUE'], ['1']])(
    'GIVEN accepts_incomplete=%s WHEN provisioned THEN 400',
    async (value) => {
      const { osb } = testApi();
      const res = await osb.put(`${PATH}?accepts_incomplete=${value}`, provisionBody());
      expect([res.status, res.body]).toEqual([
        400,
        { error: 'BadRequest', description: `accepts_incomplete must be true or false, not "${value}".` },
      ]);
    },
  );

  test('GIVEN accepts_incomplete twice WHEN provisioned THEN 400', async () => {
    const { osb } = testApi();
    const res = await osb.put(`${PATH}?accepts_incomplete=true&accepts_incomplete=false`, provisionBody());
    expect(res.body).toEqual({
      error: 'BadRequest',
      description: 'The accepts_incomplete query parameter must be given once.',
    });
  });

  test('GIVEN percent-encoded ids WHEN provisioned THEN the broker gets them decoded (row 90)', async () => {
    const { osb, broker } = testApi();
    const res = await osb.put('/v2/service_instances/a%20b%2Fc%3F', provisionBody());
    expect(res.status).toBe(201);
    expect((broker.requests('provision')[0] as { instanceId: string }).instanceId).toBe('a b/c?');
  });
});

describe('PATCH /v2/service_instances/:instance_id (update)', () => {
  const withInstance = (planId: string = PLANS.sync, serviceId: string = SERVICE_ID) => {
    const api = testApi();
    api.broker.instances.set(ID, {
      instanceId: ID,
      serviceId,
      planId,
      operation: { type: 'provision', state: 'succeeded' },
    });
    return api;
  };

  test('GIVEN an instance WHEN parameters change synchronously THEN 200 {} and the broker gets only what was sent (rows 51–52)', async () => {
    const { osb, broker } = withInstance();
    const res = await osb.patch(PATH, { service_id: SERVICE_ID, parameters: { size: 2 } });
    expect([res.status, res.body]).toEqual([200, {}]);
    expect(broker.requests('update')).toEqual([
      { instanceId: ID, serviceId: SERVICE_ID, parameters: { size: 2 }, acceptsIncomplete: false },
    ]);
  });

  test('GIVEN an async update WHEN accepted THEN 202 {operation}; the same again gets the same operation (rows 52–53)', async () => {
    const { osb, broker } = withInstance(PLANS.example);
    broker.respond.update = async () => ({ kind: 'accepted', operation: 'update:run-7' });
    const body = { service_id: SERVICE_ID, parameters: { foo: 'x' } };
    const first = await osb.patch(ASYNC, body);
    broker.instances.set(ID, {
      instanceId: ID,
      serviceId: SERVICE_ID,
      planId: PLANS.example,
      operation: { type: 'update', state: 'in progress' },
    });
    const again = await osb.patch(ASYNC, body);
    expect([first.status, first.body, again.status, again.body]).toEqual([
      202,
      { operation: 'update:run-7' },
      202,
      { operation: 'update:run-7' },
    ]);
  });

  test('GIVEN an update that returns a new dashboard WHEN done THEN 200 {dashboard_url}', async () => {
    const { osb, broker } = withInstance();
    broker.respond.update = async () => ({ kind: 'done', created: false, dashboardUrl: 'https://dash/new' });
    const res = await osb.patch(PATH, { service_id: SERVICE_ID, parameters: {} });
    expect([res.status, res.body]).toEqual([200, { dashboard_url: 'https://dash/new' }]);
  });

  test.each([
    [
      'an instance of the async plan, without accepts_incomplete (row 46)',
      { planId: PLANS.example },
      { service_id: SERVICE_ID, parameters: { foo: 'x' } },
      422,
      {
        error: 'AsyncRequired',
        description:
          'Plan v9.6-xxsmall runs provision, update and deprovision asynchronously; send accepts_incomplete=true.',
      },
    ],
    [
      'no such instance (spec §9.4)',
      undefined,
      { service_id: SERVICE_ID, parameters: {} },
      404,
      { error: 'NotFound', description: 'The service instance does not exist.' },
    ],
    [
      'an instance of another service, the request naming this one',
      { planId: PLANS.other, serviceId: OTHER_SERVICE_ID },
      { service_id: SERVICE_ID, parameters: {} },
      400,
      {
        error: 'BadRequest',
        description: `The service instance belongs to service_id ${OTHER_SERVICE_ID}, not ${SERVICE_ID}.`,
      },
    ],
    [
      'a running provision (row 54)',
      { operation: { type: 'provision', state: 'in progress' } },
      { service_id: SERVICE_ID, parameters: {} },
      422,
      {
        error: 'ConcurrencyError',
        description: 'The service instance is being provisioned; update it when that has finished.',
      },
    ],
    [
      'a running deprovision (row 54)',
      { operation: { type: 'deprovision', state: 'in progress' } },
      { service_id: SERVICE_ID, parameters: {} },
      422,
      {
        error: 'ConcurrencyError',
        description: 'The service instance is being deprovisioned; update it when that has finished.',
      },
    ],
    [
      'a service with planUpdatable false, its instance changing plan',
      { planId: PLANS.other, serviceId: OTHER_SERVICE_ID },
      { service_id: OTHER_SERVICE_ID, plan_id: PLANS.other2 },
      400,
      {
        error: 'PlanChangeNotSupported',
        description:
          'Plan other does not allow changing the plan of its instances (plan_updateable is false).',
      },
    ],
    [
      'an instance whose plan left the catalog, no plan_id',
      { planId: 'plan-gone' },
      { service_id: SERVICE_ID, parameters: {} },
      400,
      {
        error: 'BadRequest',
        description:
          'The plan plan-gone of the service instance is no longer in the catalog; name a plan_id to move it to.',
      },
    ],
    [
      'parameters that violate the update schema (rows 50, 55)',
      { planId: PLANS.schemas },
      { service_id: SERVICE_ID, parameters: { size: 11, colour: 'red' } },
      400,
      {
        error: 'InvalidParameters',
        description:
          'The parameters do not match the service_instance.update.parameters schema of plan schemas: parameters.colour is not allowed; parameters.size must be <= 10.',
      },
    ],
    [
      'maintenance_info other than the catalog’s (row 57)',
      { planId: PLANS.maintained },
      { service_id: SERVICE_ID, maintenance_info: { version: '1.9.0' } },
      422,
      {
        error: 'MaintenanceInfoConflict',
        description:
          'maintenance_info.version 1.9.0 is not the current version 2.0.0 of plan maintained; fetch the catalog again.',
      },
    ],
    [
      'only the context, of a service without allow_context_updates',
      {},
      { service_id: SERVICE_ID, context: { instance_name: 'new' } },
      400,
      {
        error: 'ContextUpdateNotSupported',
        description:
          'Service postgresql does not allow updates that change only the context (allow_context_updates is false).',
      },
    ],
  ] as const)(
    'GIVEN %s WHEN PATCH THEN the status and error the rules say, and nothing is updated',
    async (_n, instance, body, status, error) => {
      const api = testApi();
      if (instance) {
        api.broker.instances.set(ID, {
          instanceId: ID,
          serviceId: SERVICE_ID,
          planId: PLANS.sync,
          operation: { type: 'provision', state: 'succeeded' },
          ...instance,
        });
      }
      const res = await api.osb.patch(PATH, body);
      expect([res.status, res.body]).toEqual([status, error]);
      expect(api.broker.requests('update')).toEqual([]);
    },
  );

  test('GIVEN a sync instance WHEN moving to the async plan without accepts_incomplete THEN 422 AsyncRequired, before the instance is read', async () => {
    const { osb, broker } = withInstance();
    const res = await osb.patch(PATH, { service_id: SERVICE_ID, plan_id: PLANS.example });
    expect([res.status, res.body.error]).toEqual([422, 'AsyncRequired']);
    expect(broker.calls).toEqual([]);
  });

  test.each([
    ['service_id absent (row 47)', { parameters: {} }, 'service_id is required.'],
    [
      'an unknown service_id',
      { service_id: 'nope' },
      "service_id nope is not a service of this broker's catalog.",
    ],
    [
      'an unknown plan_id (row 49)',
      { service_id: SERVICE_ID, plan_id: 'nope' },
      "plan_id nope is not a plan of this broker's catalog.",
    ],
    [
      'a plan of another service',
      { service_id: SERVICE_ID, plan_id: PLANS.other },
      `plan_id ${PLANS.other} (plan other) does not belong to service_id ${SERVICE_ID} (service postgresql).`,
    ],
    [
      'previous_values not an object',
      { service_id: SERVICE_ID, previous_values: 'x' },
      'previous_values must be a JSON object.',
    ],
  ])('GIVEN %s WHEN PATCH THEN 400 and nothing changes', async (_n, body, description) => {
    const { osb, broker } = withInstance();
    const res = await osb.patch(PATH, body);
    expect([res.status, res.body]).toEqual([400, { error: 'BadRequest', description }]);
    expect(broker.requests('update')).toEqual([]);
  });

  test('GIVEN a running update WHEN the broker says it is another one THEN 422 ConcurrencyError from the broker (row 54)', async () => {
    const { osb, broker } = testApi();
    broker.instances.set(ID, {
      instanceId: ID,
      serviceId: SERVICE_ID,
      planId: PLANS.sync,
      operation: { type: 'update', state: 'in progress' },
    });
    broker.respond.update = async () => {
      throw concurrencyError('Another operation (update) is in progress.');
    };
    const res = await osb.patch(PATH, { service_id: SERVICE_ID, parameters: { other: true } });
    expect([res.status, res.body]).toEqual([
      422,
      { error: 'ConcurrencyError', description: 'Another operation (update) is in progress.' },
    ]);
  });

  test.each([
    ['a plan that allows it', PLANS.sync, PLANS.maintained, 200, undefined],
    ['the same plan named again', PLANS.fixed, PLANS.fixed, 200, undefined],
    [
      'a plan with plan_updateable false (plan level overrides the service)',
      PLANS.fixed,
      PLANS.sync,
      400,
      'Plan fixed does not allow changing the plan of its instances (plan_updateable is false).',
    ],
    ['a predecessor the target accepts', PLANS.sync, PLANS.picky, 200, undefined],
    [
      'a plan the target does not accept (update_predecessors)',
      PLANS.maintained,
      PLANS.picky,
      400,
      'Instances of plan maintained cannot be updated to plan picky; it accepts instances of plan-sync only.',
    ],
  ])(
    'GIVEN a move from %s WHEN PATCH plan_id THEN %#: status as the rules say (400, as the product specifies)',
    async (_n, from, to, status, description) => {
      const { osb, broker } = withInstance(from);
      const res = await osb.patch(PATH, { service_id: SERVICE_ID, plan_id: to });
      expect(res.status).toBe(status);
      if (description) {
        expect(res.body).toEqual({ error: 'PlanChangeNotSupported', description });
        expect(broker.requests('update')).toEqual([]);
      } else {
        expect(broker.requests('update')).toEqual([
          { instanceId: ID, serviceId: SERVICE_ID, planId: to, acceptsIncomplete: false },
        ]);
      }
    },
  );

  test('GIVEN an update schema with constraints WHEN PATCH without parameters THEN they are not checked (absent means unchanged)', async () => {
    const { osb } = withInstance(PLANS.schemas);
    expect((await osb.patch(PATH, { service_id: SERVICE_ID, plan_id: PLANS.schemas })).status).toBe(200);
  });

  test('GIVEN the catalog’s maintenance_info WHEN PATCH THEN the broker gets it with previous_values', async () => {
    const { osb, broker } = withInstance(PLANS.maintained);
    const res = await osb.patch(PATH, {
      service_id: SERVICE_ID,
      maintenance_info: { version: '2.0.0' },
      previous_values: { plan_id: PLANS.maintained, maintenance_info: {} },
    });
    expect(res.status).toBe(200);
    expect(broker.requests('update')).toEqual([
      {
        instanceId: ID,
        serviceId: SERVICE_ID,
        maintenanceInfo: { version: '2.0.0' },
        previousValues: { plan_id: PLANS.maintained, maintenance_info: {} },
        acceptsIncomplete: false,
      },
    ]);
  });

  test('GIVEN a service with allow_context_updates WHEN only the context changes THEN 200 and the broker gets it (row 58)', async () => {
    const { osb, broker } = withInstance(PLANS.contextual, CONTEXT_SERVICE_ID);
    const res = await osb.patch(PATH, { service_id: CONTEXT_SERVICE_ID, context: { instance_name: 'new' } });
    expect(res.status).toBe(200);
    expect(broker.requests('update')).toEqual([
      {
        instanceId: ID,
        serviceId: CONTEXT_SERVICE_ID,
        context: { instance_name: 'new' },
        acceptsIncomplete: false,
      },
    ]);
  });

  test('GIVEN a service without allow_context_updates WHEN context comes with parameters THEN it is not a context-only update', async () => {
    const { osb } = withInstance();
    expect(
      (await osb.patch(PATH, { service_id: SERVICE_ID, context: { a: 1 }, parameters: { b: 2 } })).status,
    ).toBe(200);
  });
});

describe('DELETE /v2/service_instances/:instance_id (deprovision)', () => {
  test('GIVEN an instance WHEN deleted synchronously THEN 200 {} (row 62)', async () => {
    const { osb, broker } = testApi();
    broker.instances.set(ID, { instanceId: ID, serviceId: SERVICE_ID, planId: PLANS.sync });
    const res = await osb.delete(deletePath(PLANS.sync));
    expect([res.status, res.body]).toEqual([200, {}]);
    expect(broker.requests('deprovision')).toEqual([
      { instanceId: ID, serviceId: SERVICE_ID, planId: PLANS.sync, acceptsIncomplete: false },
    ]);
  });

  test('GIVEN an async instance WHEN deleted with accepts_incomplete THEN 202 {operation}, and again 202 with the same (rows 62–63)', async () => {
    const { osb, broker } = testApi();
    broker.respond.deprovision = async () => ({ kind: 'accepted', operation: 'deprovision:run-3' });
    const first = await osb.delete(deletePath(PLANS.example, '&accepts_incomplete=true'));
    const again = await osb.delete(deletePath(PLANS.example, '&accepts_incomplete=true'));
    expect([first.status, first.body, again.status, again.body]).toEqual([
      202,
      { operation: 'deprovision:run-3' },
      202,
      { operation: 'deprovision:run-3' },
    ]);
  });

  test('GIVEN the async plan WHEN deleted without accepts_incomplete THEN 422 AsyncRequired (row 60)', async () => {
    const { osb, broker } = testApi();
    const res = await osb.delete(deletePath(PLANS.example));
    expect([res.status, res.body.error]).toEqual([422, 'AsyncRequired']);
    expect(broker.calls).toEqual([]);
  });

  test.each([
    ['no service_id', `${PATH}?plan_id=${PLANS.sync}`, 'The service_id query parameter is required.'],
    [
      'an empty plan_id',
      `${PATH}?service_id=${SERVICE_ID}&plan_id=`,
      'The plan_id query parameter is required.',
    ],
    ['no query at all', PATH, 'The service_id query parameter is required.'],
    [
      'an unknown plan_id',
      `${PATH}?service_id=${SERVICE_ID}&plan_id=nope`,
      "plan_id nope is not a plan of this broker's catalog.",
    ],
  ])('GIVEN %s WHEN deleted THEN 400 (row 59)', async (_n, path, description) => {
    const { osb, broker } = testApi();
    const res = await osb.delete(path);
    expect([res.status, res.body]).toEqual([400, { error: 'BadRequest', description }]);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN no such instance WHEN the broker says gone THEN 410 {} (row 61)', async () => {
    const { osb } = testApi();
    const res = await osb.delete(deletePath(PLANS.sync));
    expect([res.status, res.body]).toEqual([410, {}]);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  test('GIVEN an update running WHEN the broker rejects the delete THEN 422 ConcurrencyError (row 65)', async () => {
    const { osb, broker } = testApi();
    broker.respond.deprovision = async () => {
      throw concurrencyError();
    };
    const res = await osb.delete(deletePath(PLANS.sync));
    expect(res.body).toEqual({
      error: 'ConcurrencyError',
      description: 'Another operation for this service instance is in progress.',
    });
  });
});

describe('GET /v2/service_instances/:instance_id', () => {
  test('GIVEN a provisioned instance WHEN fetched THEN 200 with its fields (row 43)', async () => {
    const { osb, broker } = testApi();
    broker.instances.set(ID, {
      instanceId: ID,
      serviceId: SERVICE_ID,
      planId: PLANS.maintained,
      parameters: { size: 1 },
      context: { platform: 'kubernetes' },
      maintenanceInfo: { version: '2.0.0' },
      dashboardUrl: 'https://dash/i-1',
      operation: { type: 'provision', state: 'succeeded' },
    });
    const res = await osb.get(`${PATH}?service_id=${SERVICE_ID}&plan_id=${PLANS.maintained}`);
    expect([res.status, res.body]).toEqual([
      200,
      {
        service_id: SERVICE_ID,
        plan_id: PLANS.maintained,
        dashboard_url: 'https://dash/i-1',
        parameters: { size: 1 },
        maintenance_info: { version: '2.0.0' },
      },
    ]);
  });

  test.each([
    ['unknown', undefined, 'The service instance does not exist.'],
    [
      'still being provisioned',
      { type: 'provision', state: 'in progress' },
      'The service instance is still being provisioned.',
    ],
    [
      'whose provision failed',
      { type: 'provision', state: 'failed' },
      'The service instance does not exist.',
    ],
    ['deprovisioned', { type: 'deprovision', state: 'succeeded' }, 'The service instance does not exist.'],
  ] as const)('GIVEN an instance %s WHEN fetched THEN 404 (row 44)', async (name, operation, description) => {
    const { osb, broker } = testApi();
    if (name !== 'unknown')
      broker.instances.set(ID, {
        instanceId: ID,
        serviceId: SERVICE_ID,
        planId: PLANS.sync,
        operation: operation!,
      });
    const res = await osb.get(PATH);
    expect([res.status, res.body]).toEqual([404, { error: 'NotFound', description }]);
  });

  test('GIVEN an instance being updated WHEN fetched THEN 422 ConcurrencyError (row 45)', async () => {
    const { osb, broker } = testApi();
    broker.instances.set(ID, {
      instanceId: ID,
      serviceId: SERVICE_ID,
      planId: PLANS.sync,
      operation: { type: 'update', state: 'in progress' },
    });
    const res = await osb.get(PATH);
    expect([res.status, res.body]).toEqual([
      422,
      {
        error: 'ConcurrencyError',
        description: 'The service instance is being updated; fetch it when the update has finished.',
      },
    ]);
  });

  test.each([
    ['a failed update', { type: 'update', state: 'failed' }],
    ['a running deprovision', { type: 'deprovision', state: 'in progress' }],
    ['no recorded operation', undefined],
  ] as const)('GIVEN an instance after %s WHEN fetched THEN 200', async (_n, operation) => {
    const { osb, broker } = testApi();
    broker.instances.set(ID, {
      instanceId: ID,
      serviceId: SERVICE_ID,
      planId: PLANS.sync,
      ...(operation ? { operation } : {}),
    });
    expect((await osb.get(PATH)).body).toEqual({ service_id: SERVICE_ID, plan_id: PLANS.sync });
  });
});

describe('GET /v2/service_instances/:instance_id/last_operation', () => {
  test('GIVEN an operation in progress WHEN polled with its operation THEN 200 {state} with Retry-After (rows 34–35, 38)', async () => {
    const { osb, broker } = testApi();
    broker.lastOperations.set(ID, {
      state: 'in progress',
      description: 'Creating the database.',
      retryAfterSeconds: 2,
    });
    const res = await osb.get(
      `${PATH}/last_operation?operation=provision%3Arun-1&service_id=${SERVICE_ID}&plan_id=${PLANS.example}`,
    );
    expect([res.status, res.body, res.headers['retry-after']]).toEqual([
      200,
      { state: 'in progress', description: 'Creating the database.' },
      '2',
    ]);
    expect(broker.calls).toEqual([{ method: 'instanceLastOperation', args: [ID, 'provision:run-1'] }]);
  });

  test('GIVEN a fractional retry WHEN polled THEN Retry-After is rounded up to whole seconds', async () => {
    const { osb, broker } = testApi();
    broker.lastOperations.set(ID, { state: 'in progress', retryAfterSeconds: 0.4 });
    expect((await osb.get(`${PATH}/last_operation`)).headers['retry-after']).toBe('1');
  });

  test('GIVEN a failed update WHEN polled THEN instance_usable and update_repeatable are reported, no Retry-After (row 42)', async () => {
    const { osb, broker } = testApi();
    broker.lastOperations.set(ID, {
      state: 'failed',
      description: 'The update failed.',
      instanceUsable: true,
      updateRepeatable: false,
    });
    const res = await osb.get(`${PATH}/last_operation`);
    expect([res.body, res.headers['retry-after']]).toEqual([
      { state: 'failed', description: 'The update failed.', instance_usable: true, update_repeatable: false },
      undefined,
    ]);
  });

  test('GIVEN a succeeded operation with an empty description and stray flags WHEN polled THEN only {state} (rows 37, 42)', async () => {
    const { osb, broker } = testApi();
    broker.lastOperations.set(ID, {
      state: 'succeeded',
      description: '',
      instanceUsable: true,
      updateRepeatable: true,
    });
    expect((await osb.get(`${PATH}/last_operation`)).body).toEqual({ state: 'succeeded' });
  });

  test('GIVEN an unknown instance WHEN polled THEN 404 as the broker says (row 36)', async () => {
    const { osb } = testApi();
    const res = await osb.get(`${PATH}/last_operation`);
    expect([res.status, res.body]).toEqual([
      404,
      { error: 'NotFound', description: 'The service instance does not exist.' },
    ]);
  });

  test('GIVEN an async deprovision that finished WHEN the broker says gone THEN 410 {} (row 41)', async () => {
    const { osb, broker } = testApi();
    broker.respond.instanceLastOperation = async () => {
      throw gone('The service instance is deleted.');
    };
    const res = await osb.get(`${PATH}/last_operation?operation=deprovision%3Arun-3`);
    expect([res.status, res.body]).toEqual([410, {}]);
  });

  test('GIVEN operation twice WHEN polled THEN 400', async () => {
    const { osb } = testApi();
    const res = await osb.get(`${PATH}/last_operation?operation=a&operation=b`);
    expect(res.body).toEqual({
      error: 'BadRequest',
      description: 'The operation query parameter must be given once.',
    });
  });
});
