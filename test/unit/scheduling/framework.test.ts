import { compareClusterIds, runScheduler, type Scheduler } from '../../../src/scheduling/framework.js';
import {
  invalid,
  SUCCESS,
  unschedulable,
  type ClusterSnapshot,
  type Plugin,
} from '../../../src/scheduling/types.js';
import { cluster, request } from './clusters.js';

describe('compareClusterIds: the tie break', () => {
  test.each<[string[], string[]]>([
    [
      ['3', '1', '2'],
      ['1', '2', '3'],
    ],
    [
      ['10', '9', '2', '1'],
      ['1', '2', '9', '10'],
    ],
    [
      ['b', '10', 'a', '2'],
      ['2', '10', 'a', 'b'],
    ],
    [
      ['01', '1', '002'],
      ['01', '1', '002'],
    ],
    [
      ['eu-2', 'eu-10', 'eu-1'],
      ['eu-1', 'eu-10', 'eu-2'],
    ],
    [
      ['99999999999999999999', '100000000000000000000'],
      ['99999999999999999999', '100000000000000000000'],
    ],
  ])('%j sorts as %j', (ids, sorted) => {
    expect([...ids].sort(compareClusterIds)).toEqual(sorted);
  });

  test('a cluster equals itself', () => {
    expect(compareClusterIds('7', '7')).toBe(0);
  });
});

/** A filter rejecting the listed clusters with a reason of its own. */
const rejecting = (
  name: string,
  ids: string[],
  code: 'Unschedulable' | 'Error' = 'Unschedulable',
): Plugin => ({
  name,
  filter: (_cycle, c) =>
    ids.includes(c.id)
      ? code === 'Error'
        ? invalid(`${name} cannot read ${c.id}`)
        : unschedulable(`${name} says no`)
      : SUCCESS,
});

/** Scores from a table, by cluster id. */
const scoring = (
  name: string,
  scores: Record<string, number>,
  words?: (c: ClusterSnapshot) => string,
): Plugin => ({
  name,
  score: (_cycle, c) => scores[c.id] ?? 0,
  ...(words ? { explain: (_cycle: unknown, c: ClusterSnapshot) => words(c) } : {}),
});

const scheduler = (...plugins: (Plugin | [Plugin, number])[]): Scheduler => ({
  name: 'test',
  plugins: plugins.map((p) => (Array.isArray(p) ? { plugin: p[0], weight: p[1] } : { plugin: p })),
});

const three = [cluster('3'), cluster('1'), cluster('2')];

