/**
 * A binding's lifetime (OSB 2.16 binding `metadata`): a plan's `bindingLifetime` says how long its
 * bindings' credentials last and when the platform should renew them; each binding gets its
 * `expires_at` and `renew_before` once, when it is created, from its creation time. Pure.
 */
import type { BindingLifetime, SFPlan } from '../resources/types.js';
import { internalError } from './errors.js';

/** A binding's times, as its record keeps them (RFC 3339, UTC). */
export interface BindingTimes {
  /** When the binding's credentials expire (OSB `metadata.expires_at`). */
  readonly expiresAt: string;
  /** When the platform should have rotated the binding (OSB `metadata.renew_before`). */
  readonly renewBefore?: string;
}

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 } as const;
/** Whole numbers of days, hours, minutes and seconds, each unit at most once and in that order. */
const DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;
/** The longest lifetime a plan may give: 100 years (times beyond stay valid dates). */
const MAX_MS = 36_500 * UNIT_MS.d;
const EXAMPLES = 'such as 720h, 30d or 1h30m';

/**
 * A duration as a plan writes it: whole numbers of days (`d`), hours (`h`), minutes (`m`) and
 * seconds (`s`), largest unit first, each at most once (`30d`, `720h`, `1h30m`, `90s`). No
 * fractions, signs, spaces or other units.
 *
 * @returns the duration in milliseconds, or a reason it is not one.
 */
export function parseDuration(text: unknown): { readonly ms: number } | { readonly problem: string } {
  if (typeof text !== 'string') return { problem: `is not a duration ${EXAMPLES} (a string)` };
  const match = DURATION.exec(text);
  if (!text || !match) return { problem: `${JSON.stringify(text)} is not a duration ${EXAMPLES}` };
  const [, d, h, m, s] = match;
  const ms =
    Number(d ?? 0) * UNIT_MS.d +
    Number(h ?? 0) * UNIT_MS.h +
    Number(m ?? 0) * UNIT_MS.m +
    Number(s ?? 0) * UNIT_MS.s;
  if (ms <= 0) return { problem: `${JSON.stringify(text)} is no time at all; it must be longer than 0s` };
  if (ms > MAX_MS) return { problem: `${JSON.stringify(text)} is longer than 36500d (100 years)` };
  return { ms };
}

/** The lifetime in milliseconds, or what is wrong with it. */
function lifetimeMs(
  lifetime: BindingLifetime,
): { readonly expiresAfter: number; readonly renewBefore?: number } | { readonly problem: string } {
  if (lifetime === null || typeof lifetime !== 'object' || Array.isArray(lifetime))
    return { problem: 'bindingLifetime must be an object with expiresAfter (and renewBefore)' };
  const expires = parseDuration(lifetime.expiresAfter);
  if ('problem' in expires) return { problem: `bindingLifetime.expiresAfter ${expires.problem}` };
  if (lifetime.renewBefore === undefined) return { expiresAfter: expires.ms };
  const renew = parseDuration(lifetime.renewBefore);
  if ('problem' in renew) return { problem: `bindingLifetime.renewBefore ${renew.problem}` };
  if (renew.ms >= expires.ms) {
    return {
      problem: `bindingLifetime.renewBefore (${lifetime.renewBefore}) must be shorter than expiresAfter (${lifetime.expiresAfter}): the platform renews that long before the credentials expire`,
    };
  }
  return { expiresAfter: expires.ms, renewBefore: renew.ms };
}

/** What is wrong with a plan's `bindingLifetime`, if anything (nothing when it has none). */
export function bindingLifetimeProblem(plan: SFPlan): string | undefined {
  const lifetime = plan.spec.bindingLifetime;
  if (lifetime === undefined) return undefined;
  const found = lifetimeMs(lifetime);
  return 'problem' in found ? found.problem : undefined;
}

/**
 * The times of a binding of `plan` created at `createdAt`: `expiresAt` is `expiresAfter` later,
 * `renewBefore` is `renewBefore` ahead of `expiresAt`. Undefined when the plan gives no lifetime.
 *
 * @throws OsbError 500 naming the plan when its `bindingLifetime` is invalid (such a plan is left
 *   out of the catalog; a platform that still names it gets no binding without a lifetime).
 */
export function bindingTimes(plan: SFPlan, createdAt: Date): BindingTimes | undefined {
  const lifetime = plan.spec.bindingLifetime;
  if (lifetime === undefined) return undefined;
  const found = lifetimeMs(lifetime);
  if ('problem' in found) {
    throw internalError(`Plan ${plan.spec.name} cannot create bindings: its ${found.problem}.`);
  }
  const expires = createdAt.getTime() + found.expiresAfter;
  return {
    expiresAt: new Date(expires).toISOString(),
    ...(found.renewBefore !== undefined
      ? { renewBefore: new Date(expires - found.renewBefore).toISOString() }
      : {}),
  };
}

/** Whether a binding with these times has expired at `now`; one without times never does. */
export function hasExpired(times: { readonly expiresAt?: string }, now: Date): boolean {
  if (times.expiresAt === undefined) return false;
  const at = Date.parse(times.expiresAt);
  return !Number.isNaN(at) && at <= now.getTime();
}
