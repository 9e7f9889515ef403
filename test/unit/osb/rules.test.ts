/** The OSB request rules over the catalog. Pure and table-driven. */
import { catalogLookup } from '../../../src/osb/catalog.js';
import { isOsbError } from '../../../src/osb/errors.js';
import {
  bindingAcceptsIncomplete,
  checkBindable,
  checkBindingRotation,
  checkContextUpdate,
  checkPredecessorBinding,
  checkMaintenanceInfo,
  checkPlanChange,
  checkPlanOpen,
  checkRequiresApp,
  checkUpdate,
  isDeprecated,
  requireAsyncSupport,
  resolvePlan,
  resolveService,
  type UpdateChanges,
} from '../../../src/osb/rules.js';
import { parseApiVersion } from '../../../src/osb/version.js';
import type { InstanceView, UpdateRequest } from '../../../src/osb/service-broker.js';
import type { SFPlan, SFService, SFServiceBinding } from '../../../src/resources/types.js';
import { osbError, resultOrOsbError } from '../../support/osb-error.js';

const service = (spec: Partial<SFService['spec']> = {}): SFService => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFService',
  metadata: { name: 's-1' },
  spec: { id: 's-1', name: 'pg', description: 'd', bindable: true, ...spec },
});
const plan = (id: string, spec: Partial<SFPlan['spec']> = {}): SFPlan => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: { name: id },
  spec: { id, name: id, description: 'd', serviceId: 's-1', templates: [], ...spec },
});

/** The body of the OsbError `fn` throws, with its status; `undefined` when it returns. */
const outcome = (fn: () => unknown): [number, unknown] | undefined => {
  const result = resultOrOsbError(fn);
  return isOsbError(result) ? [result.status, result.toBody()] : undefined;
};

describe('resolveService and resolvePlan', () => {
  const lookup = catalogLookup(
    [service(), { ...service(), spec: { ...service().spec, id: 's-2', name: 'other' } }],
    [plan('p-1'), plan('p-2', { serviceId: 's-2' })],
  );

  test('GIVEN ids of the catalog THEN the service and plan', () => {
    expect(resolvePlan(lookup, 's-1', 'p-1')).toEqual({ service: service(), plan: plan('p-1') });
    expect(resolveService(lookup, 's-2').spec.name).toBe('other');
  });

  test.each([
    ['an unknown service', 'nope', 'p-1', "service_id nope is not a service of this broker's catalog."],
    ['an unknown plan', 's-1', 'nope', "plan_id nope is not a plan of this broker's catalog."],
    [
      'a plan of another service',
      's-1',
      'p-2',
      'plan_id p-2 (plan p-2) does not belong to service_id s-1 (service pg).',
    ],
  ])('GIVEN %s THEN 400', (_n, serviceId, planId, description) => {
    expect(outcome(() => resolvePlan(lookup, serviceId, planId))).toEqual([
      400,
      { error: 'BadRequest', description },
    ]);
  });
});

describe('requireAsyncSupport', () => {
  test.each([
    [{ async: true }, false, 422],
    [{ async: true }, true, undefined],
    [{ async: false }, false, undefined],
    [undefined, false, undefined],
  ])('GIVEN manager %p and accepts_incomplete %s THEN %p', (manager, accepts, status) => {
    const p = plan('p-1', manager ? { manager } : {});
    expect(outcome(() => requireAsyncSupport(p, accepts))?.[0]).toBe(status);
  });

  test('GIVEN an async plan without accepts_incomplete THEN AsyncRequired that names the plan', () => {
    expect(outcome(() => requireAsyncSupport(plan('big', { manager: { async: true } }), false))).toEqual([
      422,
      {
        error: 'AsyncRequired',
        description:
          'Plan big runs provision, update and deprovision asynchronously; send accepts_incomplete=true.',
      },
    ]);
  });
});

