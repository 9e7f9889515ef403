/**
 * The order a rollout takes the instances behind a revision in, a page at a time: the `limit`
 * oldest kept while the records stream past, whatever order the apiserver lists them in.
 */
import { keepOldest } from '../../../src/activities/rollouts.js';
import type { SFServiceInstance } from '../../../src/resources/types.js';

const record = (instanceId: string, created: string) =>
  ({
    metadata: { name: instanceId, creationTimestamp: created },
    spec: { instanceId, serviceId: 's', planId: 'p' },
  }) as SFServiceInstance;

/** The ids `keepOldest` holds after the records pass in the order given. */
function oldestOf(records: SFServiceInstance[], limit: number): string[] {
  const oldest: SFServiceInstance[] = [];
  for (const r of records) keepOldest(oldest, r, limit);
  return oldest.map((r) => r.spec.instanceId!);
}

const a = record('a', '2026-01-01T00:00:01Z');
const b = record('b', '2026-01-01T00:00:02Z');
const c = record('c', '2026-01-01T00:00:03Z');
const d = record('d', '2026-01-01T00:00:04Z');
const twinOfB = record('a2', '2026-01-01T00:00:02Z');

describe('the oldest instances behind a revision', () => {
  test.each([
    ['in order, limit 2', [a, b, c, d], 2, ['a', 'b']],
    ['in reverse, limit 2', [d, c, b, a], 2, ['a', 'b']],
    ['shuffled, limit 3', [c, a, d, b], 3, ['a', 'b', 'c']],
    ['fewer than the limit', [b, a], 5, ['a', 'b']],
    ['the same creation time: by id', [b, twinOfB, a], 3, ['a', 'a2', 'b']],
    ['limit 0', [a, b], 0, []],
    ['none', [], 3, []],
  ])('%s', (_name, records, limit, expected) => {
    expect(oldestOf(records, limit)).toEqual(expected);
  });

  test('GIVEN 1,000 records in random order WHEN the 10 oldest are kept THEN they are the 10 oldest, in order', () => {
    const all = Array.from({ length: 1000 }, (_, i) =>
      record(`i${String(i).padStart(4, '0')}`, new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString()),
    );
    const shuffled = [...all].sort(() => Math.random() - 0.5);
    expect(oldestOf(shuffled, 10)).toEqual(all.slice(0, 10).map((r) => r.spec.instanceId));
  });
});
