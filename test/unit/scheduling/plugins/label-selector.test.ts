import { labelSelector } from '../../../../src/scheduling/plugins/label-selector.js';
import { schedule } from '../../../../src/scheduling/registry.js';
import type { ClusterSnapshot, Cycle, PlacementRequest, Verdict } from '../../../../src/scheduling/types.js';
import { cluster, request } from '../clusters.js';

const PLAN = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** What the design document's clusterSelector template renders for an instance of PLAN. */
const RENDERED = `  \nplan=${PLAN}\n`;

describe('label-selector', () => {
  test.each<[string, string | undefined, Record<string, string>, Verdict]>([
    ['no selector: every cluster', undefined, {}, { code: 'Success' }],
    ['a blank selector: every cluster', ' \n', { a: 'b' }, { code: 'Success' }],
    ['the rendered template matches its plan', RENDERED, { plan: PLAN }, { code: 'Success' }],
    [
      'the rendered template, another plan',
      RENDERED,
      { plan: 'other' },
      { code: 'Unschedulable', reason: `plan=other, not ${PLAN}` },
    ],
    [
      'the rendered template, no plan label',
      RENDERED,
      { zone: 'eu' },
      { code: 'Unschedulable', reason: 'no label plan' },
    ],
    ['set-based', 'tier in (gold,silver),!legacy', { tier: 'gold' }, { code: 'Success' }],
    [
      'set-based, excluded',
      'tier in (gold,silver),!legacy',
      { tier: 'gold', legacy: 'true' },
      { code: 'Unschedulable', reason: 'has label legacy' },
    ],
  ])('filter: %s', (_name, clusterSelector, labels, verdict) => {
    const plugin = labelSelector();
    const cycle: Cycle = {
      request: { ...request, ...(clusterSelector !== undefined ? { clusterSelector } : {}) },
      state: {},
      data: new Map(),
    };
    expect(plugin.preFilter!(cycle)).toEqual({ code: 'Success' });
    expect(plugin.filter!(cycle, cluster('1', { labels }))).toEqual(verdict);
  });

  test('pre-filter: an invalid selector is the reason for every cluster', () => {
    const cycle: Cycle = {
      request: { ...request, clusterSelector: 'plan in small' },
      state: {},
      data: new Map(),
    };
    expect(labelSelector().preFilter!(cycle)).toEqual({
      code: 'Error',
      reason:
        'clusterSelector: invalid label selector "plan in small": expected "(" after "in" at column 9, found "small"',
    });
  });

  const clusters = [
    cluster('1', { labels: { plan: PLAN }, instances: 4 }),
    cluster('2', { labels: { plan: PLAN }, instances: 2 }),
    cluster('3', { labels: { plan: 'other' }, instances: 0 }),
    cluster('4', { labels: { plan: PLAN }, instances: 2 }),
    cluster('5', { labels: { plan: PLAN }, instances: 0, schedulingDisabled: true }),
  ];

  test.each<[string, PlacementRequest, ClusterSnapshot[], { clusterId?: string; summary: string }]>([
    [
      "the plan's clusters; among them the fewest instances, then the lowest id",
      { ...request, planId: PLAN, clusterSelector: RENDERED },
      clusters,
      {
        clusterId: '2',
        summary: `chose 2: matches plan=${PLAN}, 2 instances; 4: matches plan=${PLAN}, 2 instances; 1: matches plan=${PLAN}, 4 instances; 3: plan=other, not ${PLAN}; 5: cordoned`,
      },
    ],
    [
      "the other plans' clusters, with plan!=",
      { ...request, clusterSelector: `plan!=${PLAN}` },
      clusters,
      {
        clusterId: '3',
        summary: `chose 3: matches plan!=${PLAN}, 0 instances; 1: plan=${PLAN}, excluded by plan!=${PLAN}; 2: plan=${PLAN}, excluded by plan!=${PLAN}; 4: plan=${PLAN}, excluded by plan!=${PLAN}; 5: cordoned`,
      },
    ],
    [
      'no selector: least-utilized over all',
      request,
      clusters,
      {
        clusterId: '3',
        summary: 'chose 3: 0 instances; 2: 2 instances; 4: 2 instances; 1: 4 instances; 5: cordoned',
      },
    ],
    [
      'nothing matches',
      { ...request, clusterSelector: 'zone=eu' },
      clusters.slice(0, 2),
      { summary: 'no eligible cluster: 1: no label zone; 2: no label zone' },
    ],
    [
      'an invalid selector',
      { ...request, clusterSelector: 'plan=' + PLAN + ' zone' },
      clusters,
      {
        summary: `no eligible cluster: clusterSelector: invalid label selector "plan=${PLAN} zone": expected "," or the end at column 43, found "zone"`,
      },
    ],
  ])('decision: %s', (_name, req, given, expected) => {
    const decision = schedule({ scheduler: 'label-selector', clusters: given, request: req });
    expect({ clusterId: decision.clusterId, summary: decision.summary }).toEqual(expected);
  });
});
