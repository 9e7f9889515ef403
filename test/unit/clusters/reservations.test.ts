import {
  reservationChange,
  reserve,
  reservedTotal,
  unreserve,
  type Reservations,
} from '../../../src/clusters/reservations.js';

describe('reservations', () => {
  const held: Reservations = { a: { cpu: '1', memory: '1Gi' }, b: { cpu: '500m' } };

  test.each<[string, Reservations | undefined, string, Record<string, string | number>, Reservations]>([
    ['a first reservation', undefined, 'a', { cpu: '1' }, { a: { cpu: '1' } }],
    ['another instance adds', { a: { cpu: '1' } }, 'b', { cpu: 2 }, { a: { cpu: '1' }, b: { cpu: '2' } }],
    ['the same instance again replaces', { a: { cpu: '1' } }, 'a', { cpu: '3' }, { a: { cpu: '3' } }],
    [
      'requests are stored canonically',
      {},
      'a',
      { memory: '1024Mi', cpu: '0.5' },
      { a: { cpu: '500m', memory: '1Gi' } },
    ],
    ['nothing requested reserves nothing, but is recorded', {}, 'a', {}, { a: {} }],
  ])('reserve: %s', (_name, before, instanceId, requests, after) => {
    expect(reserve(before, instanceId, requests)).toEqual(after);
  });

  test.each<[string, Reservations | undefined, Record<string, string>, ReturnType<typeof reservationChange>]>(
    [
      ['a first reservation grows', undefined, { cpu: '1' }, { kind: 'grows', patch: { cpu: '1' } }],
      ['a first reservation of nothing', {}, {}, { kind: 'shrinks', patch: {} }],
      [
        'the same requests again: none',
        held,
        { memory: '1024Mi', cpu: '1000m' },
        { kind: 'none', patch: { cpu: '1', memory: '1Gi' } },
      ],
      [
        'a plan with more cpu grows',
        held,
        { cpu: '2', memory: '1Gi' },
        { kind: 'grows', patch: { cpu: '2', memory: '1Gi' } },
      ],
      [
        'a new resource grows',
        held,
        { cpu: '1', memory: '1Gi', gpu: '1' },
        { kind: 'grows', patch: { cpu: '1', memory: '1Gi', gpu: '1' } },
      ],
      [
        'less cpu shrinks',
        held,
        { cpu: '500m', memory: '1Gi' },
        { kind: 'shrinks', patch: { cpu: '500m', memory: '1Gi' } },
      ],
      [
        'a resource no longer asked for is nulled in the patch',
        held,
        { cpu: '1' },
        { kind: 'shrinks', patch: { cpu: '1', memory: null } },
      ],
      [
        'more of one, less of another grows',
        held,
        { cpu: '2', memory: '512Mi' },
        { kind: 'grows', patch: { cpu: '2', memory: '512Mi' } },
      ],
    ],
  )('reservationChange of instance a: %s', (_name, before, requests, change) => {
    expect(reservationChange(before, 'a', requests)).toEqual(change);
  });

  test.each<[string, Reservations | undefined, string, Reservations]>([
    ['releases the instance', held, 'a', { b: { cpu: '500m' } }],
    ['without a reservation: unchanged', held, 'c', held],
    ['on nothing: nothing', undefined, 'a', {}],
  ])('unreserve: %s', (_name, before, instanceId, after) => {
    expect(unreserve(before, instanceId)).toEqual(after);
  });

  test.each(['__proto__', 'constructor', 'toString'])(
    'unreserve: an instance %s that reserved nothing leaves the reservations as they are',
    (instanceId) => {
      expect(unreserve(held, instanceId)).toBe(held);
    },
  );

  test('unreserve: an instance named __proto__ (as JSON from the apiserver holds it) is released', () => {
    const stored = JSON.parse('{"__proto__": {"cpu": "1"}, "b": {"cpu": "500m"}}') as Reservations;
    const released = unreserve(stored, '__proto__');
    expect(Object.keys(released)).toEqual(['b']);
    expect(Object.getPrototypeOf(released)).toBe(Object.prototype);
  });

  test('releasing twice is the same as once, and the input is left as it was', () => {
    const copy = structuredClone(held);
    const once = unreserve(held, 'a');
    expect(unreserve(once, 'a')).toEqual(once);
    expect(held).toEqual(copy);
  });

  test.each<[string, Reservations | undefined, Record<string, string>]>([
    ['none', undefined, {}],
    ['summed over the instances', held, { cpu: '1500m', memory: '1Gi' }],
  ])('reservedTotal: %s', (_name, reservations, total) => {
    expect(reservedTotal(reservations)).toEqual(total);
  });

  test('an invalid reservation names the instance', () => {
    expect(() => reservedTotal({ x: { cpu: 'lots' } })).toThrow(
      'invalid quantity "lots" for cpu in status.reserved of instance x',
    );
    expect(() => reserve({}, 'y', { cpu: '1..' })).toThrow('for cpu in the requests of instance y');
  });
});
