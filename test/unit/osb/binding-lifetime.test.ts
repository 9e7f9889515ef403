/** A binding's lifetime from its plan: durations, the plan's rule, and the times of a binding. Pure. */
import {
  bindingLifetimeProblem,
  bindingTimes,
  hasExpired,
  parseDuration,
} from '../../../src/osb/binding-lifetime.js';
import type { SFPlan } from '../../../src/resources/types.js';
import { osbError } from '../../support/osb-error.js';

const plan = (bindingLifetime?: unknown): SFPlan => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: { name: 'p' },
  spec: {
    id: 'p',
    name: 'small',
    description: 'd',
    serviceId: 's',
    templates: [],
    ...(bindingLifetime !== undefined ? { bindingLifetime: bindingLifetime as never } : {}),
  },
});

const HOUR = 3_600_000;

describe('parseDuration', () => {
  test.each([
    ['720h', 720 * HOUR],
    ['30d', 720 * HOUR],
    ['1h30m', 1.5 * HOUR],
    ['1d2h3m4s', 86_400_000 + 2 * HOUR + 3 * 60_000 + 4_000],
    ['90s', 90_000],
    ['0h1s', 1_000],
    ['36500d', 36_500 * 24 * HOUR],
  ])('GIVEN %p THEN %p ms', (text, ms) => {
    expect(parseDuration(text)).toEqual({ ms });
  });

  test.each([
    ['', '"" is not a duration such as 720h, 30d or 1h30m'],
    ['720', '"720" is not a duration such as 720h, 30d or 1h30m'],
    ['1.5h', '"1.5h" is not a duration such as 720h, 30d or 1h30m'],
    ['-1h', '"-1h" is not a duration such as 720h, 30d or 1h30m'],
    ['1w', '"1w" is not a duration such as 720h, 30d or 1h30m'],
    ['30m1h', '"30m1h" is not a duration such as 720h, 30d or 1h30m'],
    ['1h1h', '"1h1h" is not a duration such as 720h, 30d or 1h30m'],
    [' 1h', '" 1h" is not a duration such as 720h, 30d or 1h30m'],
    ['1H', '"1H" is not a duration such as 720h, 30d or 1h30m'],
    ['0s', '"0s" is no time at all; it must be longer than 0s'],
    ['0d0h', '"0d0h" is no time at all; it must be longer than 0s'],
    ['36501d', '"36501d" is longer than 36500d (100 years)'],
    ['99999999999999999999d', '"99999999999999999999d" is longer than 36500d (100 years)'],
    [720, 'is not a duration such as 720h, 30d or 1h30m (a string)'],
  ])('GIVEN %p THEN the problem %p', (text, problem) => {
    expect(parseDuration(text)).toEqual({ problem });
  });
});

describe('bindingLifetimeProblem', () => {
  test.each([
    ['no lifetime', undefined, undefined],
    ['expiresAfter alone', { expiresAfter: '720h' }, undefined],
    ['both', { expiresAfter: '720h', renewBefore: '168h' }, undefined],
    ['renewBefore just shorter', { expiresAfter: '1h', renewBefore: '59m59s' }, undefined],
    ['not an object', '720h', 'bindingLifetime must be an object with expiresAfter (and renewBefore)'],
    ['a list', ['720h'], 'bindingLifetime must be an object with expiresAfter (and renewBefore)'],
    ['null', null, 'bindingLifetime must be an object with expiresAfter (and renewBefore)'],
    [
      'no expiresAfter',
      { renewBefore: '1h' },
      'bindingLifetime.expiresAfter is not a duration such as 720h, 30d or 1h30m (a string)',
    ],
    [
      'a malformed expiresAfter',
      { expiresAfter: '30 days' },
      'bindingLifetime.expiresAfter "30 days" is not a duration such as 720h, 30d or 1h30m',
    ],
    [
      'a malformed renewBefore',
      { expiresAfter: '30d', renewBefore: '1 week' },
      'bindingLifetime.renewBefore "1 week" is not a duration such as 720h, 30d or 1h30m',
    ],
    [
      'a zero renewBefore',
      { expiresAfter: '30d', renewBefore: '0m' },
      'bindingLifetime.renewBefore "0m" is no time at all; it must be longer than 0s',
    ],
    [
      'a renewBefore as long as the lifetime',
      { expiresAfter: '24h', renewBefore: '1d' },
      'bindingLifetime.renewBefore (1d) must be shorter than expiresAfter (24h): the platform renews that long before the credentials expire',
    ],
    [
      'a renewBefore longer than the lifetime',
      { expiresAfter: '24h', renewBefore: '168h' },
      'bindingLifetime.renewBefore (168h) must be shorter than expiresAfter (24h): the platform renews that long before the credentials expire',
    ],
  ])('GIVEN %s THEN %p', (_n, lifetime, problem) => {
    expect(bindingLifetimeProblem(plan(lifetime))).toBe(problem);
  });
});

describe('bindingTimes', () => {
  const created = new Date('2026-11-24T21:00:00.250Z');

  test('GIVEN both durations THEN expires_at after the creation, renew_before ahead of it, in UTC', () => {
    expect(bindingTimes(plan({ expiresAfter: '720h', renewBefore: '168h' }), created)).toEqual({
      expiresAt: '2026-12-24T21:00:00.250Z',
      renewBefore: '2026-12-17T21:00:00.250Z',
    });
  });

  test('GIVEN expiresAfter alone THEN no renewBefore', () => {
    expect(bindingTimes(plan({ expiresAfter: '1h30m' }), created)).toEqual({
      expiresAt: '2026-11-24T22:30:00.250Z',
    });
  });

  test('GIVEN no lifetime THEN no times', () => {
    expect(bindingTimes(plan(), created)).toBeUndefined();
  });

  test('GIVEN the same creation time THEN the same times (they depend on nothing else)', () => {
    const p = plan({ expiresAfter: '30d', renewBefore: '7d' });
    expect(bindingTimes(p, new Date(created))).toEqual(bindingTimes(p, created));
  });

  test('GIVEN an invalid lifetime THEN 500 naming the plan and the problem', () => {
    const failure = osbError(() => bindingTimes(plan({ expiresAfter: '1h', renewBefore: '2h' }), created));
    expect([failure.status, failure.toBody()]).toEqual([
      500,
      {
        error: 'InternalError',
        description:
          'Plan small cannot create bindings: its bindingLifetime.renewBefore (2h) must be shorter than expiresAfter (1h): the platform renews that long before the credentials expire.',
      },
    ]);
  });
});

describe('hasExpired', () => {
  const now = new Date('2026-11-24T21:00:00Z');
  test.each([
    ['no expiry', {}, false],
    ['an expiry ahead', { expiresAt: '2026-11-24T21:00:01Z' }, false],
    ['an expiry now', { expiresAt: '2026-11-24T21:00:00.000Z' }, true],
    ['an expiry past', { expiresAt: '2026-11-24T20:59:59Z' }, true],
    ['an expiry that is not a time', { expiresAt: 'soon' }, false],
  ])('GIVEN %s THEN %p', (_n, times, expired) => {
    expect(hasExpired(times, now)).toBe(expired);
  });
});
