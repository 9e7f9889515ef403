/** What the command line prints: tables, progress, and the exit status of a rollout's end. */
import { exitStatusOf, progressBar, progressSummary, table } from '../../../src/cli/format.js';
import { progressOf } from '../../support/memory-admin.js';

test('GIVEN rows WHEN tabled THEN aligned columns, `-` for an empty cell, one line each, no trailing space', () => {
  const rows = [
    { a: 'x', b: 'longer value', c: undefined },
    { a: 'wider cell', b: 'two\nlines', c: 'z' },
  ];
  expect(
    table(rows, [
      ['A', (r) => r.a],
      ['B', (r) => r.b],
      ['C', (r) => r.c],
    ]),
  ).toBe('A            B              C\nx            longer value   -\nwider cell   two lines      z\n');
});

test('GIVEN no rows WHEN tabled THEN the header alone', () => {
  expect(table([], [['ONLY', () => 'x']])).toBe('ONLY\n');
});

test.each([
  ['waiting', progressOf({ total: 4 }), '[..........] waves (canary batch): 0/4 done, 0 failed, 0 in flight'],
  [
    'mixed',
    progressOf({ total: 4, done: 2, failed: 1, inFlight: 1, wave: 3 }),
    '[#####!!>>.] waves (wave 3): 2/4 done, 1 failed, 1 in flight',
  ],
  [
    'all done',
    progressOf({ state: 'done', total: 3, done: 3 }),
    '[##########] done (canary batch): 3/3 done, 0 failed, 0 in flight',
  ],
  [
    'no instances',
    progressOf({ state: 'done', total: 0 }),
    '[..........] done (canary batch): 0/0 done, 0 failed, 0 in flight',
  ],
])('progressBar: %s', (_, progress, expected) => {
  expect(progressBar(progress, 10)).toBe(expected);
});

test('progressSummary says the state, the stage and the counts', () => {
  expect(progressSummary(progressOf({ state: 'paused', wave: 1, done: 3, inFlight: 2 }))).toBe(
    'paused (wave 1): 3/10 done, 0 failed, 2 in flight',
  );
});

test.each([
  ['done', progressOf({ state: 'done', done: 10 }), 0],
  ['done with failures within the limit', progressOf({ state: 'done', done: 9, failed: 1 }), 1],
  ['halted', progressOf({ state: 'halted', failed: 1 }), 1],
  ['aborted', progressOf({ state: 'aborted' }), 1],
])('exitStatusOf: %s is %i', (_, progress, status) => {
  expect(exitStatusOf(progress)).toBe(status);
});