describe('bindingAcceptsIncomplete', () => {
  const asyncBinding = plan('ab', { manager: { asyncBinding: true } });
  const syncBinding = plan('sb');
  test.each([
    ['2.17', asyncBinding, true, true],
    ['2.14', asyncBinding, true, true],
    ['2.17', syncBinding, true, true],
    ['2.17', syncBinding, false, false],
    ['2.13', asyncBinding, true, false],
    ['2.13', asyncBinding, false, false],
    ['2.12', syncBinding, true, false],
  ])(
    'GIVEN version %s, plan %s and accepts_incomplete %s THEN the service layer gets %s',
    (version, p, accepts, expected) => {
      expect(bindingAcceptsIncomplete(p, accepts, parseApiVersion(version))).toBe(expected);
    },
  );

  test('GIVEN an async-binding plan at 2.14+ without accepts_incomplete THEN 422 AsyncRequired', () => {
    expect(outcome(() => bindingAcceptsIncomplete(asyncBinding, false, parseApiVersion('2.14')))).toEqual([
      422,
      {
        error: 'AsyncRequired',
        description: 'Plan ab creates and deletes bindings asynchronously; send accepts_incomplete=true.',
      },
    ]);
  });
});

describe('checkMaintenanceInfo', () => {
  const maintained = plan('m', { maintenance_info: { version: '2.0.0' } });
  test.each([
    ['no maintenance_info', maintained, undefined, undefined],
    ['an empty version', maintained, { version: '' }, undefined],
    ['the plan’s version', maintained, { version: '2.0.0' }, undefined],
    [
      'another version',
      maintained,
      { version: '1.0.0' },
      'maintenance_info.version 1.0.0 is not the current version 2.0.0 of plan m; fetch the catalog again.',
    ],
    [
      'a version for a plan without one',
      plan('p'),
      { version: '1.0.0' },
      'Plan p has no maintenance_info; maintenance_info.version 1.0.0 cannot be applied.',
    ],
  ])('GIVEN %s THEN %p', (_n, p, requested, description) => {
    expect(outcome(() => checkMaintenanceInfo(p, requested))).toEqual(
      description ? [422, { error: 'MaintenanceInfoConflict', description }] : undefined,
    );
  });
});

describe('checkPlanChange', () => {
  const s = (planUpdatable?: boolean) => service(planUpdatable === undefined ? {} : { planUpdatable });
  test.each([
    ['the same plan', s(false), plan('a'), plan('a'), undefined],
    ['a service that allows it', s(true), plan('a'), plan('b'), undefined],
    [
      'a service that says nothing (default false)',
      s(),
      plan('a'),
      plan('b'),
      'Plan a does not allow changing the plan of its instances (plan_updateable is false).',
    ],
    [
      'a plan that allows it in a service that does not',
      s(false),
      plan('a', { planUpdatable: true }),
      plan('b'),
      undefined,
    ],
    [
      'a plan that forbids it in a service that allows it',
      s(true),
      plan('a', { planUpdatable: false }),
      plan('b'),
      'Plan a does not allow changing the plan of its instances (plan_updateable is false).',
    ],
    [
      'a target that lists the current plan',
      s(true),
      plan('a'),
      plan('b', { update_predecessors: ['a'] }),
      undefined,
    ],
    [
      'a target that lists other plans',
      s(true),
      plan('a'),
      plan('b', { update_predecessors: ['x', 'y'] }),
      'Instances of plan a cannot be updated to plan b; it accepts instances of x, y only.',
    ],
    [
      'a target that lists none',
      s(true),
      plan('a'),
      plan('b', { update_predecessors: [] }),
      'Instances of plan a cannot be updated to plan b; it accepts instances of no other plan only.',
    ],
    ['a current plan gone from the catalog, service allows', s(true), undefined, plan('b'), undefined],
    [
      'a current plan gone from the catalog, service forbids',
      s(false),
      undefined,
      plan('b'),
      'Service pg does not allow changing the plan of its instances (plan_updateable is false).',
    ],
  ])('GIVEN %s THEN %p', (_n, svc, from, to, description) => {
    expect(outcome(() => checkPlanChange(svc, from, to))).toEqual(
      description ? [400, { error: 'PlanChangeNotSupported', description }] : undefined,
    );
  });
});

