import {
  buildScheduler,
  parsePlanSchedulers,
  parseSchedulerName,
  PLUGINS,
  schedule,
  SCHEDULER_NAMES,
  schedulerForPlan,
  SCHEDULERS,
  type SchedulerConfig,
  type SchedulingConfig,
} from '../../../src/scheduling/registry.js';
import { cluster, request } from './clusters.js';

const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return { name: (err as Error).name, message: (err as Error).message };
  }
  return undefined;
};

describe('the registry', () => {
  test('every plugin is registered under its own name', () => {
    expect(Object.keys(PLUGINS)).toEqual([
      'schedulable',
      'master',
      'round-robin',
      'least-utilized',
      'label-selector',
      'resource-aware',
    ]);
    for (const [name, factory] of Object.entries(PLUGINS)) expect(factory({}).name).toBe(name);
  });

  test.each(SCHEDULER_NAMES)('the %s scheduler is its plugins, schedulable first', (name) => {
    const built = buildScheduler(SCHEDULERS[name]);
    expect(built.name).toBe(name);
    expect(built.plugins[0]!.plugin.name).toBe('schedulable');
  });

  test.each<[string, string[]]>([
    ['default', ['schedulable', 'master']],
    ['round-robin', ['schedulable', 'round-robin']],
    ['least-utilized', ['schedulable', 'least-utilized']],
    ['label-selector', ['schedulable', 'label-selector', 'least-utilized']],
    ['resource-aware', ['schedulable', 'resource-aware']],
  ])('%s runs %j', (name, plugins) => {
    expect(buildScheduler(SCHEDULERS[parseSchedulerName(name)]).plugins.map((p) => p.plugin.name)).toEqual(
      plugins,
    );
  });

  test.each<[string, SchedulerConfig, string[]]>([
    [
      'schedulable is added when left out',
      { name: 'x', plugins: ['least-utilized'] },
      ['schedulable', 'least-utilized'],
    ],
    [
      'schedulable is not added twice',
      { name: 'x', plugins: ['label-selector', 'schedulable'] },
      ['label-selector', 'schedulable'],
    ],
    [
      'weights are kept',
      { name: 'x', plugins: [{ name: 'resource-aware', weight: 2 }, 'least-utilized'] },
      ['schedulable', 'resource-aware', 'least-utilized'],
    ],
  ])('configuration: %s', (_name, config, plugins) => {
    const built = buildScheduler(config);
    expect(built.plugins.map((p) => p.plugin.name)).toEqual(plugins);
  });

  test.each<[string, SchedulerConfig, string]>([
    [
      'an unknown plugin',
      { name: 'x', plugins: ['fastest'] },
      'scheduler x: unknown plugin "fastest"; known: schedulable, master, round-robin, least-utilized, label-selector, resource-aware',
    ],
    [
      'a name from the prototype',
      { name: 'x', plugins: ['constructor'] },
      'scheduler x: unknown plugin "constructor"',
    ],
    [
      'a zero weight',
      { name: 'x', plugins: [{ name: 'least-utilized', weight: 0 }] },
      'scheduler x: plugin least-utilized has weight 0; weights are positive',
    ],
  ])('configuration refused: %s', (_name, config, message) => {
    expect(errorOf(() => buildScheduler(config))).toEqual({
      name: 'SchedulerConfigError',
      message: expect.stringContaining(message),
    });
  });

  test("a configured combination: the selector's clusters, the most free capacity among them", () => {
    const decision = schedule({
      scheduler: { name: 'selector-and-room', plugins: ['label-selector', 'resource-aware'] },
      clusters: [
        cluster('1', { labels: { zone: 'eu' }, allocatable: { cpu: '2' } }),
        cluster('2', { labels: { zone: 'eu' }, allocatable: { cpu: '8' } }),
        cluster('3', { labels: { zone: 'us' }, allocatable: { cpu: '64' } }),
      ],
      request: { ...request, clusterSelector: 'zone=eu', requests: { cpu: '1' } },
    });
    expect(decision).toMatchObject({
      scheduler: 'selector-and-room',
      clusterId: '2',
      summary: 'chose 2: matches zone=eu, 8 CPU free; 1: matches zone=eu, 2 CPU free; 3: zone=us, not eu',
    });
  });

  test('an unknown scheduler name is refused with the known ones', () => {
    expect(errorOf(() => schedule({ scheduler: 'fastest' as never, clusters: [], request }))).toEqual({
      name: 'SchedulerConfigError',
      message:
        'unknown scheduler "fastest"; known: default, round-robin, least-utilized, label-selector, resource-aware',
    });
  });

  test('acceptPending reaches the schedulable filter', () => {
    const clusters = [cluster('1', { phase: 'pending' })];
    expect(schedule({ scheduler: 'default', clusters, request }).clusterId).toBeUndefined();
    expect(
      schedule({ scheduler: 'default', clusters, request, options: { acceptPending: true } }).clusterId,
    ).toBe('1');
  });
});

describe('choosing the scheduler of an instance', () => {
  const config: SchedulingConfig = { scheduler: 'least-utilized', plans: { big: 'resource-aware' } };

  test.each<[string, SchedulingConfig, string, string | undefined, string]>([
    ['nothing configured: default', {}, 'small', undefined, 'default'],
    ["the landscape's", config, 'small', undefined, 'least-utilized'],
    ['the configured override for the plan', config, 'big', undefined, 'resource-aware'],
    ["the configured override wins over the plan's own", config, 'big', 'round-robin', 'resource-aware'],
    ["the plan's own over the landscape's", config, 'small', 'label-selector', 'label-selector'],
    ['a blank plan scheduler counts as none', config, 'small', '  ', 'least-utilized'],
    ['a plan id from the prototype is no override', config, 'constructor', undefined, 'least-utilized'],
  ])('%s', (_name, given, planId, planScheduler, expected) => {
    expect(schedulerForPlan(given, planId, planScheduler)).toBe(expected);
  });

  test('a plan naming an unknown scheduler is refused, naming the plan', () => {
    expect(errorOf(() => schedulerForPlan(config, 'small', 'fastest'))).toEqual({
      name: 'SchedulerConfigError',
      message:
        'unknown scheduler "fastest" in plan small; known: default, round-robin, least-utilized, label-selector, resource-aware',
    });
  });

  test.each<[string, Record<string, string>]>([
    ['', {}],
    [' , ', {}],
    ['small=round-robin', { small: 'round-robin' }],
    [' small = round-robin , big=resource-aware ', { small: 'round-robin', big: 'resource-aware' }],
  ])('per-plan text %p', (text, plans) => {
    expect(parsePlanSchedulers(text)).toEqual(plans);
  });

  test.each<[string, string]>([
    ['small', 'INTEROP_PLAN_SCHEDULERS: "small" is not <plan id>=<scheduler>'],
    ['=round-robin', 'INTEROP_PLAN_SCHEDULERS: "=round-robin" is not <plan id>=<scheduler>'],
    ['small=fast', 'unknown scheduler "fast" in INTEROP_PLAN_SCHEDULERS (plan small); known:'],
  ])('per-plan text %p is refused', (text, message) => {
    expect(errorOf(() => parsePlanSchedulers(text, 'INTEROP_PLAN_SCHEDULERS'))?.message).toContain(message);
  });
});
