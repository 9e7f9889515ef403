import { leastUtilized } from '../../../../src/scheduling/plugins/least-utilized.js';
import { schedule } from '../../../../src/scheduling/registry.js';
import type { ClusterSnapshot, Cycle } from '../../../../src/scheduling/types.js';
import { cluster, request } from '../clusters.js';

const cycle: Cycle = { request, state: {}, data: new Map() };

describe('least-utilized', () => {
  test.each<[number[], number[]]>([
    [
      [0, 5, 10],
      [100, 50, 0],
    ],
    [
      [3, 3, 3],
      [100, 100, 100],
    ],
    [[7], [100]],
    [
      [4, 0, 1],
      [0, 100, 75],
    ],
  ])('instances %j score %j', (instances, scores) => {
    const plugin = leastUtilized();
    const clusters = instances.map((n, i) => cluster(String(i + 1), { instances: n }));
    const raw = clusters.map((c) => plugin.score!(cycle, c));
    expect(plugin.normalizeScores!(cycle, raw)).toEqual(scores);
  });

  test.each<[string, ClusterSnapshot[], { clusterId?: string; summary: string }]>([
    [
      'the fewest instances',
      [cluster('1', { instances: 5 }), cluster('2', { instances: 1 }), cluster('3', { instances: 3 })],
      { clusterId: '2', summary: 'chose 2: 1 instance; 3: 3 instances; 1: 5 instances' },
    ],
    [
      'a tie goes to the lowest id',
      [cluster('3', { instances: 0 }), cluster('2', { instances: 0 }), cluster('1', { instances: 2 })],
      { clusterId: '2', summary: 'chose 2: 0 instances; 3: 0 instances; 1: 2 instances' },
    ],
    [
      'the emptiest cluster is offline: the next emptiest',
      [cluster('1', { instances: 0, phase: 'offline' }), cluster('2', { instances: 9 })],
      { clusterId: '2', summary: 'chose 2: 9 instances; 1: offline' },
    ],
  ])('%s', (_name, clusters, expected) => {
    const decision = schedule({ scheduler: 'least-utilized', clusters, request });
    expect({ clusterId: decision.clusterId, summary: decision.summary }).toEqual(expected);
  });
});