describe('checkContextUpdate', () => {
  const none: UpdateChanges = {
    planChange: false,
    parameters: false,
    maintenanceInfo: false,
    context: false,
  };
  test.each([
    ['only the context, not allowed', false, { ...none, context: true }, 400],
    ['only the context, allowed', true, { ...none, context: true }, undefined],
    ['the context with parameters', false, { ...none, context: true, parameters: true }, undefined],
    ['the context with a plan change', false, { ...none, context: true, planChange: true }, undefined],
    [
      'the context with maintenance_info',
      false,
      { ...none, context: true, maintenanceInfo: true },
      undefined,
    ],
    ['nothing at all', false, none, undefined],
  ])('GIVEN %s THEN %p', (_n, allow, changes, status) => {
    expect(outcome(() => checkContextUpdate(service({ allowContextUpdates: allow }), changes))?.[0]).toBe(
      status,
    );
  });
});

describe('binding rules', () => {
  test.each([
    ['a bindable service, plan silent', service({ bindable: true }), plan('p'), undefined],
    [
      'a bindable service, plan not bindable',
      service({ bindable: true }),
      plan('p', { bindable: false }),
      400,
    ],
    [
      'a non-bindable service, plan bindable',
      service({ bindable: false }),
      plan('p', { bindable: true }),
      undefined,
    ],
    ['a non-bindable service, plan silent', service({ bindable: false }), plan('p'), 400],
  ])('checkBindable: GIVEN %s THEN %p', (_n, svc, p, status) => {
    expect(outcome(() => checkBindable(svc, p))?.[0]).toBe(status);
  });

  test.each([
    [{ requiresApp: true }, undefined, 422],
    [{ requiresApp: true }, 'app-1', undefined],
    [{}, undefined, undefined],
  ])('checkRequiresApp: GIVEN manager %p and app_guid %p THEN %p', (manager, appGuid, status) => {
    expect(outcome(() => checkRequiresApp(plan('p', { manager }), appGuid))?.[0]).toBe(status);
  });

  test.each([
    ['a plan without bindingRotatable', plan('p'), 'b-0', 'Plan p is not binding_rotatable'],
    [
      'a plan with bindingRotatable false',
      plan('p', { bindingRotatable: false }),
      'b-0',
      'Plan p is not binding_rotatable',
    ],
    ['a rotatable plan', plan('p', { bindingRotatable: true }), 'b-0', undefined],
    ['no predecessor on a plan that is not rotatable', plan('p'), undefined, undefined],
  ])('checkBindingRotation: GIVEN %s THEN %p', (_n, p, predecessor, description) => {
    expect(outcome(() => checkBindingRotation(p, predecessor))).toEqual(
      description && [
        400,
        {
          error: 'BindingRotationNotSupported',
          description: `${description}; predecessor_binding_id cannot be used.`,
        },
      ],
    );
  });
});

