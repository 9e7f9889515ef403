/**
 * The operations an instance's record says are starting or running on it: the instance's own
 * (update, deprovision, custom actions) and those of its bindings (bind, unbind). An instance
 * operation and a binding operation of the same instance never run at once; each side writes its
 * claim to the instance's record on the condition that the record is still the one it checked, so
 * of two racing requests the second always sees the first. Kept in one annotation of the record
 * (visible with kubectl), as JSON. Pure.
 */
import { isCustomAction } from './actions.js';
import { MOVE_OPERATION } from './migration.js';

/** One operation's claim: what it is and when it was claimed (ISO time). */
export interface OperationClaim {
  readonly operation: string;
  readonly at: string;
}

export interface OperationClaims {
  /** The instance's own operation. */
  readonly instance?: OperationClaim;
  /** The operations of its bindings, by binding id. */
  readonly bindings?: Readonly<Record<string, OperationClaim>>;
}

/**
 * How long a claim holds on its own, before its workflow is sure to have started: past it, a claim
 * holds only while its workflow runs.
 */
export const CLAIM_GRACE_MS = 30_000;

const isClaim = (value: unknown): value is OperationClaim =>
  !!value &&
  typeof value === 'object' &&
  typeof (value as OperationClaim).operation === 'string' &&
  typeof (value as OperationClaim).at === 'string' &&
  !Number.isNaN(Date.parse((value as OperationClaim).at));

/** The claims an annotation holds; what is not a claim in it is dropped. */
export function parseClaims(text: string | undefined): OperationClaims {
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return {};
  }
  if (!value || typeof value !== 'object') return {};
  const { instance, bindings } = value as Record<string, unknown>;
  // Built from entries, never by assignment: a binding id may be any string, `__proto__` too.
  const kept = Object.fromEntries(
    bindings && typeof bindings === 'object'
      ? Object.entries(bindings).filter((entry): entry is [string, OperationClaim] => isClaim(entry[1]))
      : [],
  );
  return {
    ...(isClaim(instance) ? { instance } : {}),
    ...(Object.keys(kept).length > 0 ? { bindings: kept } : {}),
  };
}

/** The annotation's text for `claims`; undefined when nothing is claimed. */
export function formatClaims(claims: OperationClaims): string | undefined {
  const bindings = claims.bindings && Object.keys(claims.bindings).length > 0 ? claims.bindings : undefined;
  if (!claims.instance && !bindings) return undefined;
  return JSON.stringify({
    ...(claims.instance ? { instance: claims.instance } : {}),
    ...(bindings ? { bindings } : {}),
  });
}

/** Whether the claim was made within the grace period before `now`: it holds whatever Temporal says. */
export const withinGrace = (claim: OperationClaim, now: number): boolean =>
  now - Date.parse(claim.at) < CLAIM_GRACE_MS;

/** Which side of the rule an operation is on, and, for a binding's, which binding. */
export type ClaimSide =
  | { readonly kind: 'instance'; readonly operation: string }
  | { readonly kind: 'binding'; readonly bindingId: string; readonly operation: string };

/**
 * The side of the rule an operation of `type` is on; none for a provision (nothing to bind yet).
 * A custom action (`x-<name>`, a generated secret's rotation among them) changes the instance like
 * an update, and is on the instance's side; so is a move.
 */
export function claimSideOf(type: string, bindingId: string | undefined): ClaimSide | undefined {
  if (type === 'update' || type === 'deprovision' || type === MOVE_OPERATION || isCustomAction(type))
    return { kind: 'instance', operation: type };
  if ((type === 'bind' || type === 'unbind') && bindingId !== undefined)
    return { kind: 'binding', bindingId, operation: type };
  return undefined;
}

/** Claims found stale: made before the grace period, their workflows no longer running. */
export interface StaleClaims {
  readonly instance?: boolean;
  readonly bindings?: ReadonlySet<string>;
}

/** The claims with `side`'s claim added (replacing the same binding's, or the instance's own), and `stale` dropped. */
export function claimed(
  claims: OperationClaims,
  side: ClaimSide,
  now: number,
  stale: StaleClaims = {},
): OperationClaims {
  const claim: OperationClaim = { operation: side.operation, at: new Date(now).toISOString() };
  const bindings = Object.fromEntries([
    ...Object.entries(claims.bindings ?? {}).filter(
      ([id]) => !stale.bindings?.has(id) && !(side.kind === 'binding' && id === side.bindingId),
    ),
    ...(side.kind === 'binding' ? [[side.bindingId, claim] as const] : []),
  ]);
  const instance = side.kind === 'instance' ? claim : stale.instance ? undefined : claims.instance;
  return { ...(instance ? { instance } : {}), ...(Object.keys(bindings).length ? { bindings } : {}) };
}

/**
 * The claims without `side`'s own claim made at `at` (after its workflow could not be started); a
 * later claim of the same side stays.
 */
export function released(claims: OperationClaims, side: ClaimSide, at: string): OperationClaims {
  if (side.kind === 'instance') {
    if (claims.instance?.at !== at) return claims;
    const { instance: _, ...rest } = claims;
    return rest;
  }
  const bindings = Object.fromEntries(
    Object.entries(claims.bindings ?? {}).filter(
      ([id, claim]) => !(id === side.bindingId && claim.at === at),
    ),
  );
  return {
    ...(claims.instance ? { instance: claims.instance } : {}),
    ...(Object.keys(bindings).length ? { bindings } : {}),
  };
}
