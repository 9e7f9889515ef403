import { decideMove } from '../../../src/scheduling/moves.js';
import { cluster, request } from './clusters.js';

describe('where a moving instance goes', () => {
  const clusters = [
    cluster('1', { instances: 5 }),
    cluster('a', { instances: 2 }),
    cluster('b', { instances: 1 }),
  ];

  test('GIVEN the default scheduler THEN the least utilized of the other clusters, never the one it leaves', () => {
    const decision = decideMove({ scheduler: 'default', clusters, request, from: 'b' });
    expect(decision).toMatchObject({ scheduler: 'least-utilized', clusterId: 'a' });
    expect(decision.reasons.map((r) => r.clusterId)).not.toContain('b');
  });

  test('GIVEN a cluster named THEN that one, if the plan’s scheduler accepts it', () => {
    expect(decideMove({ scheduler: 'least-utilized', clusters, request, from: 'b', to: '1' }).clusterId).toBe(
      '1',
    );
    const cordoned = [...clusters.slice(0, 2), cluster('c', { schedulingDisabled: true })];
    const refused = decideMove({ scheduler: 'round-robin', clusters: cordoned, request, from: 'a', to: 'c' });
    expect(refused.clusterId).toBeUndefined();
    expect(refused.summary).toMatch(/no eligible cluster: c: cordoned/);
  });

  test('GIVEN nowhere else to go THEN no cluster, and the summary says why', () => {
    expect(decideMove({ scheduler: 'default', clusters, request, from: 'a', to: 'a' })).toMatchObject({
      summary: 'the instance is on cluster a already',
    });
    expect(decideMove({ scheduler: 'default', clusters, request, from: 'a', to: 'z' })).toMatchObject({
      summary: 'cluster z is not registered',
    });
    const alone = decideMove({ scheduler: 'default', clusters: [cluster('1')], request, from: '1' });
    expect(alone.clusterId).toBeUndefined();
    expect(alone.summary).toBe('no cluster but 1 is registered');
  });
});