describe('runScheduler', () => {
  test.each<[string, Scheduler, ClusterSnapshot[], { clusterId?: string; summary: string }]>([
    [
      'no plugins: the lowest id',
      scheduler(),
      three,
      { clusterId: '1', summary: 'chose 1: score 0; 2: score 0; 3: score 0' },
    ],
    [
      'the highest score wins',
      scheduler(scoring('s', { '1': 10, '2': 90, '3': 50 })),
      three,
      { clusterId: '2', summary: 'chose 2: score 90; 3: score 50; 1: score 10' },
    ],
    [
      'equal scores go to the lowest id, whatever the input order',
      scheduler(scoring('s', { '1': 10, '2': 80, '3': 80 })),
      [cluster('3'), cluster('2'), cluster('1')],
      { clusterId: '2', summary: 'chose 2: score 80; 3: score 80; 1: score 10' },
    ],
    [
      'filters reject with their reasons; the first rejecting filter speaks',
      scheduler(rejecting('a', ['1']), rejecting('b', ['1', '2'])),
      three,
      { clusterId: '3', summary: 'chose 3: score 0; 1: a says no; 2: b says no' },
    ],
    [
      'nothing passes: no cluster, every reason',
      scheduler(rejecting('a', ['1', '2']), rejecting('b', ['3'], 'Error')),
      three,
      { summary: 'no eligible cluster: 1: a says no; 2: a says no; 3: b cannot read 3' },
    ],
    ['no clusters at all', scheduler(), [], { summary: 'no eligible cluster: no clusters registered' }],
    [
      'a pre-filter that fails decides for every cluster',
      scheduler({ name: 'p', preFilter: () => invalid('the request is unreadable') }),
      three,
      { summary: 'no eligible cluster: the request is unreadable' },
    ],
    [
      'weights: the weighted mean of the scores',
      scheduler([scoring('x', { '1': 100, '2': 0 }), 1], [scoring('y', { '1': 0, '2': 60 }), 3]),
      [cluster('1'), cluster('2')],
      { clusterId: '2', summary: 'chose 2: score 45; 1: score 25' },
    ],
    [
      'explanations replace the score in the summary',
      scheduler(
        scoring('s', { '1': 1, '2': 2 }, (c) => `${c.id} is nice`),
        scoring('t', {}, () => 'and tidy'),
      ),
      [cluster('1'), cluster('2')],
      { clusterId: '2', summary: 'chose 2: 2 is nice, and tidy; 1: 1 is nice, and tidy' },
    ],
  ])('%s', (_name, s, clusters, expected) => {
    const decision = runScheduler(s, clusters, request);
    expect({ clusterId: decision.clusterId, summary: decision.summary }).toEqual(expected);
    expect(decision.scheduler).toBe('test');
  });

  test('every cluster has its verdict, in id order: a reason or a score', () => {
    const decision = runScheduler(
      scheduler(rejecting('a', ['2'], 'Error'), scoring('s', { '1': 33.333, '3': 66.666 })),
      three,
      request,
    );
    expect(decision.reasons).toEqual([
      { clusterId: '1', eligible: true, score: 33.33 },
      { clusterId: '2', eligible: false, plugin: 'a', code: 'Error', reason: 'a cannot read 2' },
      { clusterId: '3', eligible: true, score: 66.67 },
    ]);
  });

  test('normalisation maps raw scores, in id order, before they are bounded', () => {
    const seen: number[][] = [];
    const plugin: Plugin = {
      name: 'raw',
      score: (_cycle, c) => Number(c.id) * 1000,
      normalizeScores: (_cycle, raw) => {
        seen.push([...raw]);
        return raw.map((r) => r / 100);
      },
    };
    const decision = runScheduler(scheduler(plugin), three, request);
    expect(seen).toEqual([[1000, 2000, 3000]]);
    expect(decision.clusterId).toBe('3');
    expect(decision.reasons.map((r) => (r.eligible ? r.score : -1))).toEqual([10, 20, 30]);
  });

  test.each([101, -1, Number.NaN])('a score of %p is a plugin bug', (score) => {
    expect(() => runScheduler(scheduler(scoring('bad', { '2': score })), three, request)).toThrow(
      `plugin bad scored cluster 2 ${score}, outside 0-100`,
    );
  });

  test('phases run in order, pre-score over the feasible clusters in id order, sharing the cycle', () => {
    const calls: string[] = [];
    const plugin: Plugin = {
      name: 'p',
      preFilter: (cycle) => {
        calls.push(`preFilter ${cycle.request.instanceId}`);
        cycle.data.set('p', 'kept');
        return SUCCESS;
      },
      filter: (cycle, c) => {
        calls.push(`filter ${c.id} ${String(cycle.data.get('p'))}`);
        return c.id === '2' ? unschedulable('no') : SUCCESS;
      },
      preScore: (cycle, feasible) => {
        calls.push(`preScore ${feasible.map((c) => c.id).join(',')} last=${cycle.state.lastClusterId}`);
      },
      score: (_cycle, c) => {
        calls.push(`score ${c.id}`);
        return 0;
      },
    };
    runScheduler(scheduler(plugin), three, request, { lastClusterId: '9' });
    expect(calls).toEqual([
      'preFilter i-1',
      'filter 1 kept',
      'filter 2 kept',
      'filter 3 kept',
      'preScore 1,3 last=9',
      'score 1',
      'score 3',
    ]);
  });

  test('the summary names the chosen cluster and eight others, then how many more', () => {
    const many = Array.from({ length: 20 }, (_, i) => cluster(String(i + 1)));
    const scores = Object.fromEntries(many.map((c) => [c.id, Number(c.id)]));
    const decision = runScheduler(scheduler(rejecting('r', ['1', '2']), scoring('s', scores)), many, request);
    expect(decision.summary).toBe(
      'chose 20: score 20; 19: score 19; 18: score 18; 17: score 17; 16: score 16; 15: score 15; 14: score 14; 13: score 13; 12: score 12; and 11 more',
    );
    const none = runScheduler(
      scheduler(
        rejecting(
          'r',
          many.map((c) => c.id),
        ),
      ),
      many,
      request,
    );
    expect(none.summary).toBe(
      'no eligible cluster: 1: r says no; 2: r says no; 3: r says no; 4: r says no; 5: r says no; 6: r says no; 7: r says no; 8: r says no; and 12 more',
    );
  });

  test('eligible clusters come before rejected ones in the summary', () => {
    const decision = runScheduler(
      scheduler(rejecting('r', ['1']), scoring('s', { '2': 5, '3': 9 })),
      three,
      request,
    );
    expect(decision.summary).toBe('chose 3: score 9; 2: score 5; 1: r says no');
  });
});