describe('checkPredecessorBinding', () => {
  const now = new Date('2026-11-24T21:00:00Z');
  const binding = (
    fields: { instanceId?: string; expiresAt?: string; deleting?: boolean } = {},
    status: SFServiceBinding['status'] | null = { state: 'succeeded', operation: 'bind' },
  ): SFServiceBinding => ({
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFServiceBinding',
    metadata: {
      name: 'b-0',
      namespace: 'sf-i-1',
      ...(fields.deleting ? { deletionTimestamp: '2026-11-24T20:00:00Z' } : {}),
    },
    spec: {
      id: 'b-0',
      instanceId: fields.instanceId ?? 'i-1',
      serviceId: 's-1',
      planId: 'p',
      ...(fields.expiresAt ? { expiresAt: fields.expiresAt } : {}),
    },
    ...(status ? { status } : {}),
  });
  const refused = (why: string) => [
    400,
    { error: 'InvalidPredecessorBinding', description: `predecessor_binding_id b-0 ${why}` },
  ];

  test.each([
    ['a binding of the instance that works', binding(), undefined],
    ['a binding that expires later', binding({ expiresAt: '2026-11-24T21:00:01Z' }), undefined],
    [
      'a binding that is itself a successor (its record names a predecessor)',
      { ...binding(), spec: { ...binding().spec, predecessorBindingId: 'b-older' } },
      undefined,
    ],
    ['no binding', undefined, refused('names no binding of this service instance.')],
    [
      'a binding of another instance',
      binding({ instanceId: 'i-2' }),
      refused(
        'names a binding of another service instance; only a binding of the same service instance can be rotated.',
      ),
    ],
    [
      'a binding whose record is being deleted',
      binding({ deleting: true }),
      refused('names a binding that is being deleted; rotate a binding that is in use.'),
    ],
    [
      'a binding being unbound',
      binding({}, { state: 'delete', operation: 'unbind' }),
      refused('names a binding that is being deleted; rotate a binding that is in use.'),
    ],
    [
      'a binding whose unbind failed',
      binding({}, { state: 'failed', operation: 'unbind' }),
      refused('names a binding whose unbind failed; rotate a binding that is in use.'),
    ],
    [
      'a binding whose bind failed',
      binding({}, { state: 'failed', operation: 'bind' }),
      refused('names a binding whose bind failed; it has nothing to rotate.'),
    ],
    [
      'a binding still being created',
      binding({}, { state: 'in progress', operation: 'bind' }),
      refused('names a binding that is still being created; rotate it once its bind has succeeded.'),
    ],
    [
      'a binding without a status yet',
      binding({}, null),
      refused('names a binding that is still being created; rotate it once its bind has succeeded.'),
    ],
    [
      'a binding that has expired',
      binding({ expiresAt: '2026-11-24T20:59:59.000Z' }),
      refused(
        'names a binding that expired at 2026-11-24T20:59:59.000Z; an expired binding cannot be rotated.',
      ),
    ],
    [
      'a binding that expires right now',
      binding({ expiresAt: '2026-11-24T21:00:00.000Z' }),
      refused(
        'names a binding that expired at 2026-11-24T21:00:00.000Z; an expired binding cannot be rotated.',
      ),
    ],
  ])('GIVEN %s THEN the answer', (_n, found, expected) => {
    expect(outcome(() => checkPredecessorBinding('i-1', 'b-0', found, now))).toEqual(expected);
  });
});

