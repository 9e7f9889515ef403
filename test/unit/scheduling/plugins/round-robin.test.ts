import { roundRobin } from '../../../../src/scheduling/plugins/round-robin.js';
import { schedule } from '../../../../src/scheduling/registry.js';
import type { ClusterSnapshot, Cycle } from '../../../../src/scheduling/types.js';
import { cluster, request } from '../clusters.js';

const ids = (...list: string[]) => list.map((id) => cluster(id));

describe('round-robin', () => {
  test.each<[string, string[], string | undefined, number[]]>([
    ['no last choice: the first scores 100', ['1', '2', '3'], undefined, [100, 50, 0]],
    ['after 1: 2, then 3, then 1', ['1', '2', '3'], '1', [0, 100, 50]],
    ['after the last: wrap to the first', ['1', '2', '3'], '3', [100, 50, 0]],
    ['after a cluster gone: the next one up', ['1', '3', '5'], '4', [50, 0, 100]],
    ['after an id beyond all: the first', ['1', '2'], '9', [100, 0]],
    ['alone: 100', ['7'], '7', [100]],
    ['numeric order: after 2 comes 10', ['1', '2', '10'], '2', [50, 0, 100]],
  ])('scores: %s', (_name, feasible, lastClusterId, scores) => {
    const plugin = roundRobin();
    const cycle: Cycle = { request, state: lastClusterId ? { lastClusterId } : {}, data: new Map() };
    const clusters = ids(...feasible);
    plugin.preScore!(cycle, clusters);
    expect(clusters.map((c) => plugin.score!(cycle, c))).toEqual(scores);
  });

  test.each<[string, ClusterSnapshot[], string | undefined, { clusterId?: string; summary: string }]>([
    [
      'first turn',
      ids('2', '1', '3'),
      undefined,
      { clusterId: '1', summary: 'chose 1: first turn; 2: turn in 1; 3: turn in 2' },
    ],
    [
      'next turn',
      ids('1', '2', '3'),
      '1',
      { clusterId: '2', summary: 'chose 2: next turn after 1; 3: turn in 1; 1: turn in 2' },
    ],
    [
      'an ineligible cluster loses its turn',
      [cluster('1'), cluster('2', { phase: 'offline' }), cluster('3')],
      '1',
      { clusterId: '3', summary: 'chose 3: next turn after 1; 1: turn in 1; 2: offline' },
    ],
    [
      'turns do not care about instances',
      [cluster('1', { instances: 0 }), cluster('2', { instances: 99 })],
      '1',
      { clusterId: '2', summary: 'chose 2: next turn after 1; 1: turn in 1' },
    ],
  ])('decision: %s', (_name, clusters, lastClusterId, expected) => {
    const decision = schedule({
      scheduler: 'round-robin',
      clusters,
      request,
      ...(lastClusterId ? { state: { lastClusterId } } : {}),
    });
    expect({ clusterId: decision.clusterId, summary: decision.summary }).toEqual(expected);
  });

  test('successive decisions, each given the last choice, take turns; a cluster that joins gets its turn', () => {
    const chosen: string[] = [];
    let clusters = ids('1', '2', '3');
    let lastClusterId: string | undefined;
    for (let i = 0; i < 7; i++) {
      if (i === 4) clusters = ids('1', '2', '3', '4');
      const decision = schedule({ scheduler: 'round-robin', clusters, request, state: { lastClusterId } });
      lastClusterId = decision.clusterId;
      chosen.push(lastClusterId!);
    }
    expect(chosen).toEqual(['1', '2', '3', '1', '2', '3', '4']);
  });
});
