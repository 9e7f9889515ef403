/** The platform of a request's path, and which services and plans each platform is offered. */
import {
  catalogForPlatform,
  checkOfferedOn,
  offeredOn,
  platformRoute,
  type BrokerPlatform,
} from '../../../src/osb/platforms.js';
import { planVariant, serviceVariant } from '../../fixtures/catalog/index.js';

describe('offeredOn', () => {
  test.each<[string, string[] | undefined, BrokerPlatform | undefined, boolean]>([
    ['no field: every platform', undefined, 'k8s', true],
    ['an empty list: every platform', [], 'sm', true],
    ['listed', ['cf', 'sm'], 'cf', true],
    ['not listed', ['cf', 'sm'], 'k8s', false],
    ['a plain /v2 request sees everything', ['cf'], undefined, true],
  ])('GIVEN %s THEN %p', (_name, supported, platform, expected) => {
    expect(offeredOn(supported ? { supported_platform: supported } : {}, platform)).toBe(expected);
  });
});

describe('catalogForPlatform', () => {
  const everywhere = serviceVariant({ id: 's-all', name: 'all' });
  const cfOnly = serviceVariant({ id: 's-cf', name: 'cf-only', supported_platform: ['cf'] });
  const plans = [
    planVariant('p-any', 'any', { serviceId: 's-all' }),
    planVariant('p-k8s', 'k8s', { serviceId: 's-all', supported_platform: ['k8s'] }),
    planVariant('p-cf', 'cf', { serviceId: 's-cf' }),
  ];
  test.each<[BrokerPlatform | undefined, string[], string[]]>([
    [undefined, ['s-all', 's-cf'], ['p-any', 'p-k8s', 'p-cf']],
    ['cf', ['s-all', 's-cf'], ['p-any', 'p-cf']],
    ['k8s', ['s-all'], ['p-any', 'p-k8s']],
    ['sm', ['s-all'], ['p-any']],
  ])('GIVEN platform %p THEN services %p and plans %p', (platform, services, planIds) => {
    const shown = catalogForPlatform([everywhere, cfOnly], plans, platform);
    expect([shown.services.map((s) => s.spec.id), shown.plans.map((p) => p.spec.id)]).toEqual([
      services,
      planIds,
    ]);
  });
});

describe('checkOfferedOn', () => {
  const service = serviceVariant({ id: 's-1', name: 'pg' });
  test('GIVEN a plan offered on cf only WHEN provisioned on k8s THEN 400 naming the platforms', () => {
    const plan = planVariant('p-1', 'small', { serviceId: 's-1', supported_platform: ['cf', 'sm'] });
    expect(() => checkOfferedOn(service, plan, { platform: 'k8s' })).toThrow(
      expect.objectContaining({
        status: 400,
        description: 'Plan small is not offered on platform k8s; it is offered on cf, sm.',
      }),
    );
    expect(() => checkOfferedOn(service, plan, { platform: 'cf' })).not.toThrow();
    expect(() => checkOfferedOn(service, plan, undefined)).not.toThrow();
  });

  test('GIVEN a service offered on sm only WHEN provisioned on cf THEN 400 naming the service', () => {
    const sm = serviceVariant({ id: 's-1', name: 'pg', supported_platform: ['sm'] });
    expect(() => checkOfferedOn(sm, planVariant('p-1', 'small'), { platform: 'cf' })).toThrow(
      expect.objectContaining({
        status: 400,
        description: 'Service pg is not offered on platform cf; it is offered on sm.',
      }),
    );
  });
});

describe('platformRoute', () => {
  test.each<[string | undefined, string | undefined, unknown]>([
    [undefined, undefined, undefined],
    ['cf', undefined, { platform: 'cf' }],
    ['sm', 'eu10', { platform: 'sm', region: 'eu10' }],
    ['k8s', 'us-east_1.a', { platform: 'k8s', region: 'us-east_1.a' }],
  ])('GIVEN platform %p and region %p THEN %p', (platform, region, expected) => {
    expect(platformRoute(platform, region)).toEqual(expected);
  });

  test.each([['-eu'], ['eu/10'], ['a'.repeat(64)], ['eu 10']])(
    'GIVEN region %p THEN 400 (it is kept as a label value)',
    (region) => {
      expect(() => platformRoute('cf', region)).toThrow(expect.objectContaining({ status: 400 }));
    },
  );
});