describe('checkUpdate', () => {
  const lookup = catalogLookup(
    [
      service({ planUpdatable: true }),
      { ...service(), spec: { ...service().spec, id: 's-2', name: 'other' } },
    ],
    [
      plan('p-1'),
      plan('p-2'),
      plan('p-async', { manager: { async: true } }),
      plan('p-fixed', { planUpdatable: false }),
      plan('p-maintained', { maintenance_info: { version: '2.0.0' } }),
      plan('p-schema', {
        schemas: {
          service_instance: {
            update: {
              parameters: { type: 'object', properties: { size: { type: 'integer', maximum: 10 } } },
            },
          },
        },
      }),
      plan('p-other', { serviceId: 's-2' }),
    ],
  );
  const instance = (planId: string, more: Partial<InstanceView> = {}): InstanceView => ({
    instanceId: 'i-1',
    serviceId: 's-1',
    planId,
    operation: { type: 'provision', state: 'succeeded' },
    ...more,
  });
  const running = (type: 'provision' | 'update' | 'deprovision') => ({
    operation: { type, state: 'in progress' as const },
  });
  /** The plan the update runs on, or the OsbError's status and body. */
  const decide = (view: InstanceView | undefined, request: Partial<UpdateRequest>) => {
    const req: UpdateRequest = { instanceId: 'i-1', serviceId: 's-1', acceptsIncomplete: false, ...request };
    const result = resultOrOsbError(() => checkUpdate(lookup, view, req));
    return isOsbError(result) ? [result.status, result.toBody()] : result.spec.id;
  };

  test.each([
    ['parameters of an instance', instance('p-1'), { parameters: { a: 1 } }, 'p-1'],
    ['a move to another plan', instance('p-1'), { planId: 'p-2' }, 'p-2'],
    ['an update running (this request again, maybe)', instance('p-1', running('update')), {}, 'p-1'],
    ['a failed provision', instance('p-1', { operation: { type: 'provision', state: 'failed' } }), {}, 'p-1'],
    [
      'no instance',
      undefined,
      { parameters: {} },
      [404, { error: 'NotFound', description: 'The service instance does not exist.' }],
    ],
    [
      'an instance of another service',
      instance('p-other', { serviceId: 's-2' }),
      {},
      [400, { error: 'BadRequest', description: 'The service instance belongs to service_id s-2, not s-1.' }],
    ],
    [
      'a provision running',
      instance('p-1', running('provision')),
      {},
      [
        422,
        {
          error: 'ConcurrencyError',
          description: 'The service instance is being provisioned; update it when that has finished.',
        },
      ],
    ],
    [
      'a deprovision running',
      instance('p-1', running('deprovision')),
      {},
      [
        422,
        {
          error: 'ConcurrencyError',
          description: 'The service instance is being deprovisioned; update it when that has finished.',
        },
      ],
    ],
    [
      'a plan gone from the catalog, none named',
      instance('p-gone'),
      { parameters: {} },
      [
        400,
        {
          error: 'BadRequest',
          description:
            'The plan p-gone of the service instance is no longer in the catalog; name a plan_id to move it to.',
        },
      ],
    ],
    ['a plan gone from the catalog, a move named', instance('p-gone'), { planId: 'p-2' }, 'p-2'],
    [
      'an asynchronous plan without accepts_incomplete',
      instance('p-async'),
      { parameters: {} },
      [
        422,
        {
          error: 'AsyncRequired',
          description:
            'Plan p-async runs provision, update and deprovision asynchronously; send accepts_incomplete=true.',
        },
      ],
    ],
    [
      'an asynchronous plan with accepts_incomplete',
      instance('p-async'),
      { parameters: {}, acceptsIncomplete: true },
      'p-async',
    ],
    [
      'a move from a plan that forbids it',
      instance('p-fixed'),
      { planId: 'p-1' },
      [
        400,
        {
          error: 'PlanChangeNotSupported',
          description:
            'Plan p-fixed does not allow changing the plan of its instances (plan_updateable is false).',
        },
      ],
    ],
    ['the same plan named again', instance('p-fixed'), { planId: 'p-fixed' }, 'p-fixed'],
    [
      'only the context, which the service does not allow',
      instance('p-1'),
      { context: { name: 'new' } },
      [
        400,
        {
          error: 'ContextUpdateNotSupported',
          description:
            'Service pg does not allow updates that change only the context (allow_context_updates is false).',
        },
      ],
    ],
    [
      'the recorded context repeated (keys in another order), the same plan named, no parameters',
      instance('p-1', { context: { platform: 'kubernetes', namespace: 'ns' } }),
      { planId: 'p-1', context: { namespace: 'ns', platform: 'kubernetes' } },
      'p-1',
    ],
    [
      'a context that differs from the recorded one, which the service does not allow',
      instance('p-1', { context: { platform: 'kubernetes', namespace: 'ns' } }),
      { context: { platform: 'kubernetes', namespace: 'other' } },
      [
        400,
        {
          error: 'ContextUpdateNotSupported',
          description:
            'Service pg does not allow updates that change only the context (allow_context_updates is false).',
        },
      ],
    ],
    [
      'maintenance_info other than the plan’s',
      instance('p-maintained'),
      { maintenanceInfo: { version: '1.0.0' } },
      [
        422,
        {
          error: 'MaintenanceInfoConflict',
          description:
            'maintenance_info.version 1.0.0 is not the current version 2.0.0 of plan p-maintained; fetch the catalog again.',
        },
      ],
    ],
    [
      'maintenance_info checked against the plan moved to',
      instance('p-1'),
      { planId: 'p-maintained', maintenanceInfo: { version: '2.0.0' } },
      'p-maintained',
    ],
    [
      'parameters against the update schema',
      instance('p-schema'),
      { parameters: { size: 11 } },
      [
        400,
        {
          error: 'InvalidParameters',
          description:
            'The parameters do not match the service_instance.update.parameters schema of plan p-schema: parameters.size must be <= 10.',
        },
      ],
    ],
    [
      'a named plan of another service',
      instance('p-1'),
      { planId: 'p-other' },
      [
        400,
        {
          error: 'BadRequest',
          description: 'plan_id p-other (plan p-other) does not belong to service_id s-1 (service pg).',
        },
      ],
    ],
  ] as const)('GIVEN %s THEN the plan it runs on, or the error', (_n, view, request, expected) => {
    expect(decide(view, request)).toEqual(expected);
  });
});

