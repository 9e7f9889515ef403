import {
  clusterFigures,
  nextClusterStatus,
  type HealthInput,
  type ProbeResult,
} from '../../../src/clusters/health.js';
import type {
  ClusterCondition,
  SFCluster,
  SFClusterSpec,
  SFClusterStatus,
} from '../../../src/resources/types.js';

const NOW = new Date('2025-01-01T12:00:00.000Z');
const at = (secondsBefore: number) => new Date(NOW.getTime() - secondsBefore * 1000).toISOString();
const now = NOW.toISOString();
const THRESHOLD_MS = 60_000;

const ok: ProbeResult = { ok: true, version: 'v1.31.0' };
const down: ProbeResult = { ok: false, error: 'connect ECONNREFUSED 127.0.0.1:6443' };

/** The SFCluster's generation: every condition, and the status, describe it. */
const GENERATION = 4;

function cluster(status?: SFClusterStatus, spec: Partial<SFClusterSpec> = {}, deleting = false) {
  return {
    metadata: {
      name: '2',
      namespace: 'interoperator',
      generation: GENERATION,
      ...(deleting ? { deletionTimestamp: at(5) } : {}),
    },
    spec: { secretRef: '2-kubeconfig', totalCapacity: { cpu: '8', memory: '16Gi' }, ...spec },
    ...(status ? { status } : {}),
  } satisfies Pick<SFCluster, 'metadata' | 'spec' | 'status'>;
}

const condition =
  (type: string) =>
  (
    status: ClusterCondition['status'],
    reason: string,
    message: string,
    since = now,
    probed: string | null = now,
  ): ClusterCondition => ({
    type,
    status,
    ...(probed ? { lastProbeTime: probed } : {}),
    lastTransitionTime: since,
    reason,
    message,
    observedGeneration: GENERATION,
  });
const ready = condition('Ready');
const schedulable = condition('Schedulable');
const TRUE_OR_FALSE = (value: boolean) => (value ? 'True' : 'False');
/** Reconciling and Stalled (kstatus), new to the status: both since now. */
const progress = (
  reconciling: boolean,
  stalled: boolean,
  reason: string,
  message: string,
  probed: string | null = now,
): ClusterCondition[] => [
  condition('Reconciling')(TRUE_OR_FALSE(reconciling), reason, message, now, probed),
  condition('Stalled')(TRUE_OR_FALSE(stalled), reason, message, now, probed),
];
const ANSWERS = 'apiserver v1.31.0 answers';
const REFUSED = 'connect ECONNREFUSED 127.0.0.1:6443';
/** Being removed while the 3 instances of the previous status are placed there. */
const REMOVED =
  'the cluster is being removed, but 3 instances are still placed on it: they are drained off the cluster where their plan allows a move, else deprovision them; the SFCluster stays until none is left';

const REACHABLE = ['True', 'Reachable', 'apiserver v1.31.0 answers'] as const;
const UNREACHABLE = ['False', 'Unreachable', 'connect ECONNREFUSED 127.0.0.1:6443'] as const;
const SCHEDULABLE = ['True', 'Schedulable', 'new instances may be placed on the cluster'] as const;
const OFFLINE = ['False', 'Offline', 'the cluster is unreachable'] as const;
const NOT_PROBED = ['False', 'NotProbed', 'the cluster has not answered a probe yet'] as const;
const DECLARED = {
  capacity: { cpu: '8', memory: '16Gi' },
  allocatable: { cpu: '8', memory: '16Gi' },
  requests: {},
};

/** A status written earlier: phase, and since when Ready holds its status. */
const previous = (
  phase: SFClusterStatus['phase'],
  readyStatus: ClusterCondition['status'],
  since: string,
  extra: Partial<SFClusterStatus> = {},
): SFClusterStatus => ({
  phase,
  conditions: [
    {
      type: 'Ready',
      status: readyStatus,
      lastTransitionTime: since,
      reason: { True: 'Reachable', False: 'Unreachable', Unknown: 'NotProbed' }[readyStatus],
      message: 'x',
    },
    {
      type: 'Schedulable',
      status: phase === 'running' ? 'True' : 'False',
      lastTransitionTime: since,
      reason: 'X',
      message: 'x',
    },
  ],
  serviceInstanceCount: 3,
  ...extra,
});

