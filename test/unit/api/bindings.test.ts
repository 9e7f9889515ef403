/**
 * The service binding routes: bind, unbind, fetch and last_operation (checklist rows 67–86 as far
 * as the HTTP layer decides them).
 */
import { concurrencyError, conflict, notFound } from '../../../src/osb/errors.js';
import { PLANS, SERVICE_ID, testApi } from './support.js';

const PATH = '/v2/service_instances/i-1/service_bindings/b-1';
const ASYNC = `${PATH}?accepts_incomplete=true`;
const body = (planId: string = PLANS.sync, extra: Record<string, unknown> = {}) => ({
  service_id: SERVICE_ID,
  plan_id: planId,
  ...extra,
});
const unbindPath = (planId: string, extra = '') =>
  `${PATH}?service_id=${SERVICE_ID}&plan_id=${planId}${extra}`;

describe('PUT …/service_bindings/:binding_id (bind)', () => {
  test('GIVEN a sync bind WHEN created THEN 201 with the credentials, and the broker gets the request (row 70)', async () => {
    const { osb, broker } = testApi();
    broker.respond.bind = async () => ({
      kind: 'done',
      created: true,
      response: {
        credentials: { uri: 'postgres://u:p@h:5432/main' },
        endpoints: [{ host: 'h', ports: ['5432'], protocol: 'tcp' }],
      },
    });
    const res = await osb.put(
      PATH,
      body(PLANS.sync, {
        bind_resource: { app_guid: 'app-1' },
        context: { platform: 'kubernetes' },
        parameters: { role: 'reader' },
        unknown_field: 1,
      }),
    );
    expect([res.status, res.body]).toEqual([
      201,
      {
        credentials: { uri: 'postgres://u:p@h:5432/main' },
        endpoints: [{ host: 'h', ports: ['5432'], protocol: 'tcp' }],
      },
    ]);
    expect(broker.requests('bind')).toEqual([
      {
        instanceId: 'i-1',
        bindingId: 'b-1',
        serviceId: SERVICE_ID,
        planId: PLANS.sync,
        appGuid: 'app-1',
        bindResource: { app_guid: 'app-1' },
        context: { platform: 'kubernetes' },
        parameters: { role: 'reader' },
        acceptsIncomplete: false,
      },
    ]);
  });

  test('GIVEN the deprecated top-level app_guid WHEN bound THEN it is the appGuid', async () => {
    const { osb, broker } = testApi();
    await osb.put(PATH, body(PLANS.sync, { app_guid: 'app-old' }));
    expect((broker.requests('bind')[0] as { appGuid?: string }).appGuid).toBe('app-old');
  });

  test('GIVEN an identical binding that exists WHEN bound again THEN 200 with the same credentials (row 73)', async () => {
    const { osb, broker } = testApi();
    broker.respond.bind = async () => ({
      kind: 'done',
      created: false,
      response: { credentials: { password: 'p' } },
    });
    const res = await osb.put(PATH, body());
    expect([res.status, res.body]).toEqual([200, { credentials: { password: 'p' } }]);
  });

  test('GIVEN an async-binding plan at 2.14+ WHEN bound with accepts_incomplete=true THEN 202 with only the operation (row 72)', async () => {
    const { osb, broker } = testApi();
    broker.respond.bind = async () => ({ kind: 'accepted', operation: 'bind:run-2' });
    const res = await osb.put(ASYNC, body(PLANS.asyncBinding));
    expect([res.status, res.body]).toEqual([202, { operation: 'bind:run-2' }]);
    expect((broker.requests('bind')[0] as { acceptsIncomplete: boolean }).acceptsIncomplete).toBe(true);
  });

  test('GIVEN the same async bind still running WHEN bound again THEN 202 with the same operation (row 73)', async () => {
    const { osb, broker } = testApi();
    broker.respond.bind = async () => ({ kind: 'accepted', operation: 'bind:run-2' });
    const first = await osb.put(ASYNC, body(PLANS.asyncBinding));
    const again = await osb.put(ASYNC, body(PLANS.asyncBinding));
    expect([first.body, again.status, again.body]).toEqual([
      { operation: 'bind:run-2' },
      202,
      { operation: 'bind:run-2' },
    ]);
  });

  test.each(['2.12', '2.13'])(
    'GIVEN an async-binding plan at %s (no async bindings yet) WHEN bound, even with accepts_incomplete THEN the broker must answer synchronously',
    async (version) => {
      const { osb, broker } = testApi({ version });
      const res = await osb.put(ASYNC, body(PLANS.asyncBinding));
      expect([res.status, res.body]).toEqual([201, { credentials: { username: 'u', password: 'p' } }]);
      expect((broker.requests('bind')[0] as { acceptsIncomplete: boolean }).acceptsIncomplete).toBe(false);
    },
  );

  test('GIVEN a 2.13 request WHEN the broker answers 202 anyway THEN 500, never a 202 the platform cannot poll', async () => {
    const { osb, broker, log } = testApi({ version: '2.13' });
    broker.respond.bind = async () => ({ kind: 'accepted', operation: 'bind:1' });
    const res = await osb.put(ASYNC, body(PLANS.asyncBinding));
    expect([res.status, res.body.error]).toEqual([500, 'InternalError']);
    expect(log.errors()[0]?.fields?.error).toBe(
      'The service layer answered a bind asynchronously although the request did not allow it.',
    );
  });

  test.each([
    ['service_id absent', { plan_id: PLANS.sync }, 'service_id is required.'],
    ['plan_id empty', { service_id: SERVICE_ID, plan_id: '' }, 'plan_id is required.'],
    ['an unknown plan', body('nope'), "plan_id nope is not a plan of this broker's catalog."],
    [
      'a non-bindable plan (row 68)',
      body(PLANS.unbindable),
      'Plan unbindable of service postgresql is not bindable.',
    ],
    [
      'bind_resource not an object',
      body(PLANS.sync, { bind_resource: 'app' }),
      'bind_resource must be a JSON object.',
    ],
  ])(
    'GIVEN %s WHEN bound THEN 400 and the broker is not called (row 67)',
    async (_n, request, description) => {
      const { osb, broker } = testApi();
      const res = await osb.put(PATH, request);
      expect([res.status, res.body]).toEqual([400, { error: 'BadRequest', description }]);
      expect(broker.calls).toEqual([]);
    },
  );

  test.each([
    [
      'an async-binding plan at 2.14+, without accepts_incomplete (row 71)',
      body(PLANS.asyncBinding),
      422,
      {
        error: 'AsyncRequired',
        description:
          'Plan async-binding creates and deletes bindings asynchronously; send accepts_incomplete=true.',
      },
    ],
    [
      'binding parameters that violate the binding schema (row 69)',
      body(PLANS.schemas, { parameters: { role: 'admin' } }),
      400,
      {
        error: 'InvalidParameters',
        description:
          'The parameters do not match the service_binding.create.parameters schema of plan schemas: parameters.role must be one of "reader", "writer".',
      },
    ],
    [
      'a plan that requires an app, and no app_guid (row 75)',
      body(PLANS.app),
      422,
      {
        error: 'RequiresApp',
        description: 'This service supports generation of credentials through binding an application only.',
      },
    ],
  ])(
    'GIVEN %s WHEN bound THEN the status and error, and the broker is not called',
    async (_n, request, status, error) => {
      const { osb, broker } = testApi();
      const res = await osb.put(PATH, request);
      expect([res.status, res.body]).toEqual([status, error]);
      expect(broker.calls).toEqual([]);
    },
  );

  test.each([
    ['a plan that is not binding_rotatable', PLANS.sync, 'b-0', 'Plan sync is not binding_rotatable'],
    ['a predecessor_binding_id that is not a string', PLANS.rotatable, 7, undefined],
  ])(
    'GIVEN a rotation on %s WHEN bound THEN 400 and the broker is not called (row 86)',
    async (_n, planId, predecessor, description) => {
      const { osb, broker } = testApi();
      const res = await osb.put(PATH, body(planId, { predecessor_binding_id: predecessor }));
      expect(res.status).toBe(400);
      if (description) {
        expect(res.body).toEqual({
          error: 'BindingRotationNotSupported',
          description: `${description}; predecessor_binding_id cannot be used.`,
        });
      } else expect(res.body.description).toBe('predecessor_binding_id must be a string.');
      expect(broker.calls).toEqual([]);
    },
  );

  test('GIVEN a binding_rotatable plan WHEN bound with predecessor_binding_id THEN the broker gets it (row 86)', async () => {
    const { osb, broker } = testApi();
    const res = await osb.put(PATH, body(PLANS.rotatable, { predecessor_binding_id: 'b-0' }));
    expect(res.status).toBe(201);
    expect(broker.requests('bind')).toEqual([
      {
        instanceId: 'i-1',
        bindingId: 'b-1',
        serviceId: SERVICE_ID,
        planId: PLANS.rotatable,
        predecessorBindingId: 'b-0',
        acceptsIncomplete: false,
      },
    ]);
  });

  test('GIVEN a bind without predecessor_binding_id THEN the broker gets none', async () => {
    const { osb, broker } = testApi();
    expect((await osb.put(PATH, body(PLANS.rotatable))).status).toBe(201);
    expect(broker.requests('bind')[0]).not.toHaveProperty('predecessorBindingId');
  });

  test('GIVEN a plan that requires an app WHEN bound with bind_resource.app_guid THEN 201 (row 75)', async () => {
    const { osb } = testApi();
    expect((await osb.put(PATH, body(PLANS.app, { bind_resource: { app_guid: 'a' } }))).status).toBe(201);
  });

  test.each([
    [
      'a conflicting repeat (row 74)',
      conflict('A binding with this id already exists with different attributes.'),
      409,
    ],
    [
      'a concurrent operation (row 76)',
      concurrencyError('The service instance is still being provisioned.'),
      422,
    ],
    ['an unknown instance (spec §9.4)', notFound('The service instance does not exist.'), 404],
  ])('GIVEN the broker rejects %s WHEN bound THEN its status and body', async (_n, error, status) => {
    const { osb, broker } = testApi();
    broker.respond.bind = async () => {
      throw error;
    };
    const res = await osb.put(PATH, body());
    expect([res.status, res.body]).toEqual([status, error.toBody()]);
  });
});

