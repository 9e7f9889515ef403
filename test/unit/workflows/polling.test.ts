import {
  FIRST_POLL_MS,
  LONGEST_POLL_MS,
  MAX_CHECKS,
  longestPoll,
  nextPoll,
} from '../../../src/workflows/polling.js';

/** The checks an operator that never answers gets before the deadline, as waitForOperator makes them. */
function checksUntilDeadline(deadlineSeconds: number): { checks: number; waits: number[] } {
  const deadline = deadlineSeconds * 1000;
  let now = 0;
  let delay = FIRST_POLL_MS;
  const waits: number[] = [];
  let checks = 0;
  for (;;) {
    checks += 1;
    const left = deadline - now;
    if (left <= 0) return { checks, waits };
    const wait = Math.min(delay, left);
    waits.push(wait);
    now += wait;
    delay = nextPoll(delay, deadlineSeconds);
  }
}

describe('how often an operation checks the operator', () => {
  test('GIVEN an operation that is still running WHEN it waits THEN it backs off from 250 ms to 10 s', () => {
    const { waits } = checksUntilDeadline(3600);
    expect(waits.slice(0, 8)).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    expect(Math.max(...waits)).toBe(LONGEST_POLL_MS);
  });

  test.each([60, 3600, 6 * 3600, 86_400, 7 * 86_400, 30 * 86_400])(
    'GIVEN a deadline of %i s WHEN the operator never answers THEN about MAX_CHECKS checks at most, the last at the deadline',
    (deadlineSeconds) => {
      const { checks, waits } = checksUntilDeadline(deadlineSeconds);
      // the doubling from 250 ms adds a few checks to the steady ones
      expect(checks).toBeLessThanOrEqual(MAX_CHECKS + 20);
      expect(waits.reduce((a, b) => a + b, 0)).toBe(deadlineSeconds * 1000);
    },
  );

  test('GIVEN a deadline of a day WHEN it waits THEN the longest wait grows so the history stays bounded', () => {
    expect(longestPoll(3600)).toBe(10_000);
    expect(longestPoll(10_000)).toBe(10_000);
    expect(longestPoll(86_400)).toBe(86_400);
    expect(nextPoll(80_000, 86_400)).toBe(86_400);
  });
});
