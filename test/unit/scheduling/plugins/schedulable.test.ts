import { schedulable } from '../../../../src/scheduling/plugins/schedulable.js';
import { schedule } from '../../../../src/scheduling/registry.js';
import type { ClusterSnapshot, Cycle, Verdict } from '../../../../src/scheduling/types.js';
import { cluster, request } from '../clusters.js';

const cycle: Cycle = { request, state: {}, data: new Map() };

describe('schedulable: the filter of every scheduler', () => {
  test.each<[string, Partial<ClusterSnapshot>, boolean, Verdict]>([
    ['running', {}, false, { code: 'Success' }],
    ['offline', { phase: 'offline' }, false, { code: 'Unschedulable', reason: 'offline' }],
    ['terminated', { phase: 'terminated' }, false, { code: 'Unschedulable', reason: 'terminated' }],
    ['pending', { phase: 'pending' }, false, { code: 'Unschedulable', reason: 'not probed yet' }],
    ['pending, accepted', { phase: 'pending' }, true, { code: 'Success' }],
    ['cordoned', { schedulingDisabled: true }, false, { code: 'Unschedulable', reason: 'cordoned' }],
    [
      'offline and cordoned',
      { phase: 'offline', schedulingDisabled: true },
      false,
      { code: 'Unschedulable', reason: 'offline' },
    ],
    [
      'pending accepted, cordoned',
      { phase: 'pending', schedulingDisabled: true },
      true,
      { code: 'Unschedulable', reason: 'cordoned' },
    ],
    [
      'terminated, even when pending is accepted',
      { phase: 'terminated' },
      true,
      { code: 'Unschedulable', reason: 'terminated' },
    ],
    [
      'without our CRDs',
      { withoutCrds: 'the worker may not install our CRDs on this cluster (forbidden)' },
      false,
      { code: 'Unschedulable', reason: 'our CRDs are not installed' },
    ],
    [
      'without our CRDs and cordoned',
      { withoutCrds: 'forbidden', schedulingDisabled: true },
      false,
      { code: 'Unschedulable', reason: 'cordoned' },
    ],
    [
      'unreadable',
      { problem: 'invalid quantity "x"' },
      false,
      { code: 'Error', reason: 'invalid quantity "x"' },
    ],
  ])('%s', (_name, fields, acceptPending, verdict) => {
    expect(schedulable({ acceptPending }).filter!(cycle, cluster('1', fields))).toEqual(verdict);
  });

  test.each(['default', 'round-robin', 'least-utilized', 'label-selector', 'resource-aware'] as const)(
    'the %s scheduler never chooses an offline, cordoned, terminated or unprobed cluster, nor one without our CRDs',
    (name) => {
      const clusters = [
        cluster('1', { schedulingDisabled: true, instances: 0 }),
        cluster('2', { phase: 'offline' }),
        cluster('3', { phase: 'terminated' }),
        cluster('4', { phase: 'pending' }),
        cluster('5', { withoutCrds: 'forbidden' }),
      ];
      const decision = schedule({ scheduler: name, clusters, request });
      expect(decision.clusterId).toBeUndefined();
      expect(decision.summary).toBe(
        'no eligible cluster: 1: cordoned; 2: offline; 3: terminated; 4: not probed yet; 5: our CRDs are not installed',
      );
    },
  );

  test('the summary says why each cluster was passed over', () => {
    const decision = schedule({
      scheduler: 'least-utilized',
      clusters: [
        cluster('1', { schedulingDisabled: true }),
        cluster('2', { phase: 'offline' }),
        cluster('3', { instances: 4 }),
      ],
      request,
    });
    expect(decision).toEqual({
      scheduler: 'least-utilized',
      clusterId: '3',
      reasons: [
        { clusterId: '1', eligible: false, plugin: 'schedulable', code: 'Unschedulable', reason: 'cordoned' },
        { clusterId: '2', eligible: false, plugin: 'schedulable', code: 'Unschedulable', reason: 'offline' },
        { clusterId: '3', eligible: true, score: 100 },
      ],
      summary: 'chose 3: 4 instances; 1: cordoned; 2: offline',
    });
  });
});
