/**
 * The format transformers of a reference (`format-transformers`), applied in their order to the
 * value its path found: the Composable operator's names, matched without regard to case
 * (`Base64ToString` and `base64ToString` are one), and `CSStringToArray`, the way back from
 * `ArrayToCSString`.
 *
 * A transformer given a value of a type it does not take fails with `WrongValueType`; given one it
 * takes but cannot transform (`"abc"` to an integer, text that is not base64), with
 * `ValueNotTransformable`. Neither message shows the value.
 */
import { IllFormedReference, ReferenceFailure } from './failures.js';

/** A transformer's name as this module writes it. */
export type TransformerName =
  | 'ToString'
  | 'StringToInt'
  | 'StringToFloat'
  | 'StringToBool'
  | 'Base64ToString'
  | 'StringToBase64'
  | 'ArrayToCSString'
  | 'CSStringToArray'
  | 'JsonToObject'
  | 'ObjectToJson';

const typeOf = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'an array'
      : typeof value === 'object'
        ? 'an object'
        : `a ${typeof value}`;

const wrongType = (name: TransformerName, takes: string, value: unknown) =>
  new ReferenceFailure('WrongValueType', `${name} takes ${takes}, not ${typeOf(value)}`);

const cannot = (name: TransformerName, why: string) =>
  new ReferenceFailure('ValueNotTransformable', `${name}: ${why}`);

/** A string, for transformers that take only strings. */
function text(name: TransformerName, value: unknown): string {
  if (typeof value !== 'string') throw wrongType(name, 'a string', value);
  return value;
}

/** A scalar as text; objects and arrays as JSON. */
const asText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;

const TRANSFORMERS: Readonly<Record<TransformerName, (value: unknown) => unknown>> = {
  ToString: (value) => {
    if (value === undefined) throw wrongType('ToString', 'a value', value);
    return asText(value);
  },
  StringToInt: (value) => {
    const s = text('StringToInt', value).trim();
    if (!/^[-+]?\d+$/.test(s)) throw cannot('StringToInt', 'the string is not an integer');
    const n = Number(s);
    if (!Number.isSafeInteger(n)) throw cannot('StringToInt', 'the integer is too large');
    return n;
  },
  StringToFloat: (value) => {
    const s = text('StringToFloat', value).trim();
    const n = s === '' ? NaN : Number(s);
    if (!Number.isFinite(n)) throw cannot('StringToFloat', 'the string is not a number');
    return n;
  },
  StringToBool: (value) => {
    const s = text('StringToBool', value).trim().toLowerCase();
    if (s === 'true') return true;
    if (s === 'false') return false;
    throw cannot('StringToBool', 'the string is neither true nor false');
  },
  Base64ToString: (value) => {
    const s = text('Base64ToString', value).replace(/\s+/g, '');
    if (!BASE64.test(s)) throw cannot('Base64ToString', 'the string is not base64');
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(s, 'base64'));
    } catch {
      throw cannot('Base64ToString', 'the decoded bytes are not UTF-8 text');
    }
  },
  StringToBase64: (value) => Buffer.from(text('StringToBase64', value), 'utf8').toString('base64'),
  ArrayToCSString: (value) => {
    if (!Array.isArray(value)) throw wrongType('ArrayToCSString', 'an array', value);
    return value.map(asText).join(',');
  },
  CSStringToArray: (value) => {
    const s = text('CSStringToArray', value);
    return s.trim() === '' ? [] : s.split(',').map((part) => part.trim());
  },
  JsonToObject: (value) => {
    const s = text('JsonToObject', value);
    try {
      return JSON.parse(s) as unknown;
    } catch {
      throw cannot('JsonToObject', 'the string is not JSON');
    }
  },
  ObjectToJson: (value) => {
    if (value === undefined) throw wrongType('ObjectToJson', 'a value', value);
    return JSON.stringify(value);
  },
};

const BY_LOWER_NAME = new Map(
  Object.keys(TRANSFORMERS).map((name) => [name.toLowerCase(), name as TransformerName]),
);

/** The transformers this module knows, as it writes them. */
export const TRANSFORMER_NAMES: readonly TransformerName[] = Object.keys(TRANSFORMERS) as TransformerName[];

/**
 * The transformer a reference names.
 *
 * @throws IllFormedReference for a name no transformer has.
 */
export function transformerNamed(name: unknown): TransformerName {
  const found = typeof name === 'string' ? BY_LOWER_NAME.get(name.trim().toLowerCase()) : undefined;
  if (!found)
    throw new IllFormedReference(
      `format-transformers: ${typeof name === 'string' ? JSON.stringify(name) : typeOf(name)} is not a transformer; known: ${TRANSFORMER_NAMES.join(', ')}`,
    );
  return found;
}

/**
 * `value` through `names`, in order; `seen` is called with every value on the way (the first and
 * each result), so that a caller can keep track of what came from a Secret.
 *
 * @throws ReferenceFailure WrongValueType or ValueNotTransformable.
 */
export function transform(
  value: unknown,
  names: readonly TransformerName[],
  seen: (value: unknown) => void = () => {},
): unknown {
  seen(value);
  let current = value;
  for (const name of names) {
    current = TRANSFORMERS[name](current);
    seen(current);
  }
  return current;
}