describe('DELETE …/service_bindings/:binding_id (unbind)', () => {
  test('GIVEN a binding WHEN unbound synchronously THEN 200 {} (row 84)', async () => {
    const { osb, broker } = testApi();
    broker.bindings.set('i-1/b-1', {
      bindingId: 'b-1',
      instanceId: 'i-1',
      serviceId: SERVICE_ID,
      planId: PLANS.sync,
    });
    const res = await osb.delete(unbindPath(PLANS.sync));
    expect([res.status, res.body]).toEqual([200, {}]);
    expect(broker.requests('unbind')).toEqual([
      {
        instanceId: 'i-1',
        bindingId: 'b-1',
        serviceId: SERVICE_ID,
        planId: PLANS.sync,
        acceptsIncomplete: false,
      },
    ]);
  });

  test('GIVEN an async-binding plan WHEN unbound with accepts_incomplete THEN 202 {operation}, repeated: the same (row 84)', async () => {
    const { osb, broker } = testApi();
    broker.respond.unbind = async () => ({ kind: 'accepted', operation: 'unbind:run-4' });
    const first = await osb.delete(unbindPath(PLANS.asyncBinding, '&accepts_incomplete=true'));
    const again = await osb.delete(unbindPath(PLANS.asyncBinding, '&accepts_incomplete=true'));
    expect([first.status, first.body, again.status, again.body]).toEqual([
      202,
      { operation: 'unbind:run-4' },
      202,
      { operation: 'unbind:run-4' },
    ]);
  });

  test('GIVEN an async-binding plan at 2.14+ WHEN unbound without accepts_incomplete THEN 422 AsyncRequired', async () => {
    const { osb, broker } = testApi();
    const res = await osb.delete(unbindPath(PLANS.asyncBinding));
    expect([res.status, res.body.error]).toEqual([422, 'AsyncRequired']);
    expect(broker.calls).toEqual([]);
  });

  test.each([
    ['no plan_id', `${PATH}?service_id=${SERVICE_ID}`, 'The plan_id query parameter is required.'],
    [
      'an empty service_id',
      `${PATH}?service_id=&plan_id=${PLANS.sync}`,
      'The service_id query parameter is required.',
    ],
  ])('GIVEN %s WHEN unbound THEN 400 (row 82)', async (_n, path, description) => {
    const { osb, broker } = testApi();
    const res = await osb.delete(path);
    expect([res.status, res.body]).toEqual([400, { error: 'BadRequest', description }]);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN no such binding WHEN the broker says gone THEN 410 {} (row 83)', async () => {
    const { osb } = testApi();
    const res = await osb.delete(unbindPath(PLANS.sync));
    expect([res.status, res.body]).toEqual([410, {}]);
  });
});

