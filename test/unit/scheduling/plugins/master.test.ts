import { master } from '../../../../src/scheduling/plugins/master.js';
import { schedule } from '../../../../src/scheduling/registry.js';
import type { ClusterSnapshot, Cycle, Verdict } from '../../../../src/scheduling/types.js';
import { cluster, request } from '../clusters.js';

const cycle: Cycle = { request, state: {}, data: new Map() };

describe('master: the default scheduler', () => {
  test.each<[string, string | undefined, Verdict]>([
    ['1', undefined, { code: 'Success' }],
    ['2', undefined, { code: 'Unschedulable', reason: 'not the master (1)' }],
    ['m', 'm', { code: 'Success' }],
    ['1', 'm', { code: 'Unschedulable', reason: 'not the master (m)' }],
  ])('cluster %p with master %p', (id, masterClusterId, verdict) => {
    const plugin = master(masterClusterId === undefined ? {} : { masterClusterId });
    expect(plugin.filter!(cycle, cluster(id))).toEqual(verdict);
  });

  test.each<[string, ClusterSnapshot[], string | undefined, { clusterId?: string; summary: string }]>([
    [
      'the master among others',
      [cluster('2'), cluster('1', { instances: 50 }), cluster('3')],
      undefined,
      { clusterId: '1', summary: 'chose 1: the master; 2: not the master (1); 3: not the master (1)' },
    ],
    ['the master alone', [cluster('1')], undefined, { clusterId: '1', summary: 'chose 1: the master' }],
    [
      'a master of another id',
      [cluster('1'), cluster('main')],
      'main',
      { clusterId: 'main', summary: 'chose main: the master; 1: not the master (main)' },
    ],
    [
      'the master offline: nowhere',
      [cluster('1', { phase: 'offline' }), cluster('2')],
      undefined,
      { summary: 'no eligible cluster: 1: offline; 2: not the master (1)' },
    ],
    [
      'the master cordoned: nowhere',
      [cluster('1', { schedulingDisabled: true })],
      undefined,
      { summary: 'no eligible cluster: 1: cordoned' },
    ],
    [
      'the master not registered: nowhere',
      [cluster('2')],
      undefined,
      { summary: 'no eligible cluster: 2: not the master (1)' },
    ],
  ])('%s', (_name, clusters, masterClusterId, expected) => {
    const decision = schedule({
      scheduler: 'default',
      clusters,
      request,
      ...(masterClusterId ? { options: { masterClusterId } } : {}),
    });
    expect({ clusterId: decision.clusterId, summary: decision.summary }).toEqual(expected);
  });
});
