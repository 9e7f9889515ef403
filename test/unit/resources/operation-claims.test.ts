import {
  CLAIM_GRACE_MS,
  claimSideOf,
  claimed,
  formatClaims,
  parseClaims,
  released,
  withinGrace,
} from '../../../src/resources/operation-claims.js';

const T0 = Date.parse('2026-11-24T12:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('operation claims', () => {
  test.each([
    ['nothing', undefined, {}],
    ['not JSON', '{not json', {}],
    ['not an object', '[1,2]', {}],
    ['a claim without a time', '{"instance":{"operation":"update"}}', {}],
    ['a claim with an unreadable time', '{"instance":{"operation":"update","at":"soon"}}', {}],
    [
      'an instance claim and a binding claim, and junk beside them',
      `{"instance":{"operation":"deprovision","at":"${at(0)}"},"bindings":{"b-1":{"operation":"bind","at":"${at(1)}"},"b-2":7},"x":1}`,
      {
        instance: { operation: 'deprovision', at: at(0) },
        bindings: { 'b-1': { operation: 'bind', at: at(1) } },
      },
    ],
  ])('GIVEN %s WHEN parsed THEN the claims in it', (_n, text, expected) => {
    expect(parseClaims(text)).toEqual(expected);
  });

  test('GIVEN a binding id like an inherited name WHEN parsed and claimed THEN it is an ordinary key', () => {
    const text = `{"bindings":{"__proto__":{"operation":"bind","at":"${at(0)}"}}}`;
    const claims = parseClaims(text);
    expect(Object.getPrototypeOf(claims.bindings)).toBe(Object.prototype);
    expect(Object.keys(claims.bindings!)).toEqual(['__proto__']);
    const next = claimed(claims, { kind: 'binding', bindingId: 'constructor', operation: 'bind' }, T0);
    expect(Object.keys(next.bindings!).sort()).toEqual(['__proto__', 'constructor']);
    expect(parseClaims(formatClaims(next))).toEqual(next);
  });

  test('GIVEN claims WHEN a binding claims THEN its claim replaces its own earlier one and stale ones go', () => {
    const claims = {
      instance: { operation: 'update', at: at(0) },
      bindings: { old: { operation: 'bind', at: at(0) }, same: { operation: 'bind', at: at(0) } },
    };
    const next = claimed(claims, { kind: 'binding', bindingId: 'same', operation: 'unbind' }, T0 + 5, {
      instance: true,
      bindings: new Set(['old']),
    });
    expect(next).toEqual({ bindings: { same: { operation: 'unbind', at: at(5) } } });
  });

  test('GIVEN claims WHEN the instance claims THEN its claim replaces the instance’s and bindings stay unless stale', () => {
    const claims = { bindings: { b: { operation: 'bind', at: at(0) } } };
    expect(claimed(claims, { kind: 'instance', operation: 'deprovision' }, T0)).toEqual({
      instance: { operation: 'deprovision', at: at(0) },
      bindings: { b: { operation: 'bind', at: at(0) } },
    });
    expect(
      claimed(claims, { kind: 'instance', operation: 'update' }, T0, { bindings: new Set(['b']) }),
    ).toEqual({ instance: { operation: 'update', at: at(0) } });
  });

  test('GIVEN a claim WHEN released THEN only that very claim goes, not a later one of the same side', () => {
    const claims = {
      instance: { operation: 'update', at: at(0) },
      bindings: { b: { operation: 'bind', at: at(2) } },
    };
    expect(released(claims, { kind: 'binding', bindingId: 'b', operation: 'bind' }, at(2))).toEqual({
      instance: claims.instance,
    });
    expect(released(claims, { kind: 'binding', bindingId: 'b', operation: 'bind' }, at(1))).toEqual(claims);
    expect(released(claims, { kind: 'instance', operation: 'update' }, at(0))).toEqual({
      bindings: claims.bindings,
    });
    expect(released(claims, { kind: 'instance', operation: 'update' }, at(9))).toEqual(claims);
  });

  test('GIVEN nothing claimed WHEN formatted THEN no annotation', () => {
    expect(formatClaims({})).toBeUndefined();
    expect(formatClaims({ bindings: {} })).toBeUndefined();
  });

  test('GIVEN a claim WHEN within and past the grace period THEN it holds on its own only within', () => {
    const claim = { operation: 'bind', at: at(0) };
    expect(withinGrace(claim, T0 + CLAIM_GRACE_MS - 1)).toBe(true);
    expect(withinGrace(claim, T0 + CLAIM_GRACE_MS)).toBe(false);
  });

  test.each([
    ['update', undefined, { kind: 'instance', operation: 'update' }],
    ['deprovision', undefined, { kind: 'instance', operation: 'deprovision' }],
    ['x-backup', undefined, { kind: 'instance', operation: 'x-backup' }],
    ['x-rotate-secret', undefined, { kind: 'instance', operation: 'x-rotate-secret' }],
    ['bind', 'b-1', { kind: 'binding', bindingId: 'b-1', operation: 'bind' }],
    ['unbind', 'b-1', { kind: 'binding', bindingId: 'b-1', operation: 'unbind' }],
    ['provision', undefined, undefined],
    ['bind', undefined, undefined],
  ])('GIVEN a %s (binding %s) THEN it claims %j', (type, bindingId, side) => {
    expect(claimSideOf(type, bindingId)).toEqual(side);
  });
});
