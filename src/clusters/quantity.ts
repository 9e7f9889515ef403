/**
 * Kubernetes resource quantities (`500m`, `2`, `1Gi`, `1e3`, `1.5k`), parsed exactly into integers of
 * milli-units (a milli-CPU, a thousandth of a byte), so sums and differences never drift. Values
 * finer than a milli-unit are rounded up, as Kubernetes rounds them.
 *
 * Pure: no I/O, no Node builtins; safe to import from workflows.
 */

/** A resource list as Kubernetes writes it: resource name to quantity (`{ cpu: '500m', memory: '1Gi' }`). */
export type ResourceList = Readonly<Record<string, string>>;

/** A resource list as a status or a spec may hold it: the CRDs accept integers as well as strings. */
export type ResourceListInput = Readonly<Record<string, string | number>>;

/** Parsed amounts: resource name to milli-units. */
export type Amounts = Readonly<Record<string, bigint>>;

/**
 * A quantity that does not parse. `message` names the value, where it came from, and the accepted
 * forms. Classify by `name`, not `instanceof`, across module copies.
 */
export class QuantityError extends Error {
  constructor(
    message: string,
    /** The text that did not parse. */
    readonly value: string,
  ) {
    super(message);
    this.name = 'QuantityError';
  }
}

const BINARY_SUFFIXES = ['Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'] as const;
const DECIMAL_SUFFIXES = ['k', 'M', 'G', 'T', 'P', 'E'] as const;

/** Power of ten of each decimal suffix. */
const DECIMAL_EXPONENT: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
/** Power of 1024 of each binary suffix. */
const BINARY_POWER: Readonly<Record<string, number>> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

/** Longer texts are refused before any arithmetic, which stays cheap and bounded. */
const MAX_LENGTH = 64;
/** Widest decimal exponent accepted (`1e40`); Kubernetes quantities never come near it. */
const MAX_EXPONENT = 40;

const FORMS =
  'a decimal number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)';

const TEN = 10n;
const pow10 = (n: number): bigint => TEN ** BigInt(n);

/** Parsed quantities by text: parsing is pure, so a hit gives exactly what parsing would. */
const parsed = new Map<string, bigint>();
const PARSED_LIMIT = 4096;

/**
 * Milli-units of a quantity. `where` (for example `cpu in spec.totalCapacity`) goes into the error
 * message.
 *
 * @throws QuantityError when the text is not a Kubernetes quantity.
 */
export function parseQuantity(value: string | number, where?: string): bigint {
  const text = typeof value === 'number' ? numberText(value, where) : value.trim();
  const known = parsed.get(text);
  if (known !== undefined) return known;
  const milli = parseText(text, where);
  if (parsed.size >= PARSED_LIMIT) parsed.clear();
  parsed.set(text, milli);
  return milli;
}

function numberText(value: number, where: string | undefined): string {
  if (!Number.isFinite(value)) throw quantityError(String(value), where);
  // Integers as the CRDs store them; other numbers through their shortest exact decimal form.
  return Number.isSafeInteger(value) ? String(value) : value.toString();
}

function quantityError(text: string, where: string | undefined, why = `expected ${FORMS}`): QuantityError {
  return new QuantityError(`invalid quantity "${text}"${where ? ` for ${where}` : ''}: ${why}`, text);
}

function parseText(text: string, where: string | undefined): bigint {
  if (text.length === 0) throw quantityError(text, where, `empty; expected ${FORMS}`);
  if (text.length > MAX_LENGTH) throw quantityError(text.slice(0, MAX_LENGTH) + '…', where, 'too long');
  const match = QUANTITY.exec(text);
  if (!match) throw quantityError(text, where);
  const [, sign, number, suffix, exponentText] = match as unknown as [
    string,
    string,
    string,
    string | undefined,
    string | undefined,
  ];
  const [whole, fraction = ''] = number.split('.') as [string, string | undefined];
  let exponent = 3 - fraction.length; // milli-units
  let binaryPower = 0;
  if (exponentText !== undefined) {
    const e = Number(exponentText);
    if (!Number.isSafeInteger(e) || Math.abs(e) > MAX_EXPONENT)
      throw quantityError(text, where, `exponent out of range (at most ±${MAX_EXPONENT})`);
    exponent += e;
  } else if (suffix !== undefined) {
    if (suffix in BINARY_POWER) binaryPower = BINARY_POWER[suffix]!;
    else exponent += DECIMAL_EXPONENT[suffix]!;
  }
  let magnitude = BigInt((whole || '0') + fraction) * 1024n ** BigInt(binaryPower);
  if (exponent >= 0) magnitude *= pow10(exponent);
  else {
    const divisor = pow10(-exponent);
    // Rounded up (away from zero), as Kubernetes rounds what is finer than a milli-unit.
    magnitude = (magnitude + divisor - 1n) / divisor;
  }
  return sign === '-' ? -magnitude : magnitude;
}