describe('nextClusterStatus: the phase state machine', () => {
  test.each<[string, HealthInput['cluster'], ProbeResult | undefined, number, SFClusterStatus]>([
    [
      'registered, not probed: pending',
      cluster(),
      undefined,
      THRESHOLD_MS,
      {
        phase: 'pending',
        conditions: [
          ready('Unknown', 'NotProbed', 'not probed yet', now, null),
          ...progress(true, false, 'NotProbed', 'not probed yet', null),
          schedulable(...NOT_PROBED, now, null),
        ],
        serviceInstanceCount: 0,
      },
    ],
    [
      'first answer: running, with version and declared capacity',
      cluster(),
      ok,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...REACHABLE, now),
          ...progress(false, false, 'Reachable', ANSWERS),
          schedulable(...SCHEDULABLE),
        ],
        version: 'v1.31.0',
        ...DECLARED,
        serviceInstanceCount: 0,
        lastProbeTime: now,
      },
    ],
    [
      'running and answering: transition times stay',
      cluster(previous('running', 'True', at(600))),
      ok,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...REACHABLE, at(600)),
          schedulable(...SCHEDULABLE, at(600)),
          ...progress(false, false, 'Reachable', ANSWERS),
        ],
        version: 'v1.31.0',
        ...DECLARED,
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'running, first failure: still running, Ready turns False now',
      cluster(previous('running', 'True', at(600), { version: 'v1.30.0' })),
      down,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...UNREACHABLE, now),
          schedulable(...SCHEDULABLE, at(600)),
          ...progress(false, false, 'Unreachable', REFUSED),
        ],
        version: 'v1.30.0',
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'running, unreachable for less than the threshold: running',
      cluster(previous('running', 'False', at(59))),
      down,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...UNREACHABLE, at(59)),
          schedulable(...SCHEDULABLE, at(59)),
          ...progress(false, false, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'running, unreachable for the threshold: offline',
      cluster(previous('running', 'False', at(60))),
      down,
      THRESHOLD_MS,
      {
        phase: 'offline',
        conditions: [
          ready(...UNREACHABLE, at(60)),
          schedulable(...OFFLINE),
          ...progress(false, true, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'running, a first failure of a question asked the threshold ago (its worker waited for): offline',
      cluster(previous('running', 'True', at(600))),
      { ...down, askedAt: at(60) },
      THRESHOLD_MS,
      {
        phase: 'offline',
        conditions: [
          ready(...UNREACHABLE, now),
          schedulable(...OFFLINE),
          ...progress(false, true, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'running, a first failure of a question asked less than the threshold ago: running',
      cluster(previous('running', 'True', at(600))),
      { ...down, askedAt: at(59) },
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...UNREACHABLE, now),
          schedulable(...SCHEDULABLE, at(600)),
          ...progress(false, false, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'a threshold of zero: offline at the first failure',
      cluster(previous('running', 'True', at(600))),
      down,
      0,
      {
        phase: 'offline',
        conditions: [
          ready(...UNREACHABLE, now),
          schedulable(...OFFLINE),
          ...progress(false, true, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'offline, answers again: running',
      cluster(previous('offline', 'False', at(900))),
      ok,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...REACHABLE, now),
          schedulable(...SCHEDULABLE),
          ...progress(false, false, 'Reachable', ANSWERS),
        ],
        version: 'v1.31.0',
        ...DECLARED,
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'offline, still unreachable: offline, transition times stay',
      cluster(previous('offline', 'False', at(900))),
      down,
      THRESHOLD_MS,
      {
        phase: 'offline',
        conditions: [
          ready(...UNREACHABLE, at(900)),
          schedulable(...OFFLINE, at(900)),
          ...progress(false, true, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'pending, never answered, within the threshold: pending',
      cluster(previous('pending', 'Unknown', at(10))),
      down,
      THRESHOLD_MS,
      {
        phase: 'pending',
        conditions: [
          ready(...UNREACHABLE, now),
          schedulable(...NOT_PROBED, at(10)),
          ...progress(true, false, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'pending, unreachable for the threshold: offline',
      cluster(previous('pending', 'False', at(120))),
      down,
      THRESHOLD_MS,
      {
        phase: 'offline',
        conditions: [
          ready(...UNREACHABLE, at(120)),
          schedulable(...OFFLINE, at(120)),
          ...progress(false, true, 'Unreachable', REFUSED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'being deleted: terminated, even while answering',
      cluster(previous('running', 'True', at(600)), {}, true),
      ok,
      THRESHOLD_MS,
      {
        phase: 'terminated',
        conditions: [
          ready('False', 'Terminating', REMOVED, now),
          schedulable('False', 'Terminating', REMOVED),
          ...progress(true, false, 'Terminating', REMOVED),
        ],
        version: 'v1.31.0',
        ...DECLARED,
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'being deleted, unreachable: terminated',
      cluster(previous('offline', 'False', at(600)), {}, true),
      down,
      THRESHOLD_MS,
      {
        phase: 'terminated',
        conditions: [
          ready('False', 'Terminating', REMOVED, at(600)),
          schedulable('False', 'Terminating', REMOVED, at(600)),
          ...progress(true, false, 'Terminating', REMOVED),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'terminated without a deletion (stale), not probed: pending',
      cluster(previous('terminated', 'True', at(600))),
      undefined,
      THRESHOLD_MS,
      {
        phase: 'pending',
        conditions: [
          ready('Unknown', 'NotProbed', 'not probed yet', now, null),
          schedulable(...NOT_PROBED, at(600), null),
          ...progress(true, false, 'NotProbed', 'not probed yet', null),
        ],
        serviceInstanceCount: 3,
      },
    ],
    [
      'cordoned: running, not schedulable',
      cluster(previous('running', 'True', at(600)), { schedulingDisabled: true }),
      ok,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...REACHABLE, at(600)),
          schedulable('False', 'SchedulingDisabled', 'the cluster is cordoned'),
          ...progress(false, false, 'Reachable', ANSWERS),
        ],
        version: 'v1.31.0',
        ...DECLARED,
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
    [
      'cordoned by the older field, not probed: the phase stays, Schedulable follows the spec',
      cluster(previous('running', 'True', at(600), { lastProbeTime: at(30) }), { unschedulable: true }),
      undefined,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready('True', 'Reachable', 'x', at(600), null),
          schedulable('False', 'SchedulingDisabled', 'the cluster is cordoned', now, null),
          ...progress(false, false, 'Reachable', 'x', null),
        ],
        serviceInstanceCount: 3,
        lastProbeTime: at(30),
      },
    ],
    [
      'an invalid declared capacity: not schedulable, the previous figures kept',
      cluster(previous('running', 'True', at(600), { capacity: { cpu: '4' }, allocatable: { cpu: '4' } }), {
        totalCapacity: { cpu: 'eight' },
      }),
      ok,
      THRESHOLD_MS,
      {
        phase: 'running',
        conditions: [
          ready(...REACHABLE, at(600)),
          schedulable(
            'False',
            'InvalidCapacity',
            'invalid quantity "eight" for cpu in spec.totalCapacity: expected a decimal number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)',
          ),
          ...progress(false, false, 'Reachable', ANSWERS),
        ],
        version: 'v1.31.0',
        capacity: { cpu: '4' },
        allocatable: { cpu: '4' },
        serviceInstanceCount: 3,
        lastProbeTime: now,
      },
    ],
  ])('%s', (_name, input, probe, offlineAfterMs, expected) => {
    // Since when the apiserver answers is the next table's.
    const { answeringSince: _since, ...next } = nextClusterStatus({
      cluster: input,
      probe,
      now: NOW,
      offlineAfterMs,
    });
    expect(next).toEqual({
      observedGeneration: GENERATION,
      ...expected,
    });
  });
});

describe('nextClusterStatus: back from offline after the stabilization window', () => {
  const WINDOW_MS = 30_000;
  const before = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();
  const offline = (answeringSince?: string) =>
    cluster(previous('offline', 'False', before(600), answeringSince ? { answeringSince } : {}));

  test.each<
    [string, HealthInput['cluster'], ProbeResult | undefined, number, string, string | null | undefined]
  >([
    [
      'offline, its first answer: still offline, answering since now',
      offline(),
      ok,
      WINDOW_MS,
      'offline',
      now,
    ],
    [
      'offline, answering for less than the window: still offline',
      offline(before(29)),
      ok,
      WINDOW_MS,
      'offline',
      before(29),
    ],
    ['offline, answering for the window: running', offline(before(30)), ok, WINDOW_MS, 'running', before(30)],
    [
      'offline, answering, then no answer: still offline, answering since nothing',
      offline(before(20)),
      down,
      WINDOW_MS,
      'offline',
      null,
    ],
    [
      'offline, not probed: as written last',
      offline(before(20)),
      undefined,
      WINDOW_MS,
      'offline',
      before(20),
    ],
    ['without a window: running at the first answer', offline(), ok, 0, 'running', now],
    [
      'running, answering: running, answering since as before',
      cluster(previous('running', 'True', before(600), { answeringSince: before(600) })),
      ok,
      WINDOW_MS,
      'running',
      before(600),
    ],
    [
      'pending, its first answer: running at once (it was never offline)',
      cluster(),
      ok,
      WINDOW_MS,
      'running',
      now,
    ],
  ])('%s', (_name, input, probe, stabilizeAfterMs, phase, answeringSince) => {
    const next = nextClusterStatus({
      cluster: input,
      probe,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
      stabilizeAfterMs,
    });
    expect([next.phase, next.answeringSince]).toEqual([phase, answeringSince]);
  });

  test('GIVEN an offline cluster answering again within the window THEN it is not schedulable, saying it stabilizes and until when', () => {
    const next = nextClusterStatus({
      cluster: offline(before(10)),
      probe: ok,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
      stabilizeAfterMs: WINDOW_MS,
    });
    expect(next.conditions.find((c) => c.type === 'Schedulable')).toMatchObject({
      status: 'False',
      reason: 'Stabilizing',
      message: `the cluster answers again since ${before(10)}; it is scheduled onto once it has answered for 30 s`,
    });
    expect(next.conditions.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Reachable',
    });
  });
});

describe('nextClusterStatus: resources and counts', () => {
  const nodes = [
    { status: { capacity: { cpu: '4', memory: '8Gi' }, allocatable: { cpu: '3500m', memory: '7Gi' } } },
  ];
  const pods = [{ spec: { containers: [{ resources: { requests: { cpu: '250m', memory: '256Mi' } } }] } }];

  test('without declared capacity, the nodes and pods the probe read', () => {
    const status = nextClusterStatus({
      cluster: cluster(undefined, { totalCapacity: undefined }),
      probe: { ok: true, version: 'v1.31.0', nodes, pods },
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
      instances: 7,
    });
    expect(status).toMatchObject({
      capacity: { cpu: '4', memory: '8Gi' },
      allocatable: { cpu: '3500m', memory: '7Gi' },
      requests: { cpu: '250m', memory: '256Mi' },
      serviceInstanceCount: 7,
    });
  });

  test('declared capacity wins over the nodes; requests still come from the pods', () => {
    const status = nextClusterStatus({
      cluster: cluster(),
      probe: { ok: true, version: 'v1.31.0', nodes, pods },
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
    });
    expect(status).toMatchObject({
      capacity: { cpu: '8', memory: '16Gi' },
      allocatable: { cpu: '8', memory: '16Gi' },
      requests: { cpu: '250m', memory: '256Mi' },
    });
  });

  test('a failed probe keeps the figures of the last answer', () => {
    const status = nextClusterStatus({
      cluster: cluster(
        previous('running', 'True', at(600), {
          capacity: { cpu: '2' },
          allocatable: { cpu: '2' },
          requests: { cpu: '1' },
        }),
      ),
      probe: down,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
    });
    expect(status).toMatchObject({
      capacity: { cpu: '2' },
      allocatable: { cpu: '2' },
      requests: { cpu: '1' },
    });
  });

  test("reservations are not the probe's: the result never holds them", () => {
    const status = nextClusterStatus({
      cluster: cluster(previous('running', 'True', at(600), { reserved: { a: { cpu: '1' } } })),
      probe: ok,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
    });
    expect(status).not.toHaveProperty('reserved');
  });
});

describe('nextClusterStatus: the CrdsInstalled condition of onboarding', () => {
  const installed = {
    type: 'CrdsInstalled',
    status: 'True' as const,
    reason: 'Installed',
    message: 'the CRDs a, b are established',
  };
  const forbidden = {
    type: 'CrdsInstalled',
    status: 'False' as const,
    reason: 'Forbidden',
    message: 'the worker may not install our CRDs on this cluster (no)',
  };
  const conditionOf = (status: SFClusterStatus, type: string) =>
    status.conditions?.find((c) => c.type === type);

  test('GIVEN an answering sister whose CRDs are installed THEN the condition is written and it is schedulable', () => {
    const status = nextClusterStatus({
      cluster: cluster(),
      probe: ok,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
      crds: installed,
    });
    expect(status.phase).toBe('running');
    expect(conditionOf(status, 'CrdsInstalled')).toEqual(
      condition('CrdsInstalled')('True', 'Installed', installed.message),
    );
    expect(conditionOf(status, 'Schedulable')).toEqual(schedulable(...SCHEDULABLE));
  });

  test('GIVEN a sister that may not get our CRDs THEN it runs but is not schedulable, saying why', () => {
    const status = nextClusterStatus({
      cluster: cluster(),
      probe: ok,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
      crds: forbidden,
    });
    expect(status.phase).toBe('running');
    expect(conditionOf(status, 'CrdsInstalled')).toMatchObject({ status: 'False', reason: 'Forbidden' });
    expect(conditionOf(status, 'Schedulable')).toEqual(
      schedulable('False', 'CrdsNotInstalled', forbidden.message),
    );
  });

  test('GIVEN no onboarding this time (no answer) THEN the condition written last is kept, and still hinders', () => {
    const before = previous('running', 'True', at(600), {
      conditions: [
        ...previous('running', 'True', at(600)).conditions!,
        { ...forbidden, lastTransitionTime: at(600) },
      ],
    });
    const status = nextClusterStatus({
      cluster: cluster(before),
      probe: down,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
    });
    expect(conditionOf(status, 'CrdsInstalled')).toMatchObject({
      status: 'False',
      reason: 'Forbidden',
      lastTransitionTime: at(600),
    });
    expect(conditionOf(status, 'Schedulable')).toMatchObject({ status: 'False', reason: 'CrdsNotInstalled' });
  });

  test('GIVEN a cordoned sister without CRDs THEN the cordon is the reason given', () => {
    const status = nextClusterStatus({
      cluster: cluster(undefined, { schedulingDisabled: true }),
      probe: ok,
      now: NOW,
      offlineAfterMs: THRESHOLD_MS,
      crds: forbidden,
    });
    expect(conditionOf(status, 'Schedulable')).toMatchObject({ reason: 'SchedulingDisabled' });
  });
});

describe('clusterFigures: what the metrics show of a cluster', () => {
  test('GIVEN allocatable quantities THEN each in its unit; a quantity that does not parse is left out', () => {
    const cluster = {
      apiVersion: 'resource.servicefabrik.io/v1alpha1',
      kind: 'SFCluster',
      metadata: { name: '2' },
      spec: {},
      status: { allocatable: { cpu: '3500m', memory: '8Gi', pods: '110', broken: 'lots' } },
    } as unknown as SFCluster;
    expect(clusterFigures(cluster, 4)).toEqual({
      serviceInstances: 4,
      allocatable: { cpu: 3.5, memory: 8 * 1024 ** 3, pods: 110 },
    });
  });
});
