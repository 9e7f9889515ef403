import {
  crdActions,
  crdsMissing,
  onboardingCondition,
  sisterCrds,
  type DesiredCrd,
  type InstalledCrd,
  type OnboardingOutcome,
} from '../../../src/clusters/onboarding.js';
import type { ConditionFacts } from '../../../src/resources/conditions.js';
import type { SFCluster } from '../../../src/resources/types.js';

const RBAC_HINT =
  'grant its identity get, create and patch on customresourcedefinitions.apiextensions.k8s.io there (docs/operations.md, "Onboarding a sister cluster")';

describe('sisterCrds: what a sister gets of our CRDs', () => {
  test("GIVEN the chart's CRDs THEN only those of osb.servicefabrik.io, in their order", () => {
    const crds = [
      { name: 'sfclusters', spec: { group: 'resource.servicefabrik.io' } },
      { name: 'sfplans', spec: { group: 'osb.servicefabrik.io' } },
      { name: 'postgresqls', spec: { group: 'acid.zalan.do' } },
      { name: 'sfservices', spec: { group: 'osb.servicefabrik.io' } },
    ];
    expect(sisterCrds(crds).map((c) => c.name)).toEqual(['sfplans', 'sfservices']);
  });
});

describe('crdActions: create what is missing, upgrade what differs, never delete', () => {
  const desired: DesiredCrd[] = [
    { name: 'sfplans.osb.servicefabrik.io', digest: 'p2' },
    { name: 'sfservices.osb.servicefabrik.io', digest: 's1' },
  ];
  test.each<[string, InstalledCrd[], string[]]>([
    ['a fresh cluster: both created', [], ['create', 'create']],
    [
      'both current',
      [
        { name: 'sfplans.osb.servicefabrik.io', digest: 'p2', established: true },
        { name: 'sfservices.osb.servicefabrik.io', digest: 's1', established: true },
      ],
      ['current', 'current'],
    ],
    [
      'an older definition, and one installed by other means (no digest): both upgraded',
      [
        { name: 'sfplans.osb.servicefabrik.io', digest: 'p1', established: true },
        { name: 'sfservices.osb.servicefabrik.io', established: true },
      ],
      ['upgrade', 'upgrade'],
    ],
    [
      'one missing, and CRDs of others there: only ours acted on, nothing deleted',
      [
        { name: 'sfservices.osb.servicefabrik.io', digest: 's1', established: false },
        { name: 'postgresqls.acid.zalan.do', established: true },
      ],
      ['create', 'current'],
    ],
  ])('GIVEN %s', (_name, installed, expected) => {
    const actions = crdActions(desired, installed);
    expect(actions.map((a) => a.name)).toEqual(desired.map((d) => d.name));
    expect(actions.map((a) => a.action)).toEqual(expected);
  });
});

describe('onboardingCondition: the CrdsInstalled condition', () => {
  test.each<[string, OnboardingOutcome, ConditionFacts]>([
    [
      'installed now',
      { kind: 'installed', crds: ['a', 'b'], created: ['a'], upgraded: ['b'] },
      {
        type: 'CrdsInstalled',
        status: 'True',
        reason: 'Installed',
        message: 'the CRDs a, b are established (created a; upgraded b)',
      },
    ],
    [
      'current already',
      { kind: 'installed', crds: ['a', 'b'], created: [], upgraded: [] },
      {
        type: 'CrdsInstalled',
        status: 'True',
        reason: 'Installed',
        message: 'the CRDs a, b are established',
      },
    ],
    [
      'not established yet',
      { kind: 'not-established', pending: ['b'] },
      {
        type: 'CrdsInstalled',
        status: 'False',
        reason: 'NotEstablished',
        message:
          'the CRDs b are applied but not established yet; no instance is placed on the cluster until they are',
      },
    ],
    [
      'forbidden, not served',
      { kind: 'forbidden', error: 'customresourcedefinitions is forbidden', served: false },
      {
        type: 'CrdsInstalled',
        status: 'False',
        reason: 'Forbidden',
        message: `the worker may not install our CRDs on this cluster (customresourcedefinitions is forbidden); no instance is placed on the cluster until it may: ${RBAC_HINT}`,
      },
    ],
    [
      'forbidden, but served (installed by other means)',
      { kind: 'forbidden', error: 'forbidden', served: true },
      {
        type: 'CrdsInstalled',
        status: 'True',
        reason: 'InstalledByOthers',
        message: `our kinds are served, but the worker may not manage the CRDs on this cluster, so they are not upgraded with it (forbidden); to let it, ${RBAC_HINT}`,
      },
    ],
    [
      'failed',
      { kind: 'failed', error: 'connect ECONNREFUSED' },
      {
        type: 'CrdsInstalled',
        status: 'False',
        reason: 'InstallFailed',
        message:
          'installing our CRDs on this cluster failed (connect ECONNREFUSED); no instance is placed on the cluster until they are installed',
      },
    ],
  ])('GIVEN %s', (_name, outcome, expected) => {
    expect(onboardingCondition(outcome)).toEqual(expected);
    // What is not transient replaces the condition written last.
    expect(onboardingCondition(outcome, { status: 'True' })).toEqual(expected);
  });

  test('GIVEN a transient failure (no answer, 429, 5xx) THEN the condition written last stands; without one, it is reported', () => {
    const outcome: OnboardingOutcome = {
      kind: 'failed',
      error: 'storage is (re)initializing',
      transient: true,
    };
    expect(onboardingCondition(outcome, { status: 'True' })).toBeUndefined();
    expect(onboardingCondition(outcome, { status: 'False' })).toBeUndefined();
    expect(onboardingCondition(outcome)).toMatchObject({ status: 'False', reason: 'InstallFailed' });
  });
});

describe('crdsMissing: why a cluster lacks our CRDs, from its status', () => {
  const withCondition = (status?: 'True' | 'False'): Pick<SFCluster, 'status'> => ({
    status: {
      phase: 'running',
      conditions: status
        ? [{ type: 'CrdsInstalled', status, reason: 'Forbidden', message: 'may not' }]
        : [{ type: 'Ready', status: 'True' }],
    },
  });
  test.each<[string, Pick<SFCluster, 'status'>, string | undefined]>([
    ['False: its message', withCondition('False'), 'may not'],
    ['True: nothing', withCondition('True'), undefined],
    ['not reported (the master, or not onboarded yet): nothing', withCondition(), undefined],
    ['no status at all: nothing', {}, undefined],
  ])('GIVEN %s', (_name, cluster, expected) => {
    expect(crdsMissing(cluster)).toBe(expected);
  });
});