describe('GET …/service_bindings/:binding_id', () => {
  test('GIVEN a binding that succeeded WHEN fetched THEN 200 with credentials and parameters (row 78)', async () => {
    const { osb, broker } = testApi();
    broker.bindings.set('i-1/b-1', {
      bindingId: 'b-1',
      instanceId: 'i-1',
      serviceId: SERVICE_ID,
      planId: PLANS.sync,
      parameters: { role: 'reader' },
      operation: { type: 'bind', state: 'succeeded' },
      response: { credentials: { password: 'p' }, syslog_drain_url: 'syslog://drain' },
    });
    const res = await osb.get(PATH);
    expect([res.status, res.body]).toEqual([
      200,
      { credentials: { password: 'p' }, syslog_drain_url: 'syslog://drain', parameters: { role: 'reader' } },
    ]);
    expect(broker.calls).toEqual([{ method: 'getBinding', args: ['i-1', 'b-1'] }]);
  });

  test.each([
    ['unknown', undefined, 'The service binding does not exist.'],
    [
      'still being created',
      { type: 'bind', state: 'in progress' },
      'The service binding is still being created.',
    ],
    ['whose bind failed', { type: 'bind', state: 'failed' }, 'The service binding does not exist.'],
    ['unbound', { type: 'unbind', state: 'succeeded' }, 'The service binding does not exist.'],
  ] as const)('GIVEN a binding %s WHEN fetched THEN 404 (row 79)', async (name, operation, description) => {
    const { osb, broker } = testApi();
    if (name !== 'unknown') {
      broker.bindings.set('i-1/b-1', {
        bindingId: 'b-1',
        instanceId: 'i-1',
        serviceId: SERVICE_ID,
        planId: PLANS.sync,
        operation: operation!,
      });
    }
    const res = await osb.get(PATH);
    expect([res.status, res.body]).toEqual([404, { error: 'NotFound', description }]);
  });
});

describe('GET …/service_bindings/:binding_id/last_operation', () => {
  test('GIVEN a bind in progress WHEN polled THEN 200 {state, description} with Retry-After, no instance flags (row 77)', async () => {
    const { osb, broker } = testApi();
    broker.lastOperations.set('i-1/b-1', {
      state: 'in progress',
      description: 'Creating the user.',
      instanceUsable: true,
      retryAfterSeconds: 5,
    });
    const res = await osb.get(`${PATH}/last_operation?operation=bind%3Arun-2&service_id=${SERVICE_ID}`);
    expect([res.status, res.body, res.headers['retry-after']]).toEqual([
      200,
      { state: 'in progress', description: 'Creating the user.' },
      '5',
    ]);
    expect(broker.calls).toEqual([{ method: 'bindingLastOperation', args: ['i-1', 'b-1', 'bind:run-2'] }]);
  });

  test('GIVEN an unknown binding WHEN polled THEN 404 (row 77)', async () => {
    const { osb } = testApi();
    const res = await osb.get(`${PATH}/last_operation`);
    expect([res.status, res.body]).toEqual([
      404,
      { error: 'NotFound', description: 'The service binding does not exist.' },
    ]);
  });
});
