import {
  addAmounts,
  describeAmount,
  formatQuantity,
  formatResourceList,
  maxAmounts,
  parseQuantity,
  parseResourceList,
  subtractAmounts,
  type QuantityError,
} from '../../../src/clusters/quantity.js';

describe('parseQuantity', () => {
  test.each<[string | number, bigint]>([
    ['0', 0n],
    ['1', 1000n],
    ['2', 2000n],
    ['500m', 500n],
    ['0.5', 500n],
    ['.5', 500n],
    ['1.', 1000n],
    ['6.5', 6500n],
    ['+3', 3000n],
    ['-250m', -250n],
    ['1k', 1_000_000n],
    ['1.5k', 1_500_000n],
    ['1M', 1_000_000_000n],
    ['1G', 1_000_000_000_000n],
    ['1T', 10n ** 15n],
    ['1P', 10n ** 18n],
    ['1E', 10n ** 21n],
    ['1Ki', 1_024_000n],
    ['512Mi', 512n * 1024n ** 2n * 1000n],
    ['1Gi', 1024n ** 3n * 1000n],
    ['1.5Gi', 1_610_612_736_000n],
    ['1Ti', 1024n ** 4n * 1000n],
    ['1Pi', 1024n ** 5n * 1000n],
    ['1Ei', 1024n ** 6n * 1000n],
    ['1e3', 1_000_000n],
    ['1E3', 1_000_000n],
    ['1e+3', 1_000_000n],
    ['1e-3', 1n],
    ['2.5e2', 250_000n],
    ['100u', 1n], // finer than a milli-unit: rounded up
    ['1n', 1n],
    ['1500u', 2n],
    ['0.0001', 1n],
    ['-0.0001', -1n],
    ['1000n', 1n],
    ['1000000n', 1n],
    [' 2 ', 2000n],
    [4, 4000n],
    [0.5, 500n],
    ['123456789012345678901234567890', 123456789012345678901234567890000n],
  ])('%p is %p milli-units', (text, milli) => {
    expect(parseQuantity(text)).toBe(milli);
  });

  test('sums are exact where floating point drifts', () => {
    const tenths = Array.from({ length: 10 }, () => parseQuantity('0.1')).reduce((a, b) => a + b, 0n);
    expect(tenths).toBe(1000n);
    expect(0.1 * 3).not.toBe(0.3);
    expect(parseQuantity('0.1') * 3n).toBe(parseQuantity('0.3'));
  });

  test.each<[string | number, string]>([
    ['', 'invalid quantity "" for cpu: empty; expected a decimal number'],
    ['abc', 'invalid quantity "abc" for cpu: expected a decimal number with an optional suffix'],
    ['1.2.3', 'invalid quantity "1.2.3" for cpu'],
    ['1 Gi', 'invalid quantity "1 Gi" for cpu'],
    ['1gi', 'invalid quantity "1gi" for cpu'],
    ['1KiB', 'invalid quantity "1KiB" for cpu'],
    ['1e', 'invalid quantity "1e" for cpu'],
    ['e3', 'invalid quantity "e3" for cpu'],
    ['--1', 'invalid quantity "--1" for cpu'],
    ['.', 'invalid quantity "." for cpu'],
    ['1e41', 'invalid quantity "1e41" for cpu: exponent out of range (at most ±40)'],
    ['9'.repeat(80), 'too long'],
    [Number.NaN, 'invalid quantity "NaN" for cpu'],
    [Number.POSITIVE_INFINITY, 'invalid quantity "Infinity" for cpu'],
  ])('%p is refused: %s', (text, message) => {
    let caught: QuantityError | undefined;
    try {
      parseQuantity(text, 'cpu');
    } catch (err) {
      caught = err as QuantityError;
    }
    expect(caught?.name).toBe('QuantityError');
    expect(caught?.message).toContain(message);
  });
});