/** Resources Kubernetes writes with binary suffixes (memory, storage, huge pages). */
export function isBinaryResource(resource: string): boolean {
  return /(^|[-./])(memory|storage)$/.test(resource) || resource.startsWith('hugepages-');
}

/**
 * The canonical text of an amount, as Kubernetes writes it: `6500m` when it has milli-units, else
 * the largest suffix that divides it exactly, binary for memory-like resources (`1Gi`) and decimal
 * for the others (`2`, `3k`).
 */
export function formatQuantity(milli: bigint, resource = 'cpu'): string {
  if (milli < 0n) return `-${formatQuantity(-milli, resource)}`;
  if (milli % 1000n !== 0n) return `${milli}m`;
  const units = milli / 1000n;
  if (units === 0n) return '0';
  if (isBinaryResource(resource) && units % 1024n === 0n) {
    let value = units;
    let index = -1;
    while (index < BINARY_SUFFIXES.length - 1 && value % 1024n === 0n) {
      value /= 1024n;
      index += 1;
    }
    return `${value}${BINARY_SUFFIXES[index]}`;
  }
  let value = units;
  let index = -1;
  while (index < DECIMAL_SUFFIXES.length - 1 && value % 1000n === 0n) {
    value /= 1000n;
    index += 1;
  }
  return index < 0 ? `${value}` : `${value}${DECIMAL_SUFFIXES[index]}`;
}

/**
 * An amount for people: CPU in cores with its decimals (`6.5 CPU`), other resources in their
 * canonical quantity and name (`12Gi memory`).
 */
export function describeAmount(resource: string, milli: bigint): string {
  if (resource !== 'cpu') return `${formatQuantity(milli, resource)} ${resource}`;
  const negative = milli < 0n;
  const abs = negative ? -milli : milli;
  const fraction = (abs % 1000n).toString().padStart(3, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${abs / 1000n}${fraction ? `.${fraction}` : ''} CPU`;
}

/**
 * Parses every quantity of a list. `where` names the list in error messages (`spec.totalCapacity`).
 * A `requests.` prefix (as a ResourceQuota writes `requests.cpu`) is dropped from the names.
 *
 * @throws QuantityError naming the first resource that does not parse.
 */
export function parseResourceList(list: ResourceListInput | undefined, where?: string): Amounts {
  const amounts: Record<string, bigint> = {};
  if (!list) return amounts;
  for (const key in list) {
    const resource = key.startsWith('requests.') ? key.slice('requests.'.length) : key;
    let milli: bigint;
    try {
      milli = parseQuantity(list[key]!);
    } catch {
      // Parsed again only to name the field in the message.
      milli = parseQuantity(list[key]!, where ? `${resource} in ${where}` : resource);
    }
    const previous = amounts[resource];
    amounts[resource] = previous === undefined ? milli : previous + milli;
  }
  return amounts;
}

/** The canonical resource list of amounts, its names in a stable (sorted) order. */
export function formatResourceList(amounts: Amounts): Record<string, string> {
  const list: Record<string, string> = {};
  for (const resource of Object.keys(amounts).sort())
    list[resource] = formatQuantity(amounts[resource]!, resource);
  return list;
}

/** Amounts added, resource by resource; a resource missing on one side counts as zero. */
export function addAmounts(...lists: readonly Amounts[]): Amounts {
  const sum: Record<string, bigint> = {};
  for (const list of lists)
    for (const [resource, milli] of Object.entries(list)) sum[resource] = (sum[resource] ?? 0n) + milli;
  return sum;
}

/** `a - b`, resource by resource, over the resources of both; results may be negative. */
export function subtractAmounts(a: Amounts, b: Amounts): Amounts {
  const difference: Record<string, bigint> = { ...a };
  for (const [resource, milli] of Object.entries(b))
    difference[resource] = (difference[resource] ?? 0n) - milli;
  return difference;
}

/** The larger amount of each resource, over the resources of both; a missing resource counts as zero. */
export function maxAmounts(a: Amounts, b: Amounts): Amounts {
  const max: Record<string, bigint> = {};
  for (const resource of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[resource] ?? 0n;
    const y = b[resource] ?? 0n;
    max[resource] = x > y ? x : y;
  }
  return max;
}