describe('deprecated plans and plans being deleted', () => {
  const deprecated = plan('p-old', { metadata: { state: 'deprecated' }, planUpdatable: true });
  const current = plan('p-new');
  const deleting = (o: SFPlan): SFPlan => ({
    ...o,
    metadata: { ...o.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
  });

  test.each([
    ['a deprecated plan', service(), deprecated, 'is deprecated'],
    ['a plan being deleted', service(), deleting(current), 'is being removed from the catalog'],
    [
      'a plan of a service being deleted',
      { ...service(), metadata: { name: 's-1', deletionTimestamp: '2026-01-01T00:00:00Z' } },
      current,
      'belongs to a service being removed from the catalog',
    ],
  ])('GIVEN %s THEN it takes no new instance: 403 PlanNotAvailable', (_, s, p, why) => {
    expect(isDeprecated(p)).toBe(p === deprecated);
    const err = osbError(() => checkPlanOpen(s, p));
    expect([err.status, err.code]).toEqual([403, 'PlanNotAvailable']);
    expect(err.description).toContain(`Plan ${p.spec.name} of service pg ${why}`);
  });

  test('GIVEN a current plan THEN it takes new instances', () => {
    expect(checkPlanOpen(service(), current)).toBeUndefined();
  });

  const lookup = catalogLookup(
    [service({ planUpdatable: true })],
    [deprecated, current, deleting(plan('p-gone'))],
  );
  const instance = (planId: string): InstanceView => ({
    instanceId: 'i-1',
    serviceId: 's-1',
    planId,
    operation: { type: 'provision', state: 'succeeded' },
  });
  const request = (planId?: string, parameters?: Record<string, unknown>): UpdateRequest => ({
    instanceId: 'i-1',
    serviceId: 's-1',
    acceptsIncomplete: true,
    ...(planId ? { planId } : {}),
    ...(parameters ? { parameters } : {}),
  });

  test('GIVEN an instance of a deprecated plan THEN it can move away, and be updated in place', () => {
    expect(checkUpdate(lookup, instance('p-old'), request('p-new')).spec.id).toBe('p-new');
    expect(checkUpdate(lookup, instance('p-old'), request(undefined, { size: 'm' })).spec.id).toBe('p-old');
  });

  test('GIVEN an instance of a plan being deleted THEN it can be updated in place', () => {
    expect(checkUpdate(lookup, instance('p-gone'), request(undefined, { size: 'm' })).spec.id).toBe('p-gone');
  });

  test.each(['p-old', 'p-gone'])('GIVEN a move to %s THEN 403 PlanNotAvailable', (target) => {
    const err = osbError(() => checkUpdate(lookup, instance('p-new'), request(target)));
    expect([err.status, err.code]).toEqual([403, 'PlanNotAvailable']);
  });
});