describe('formatQuantity', () => {
  test.each<[bigint, string, string]>([
    [0n, 'cpu', '0'],
    [500n, 'cpu', '500m'],
    [6500n, 'cpu', '6500m'],
    [2000n, 'cpu', '2'],
    [2_000_000n, 'cpu', '2k'],
    [1_500_000n, 'cpu', '1500'],
    [-250n, 'cpu', '-250m'],
    [1024n ** 3n * 1000n, 'memory', '1Gi'],
    [1_610_612_736_000n, 'memory', '1536Mi'],
    [1024n ** 6n * 2000n, 'memory', '2Ei'],
    [1024n ** 7n * 1000n, 'memory', '1024Ei'],
    [1_000_000_000_000n, 'memory', '1G'],
    [1000n, 'memory', '1'],
    [1024n ** 2n * 1000n, 'ephemeral-storage', '1Mi'],
    [1024n ** 3n * 2000n, 'hugepages-2Mi', '2Gi'],
    [1024n * 1000n, 'pods', '1024'],
    [10n ** 24n, 'cpu', '1000E'],
  ])('%p of %s is %p', (milli, resource, text) => {
    expect(formatQuantity(milli, resource)).toBe(text);
  });

  test.each(['500m', '2', '3k', '1Gi', '1536Mi', '1G', '7', '1Ki'])('%s parses back to itself', (text) => {
    const resource = /i$/.test(text) ? 'memory' : 'cpu';
    expect(formatQuantity(parseQuantity(text), resource)).toBe(text);
  });
});

describe('describeAmount', () => {
  test.each<[string, bigint, string]>([
    ['cpu', 6500n, '6.5 CPU'],
    ['cpu', 2000n, '2 CPU'],
    ['cpu', 250n, '0.25 CPU'],
    ['cpu', 1n, '0.001 CPU'],
    ['cpu', -500n, '-0.5 CPU'],
    ['memory', 1024n ** 3n * 12000n, '12Gi memory'],
    ['nvidia.com/gpu', 1000n, '1 nvidia.com/gpu'],
  ])('%s %p reads %p', (resource, milli, text) => {
    expect(describeAmount(resource, milli)).toBe(text);
  });
});

describe('resource lists', () => {
  test('a list parses resource by resource, integers too, and `requests.` prefixes are dropped', () => {
    expect(parseResourceList({ cpu: '500m', memory: '1Gi', pods: 110, 'requests.storage': '1Ki' })).toEqual({
      cpu: 500n,
      memory: 1024n ** 3n * 1000n,
      pods: 110_000n,
      storage: 1_024_000n,
    });
    expect(parseResourceList(undefined)).toEqual({});
  });

  test('an invalid entry names the resource and the field', () => {
    expect(() => parseResourceList({ cpu: '1', memory: 'lots' }, 'spec.totalCapacity')).toThrow(
      'invalid quantity "lots" for memory in spec.totalCapacity',
    );
  });

  test('canonical lists have sorted names and canonical quantities', () => {
    const list = formatResourceList({ memory: 1024n ** 3n * 1000n, cpu: 2500n, pods: 3000n });
    expect(list).toEqual({ cpu: '2500m', memory: '1Gi', pods: '3' });
    expect(Object.keys(list)).toEqual(['cpu', 'memory', 'pods']);
  });

  test.each<[string, bigint | undefined, bigint | undefined, bigint, bigint, bigint]>([
    // resource, a, b, a+b, a-b, max(a,b)
    ['cpu', 1500n, 500n, 2000n, 1000n, 1500n],
    ['cpu', 500n, 1500n, 2000n, -1000n, 1500n],
    ['cpu', 700n, undefined, 700n, 700n, 700n],
    ['cpu', undefined, 700n, 700n, -700n, 700n],
  ])('%s: %p and %p add to %p, differ by %p, max %p', (resource, a, b, sum, difference, max) => {
    const x = a === undefined ? {} : { [resource]: a };
    const y = b === undefined ? {} : { [resource]: b };
    expect(addAmounts(x, y)).toEqual({ [resource]: sum });
    expect(subtractAmounts(x, y)).toEqual({ [resource]: difference });
    expect(maxAmounts(x, y)).toEqual({ [resource]: max });
  });

  test('addition takes any number of lists', () => {
    expect(addAmounts({ cpu: 1n }, { memory: 2n }, { cpu: 3n })).toEqual({ cpu: 4n, memory: 2n });
    expect(addAmounts()).toEqual({});
  });
});
