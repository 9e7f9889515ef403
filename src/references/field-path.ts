/**
 * The field path of a reference: the part of kubectl's JSONPath that names one value in an object.
 *
 *   .data.password                      a field (letters, digits, `_` and `-`)
 *   {.status.endpoints[0].host}         braces are optional; `[n]` indexes an array (`[-1]` the last)
 *   .metadata.labels['app.kubernetes.io/name']   a quoted key (`'` or `"`) for dots, slashes, spaces
 *   {.spec.ports[?(@.name=="http")].port}        the first element whose field equals a literal
 *                                                (`==` or `!=`; a string, number, true, false)
 *
 * Not supported, and said so when used: wildcards (`*`), recursive descent (`..`), slices
 * (`[a:b]`), unions (`[a,b]`), and kubectl's `range`/`end` templates. A path names one value.
 */
import { IllFormedReference, ReferenceFailure } from './failures.js';

/** One step of a path. */
export type PathStep =
  | { readonly field: string }
  | { readonly index: number }
  | {
      readonly filter: {
        readonly field: readonly (string | number)[];
        readonly op: '==' | '!=';
        readonly value: string | number | boolean;
      };
    };

const FIELD = /^[A-Za-z0-9_-]+/;

const unsupported = (path: string, what: string) =>
  new IllFormedReference(`path ${JSON.stringify(path)}: ${what} is not supported (a path names one value)`);

const malformed = (path: string, what: string) =>
  new IllFormedReference(`path ${JSON.stringify(path)} is not a field path: ${what}`);

/** Reads a quoted string at `text[at]` (`'` or `"`, `\` escapes the next character). */
function quoted(text: string, at: number, path: string): { value: string; end: number } {
  const quote = text[at]!;
  let value = '';
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) value += text[++i];
    else if (c === quote) return { value, end: i + 1 };
    else value += c;
  }
  throw malformed(path, 'a quote is not closed');
}

/** Reads the steps of `text` from `at` until `stop` (a character) or the end. */
function readSteps(
  text: string,
  at: number,
  path: string,
  inFilter: boolean,
): { steps: PathStep[]; end: number } {
  const steps: PathStep[] = [];
  let i = at;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '.') {
      if (text[i + 1] === '.') throw unsupported(path, 'recursive descent (..)');
      if (text[i + 1] === '*') throw unsupported(path, 'a wildcard (*)');
      const name = FIELD.exec(text.slice(i + 1))?.[0];
      if (!name)
        throw malformed(path, `a field name is missing after the dot at ${i}; quote keys like ['a.b']`);
      steps.push({ field: name });
      i += 1 + name.length;
    } else if (c === '[') {
      const next = text[i + 1];
      if (next === "'" || next === '"') {
        const { value, end } = quoted(text, i + 1, path);
        if (text[end] === ',') throw unsupported(path, 'a union ([a,b])');
        if (text[end] !== ']') throw malformed(path, `] expected at ${end}`);
        steps.push({ field: value });
        i = end + 1;
      } else if (next === '?') {
        if (inFilter) throw unsupported(path, 'a filter within a filter');
        const { step, end } = readFilter(text, i, path);
        steps.push(step);
        i = end;
      } else {
        const close = text.indexOf(']', i);
        if (close < 0) throw malformed(path, 'a [ is not closed');
        const inside = text.slice(i + 1, close).trim();
        if (inside === '*') throw unsupported(path, 'a wildcard ([*])');
        if (inside.includes(':')) throw unsupported(path, 'a slice ([a:b])');
        if (inside.includes(',')) throw unsupported(path, 'a union ([a,b])');
        if (!/^-?\d+$/.test(inside))
          throw malformed(path, `[${inside}] is neither an index nor a quoted key`);
        steps.push({ index: Number(inside) });
        i = close + 1;
      }
    } else if (inFilter) {
      return { steps, end: i };
    } else {
      throw malformed(path, `unexpected ${JSON.stringify(c)} at ${i}; a step starts with . or [`);
    }
  }
  return { steps, end: i };
}

/** Reads `[?(@.field == literal)]` at `text[at]`. */
function readFilter(text: string, at: number, path: string): { step: PathStep; end: number } {
  let i = at + 2;
  if (text[i] !== '(' || text[i + 1] !== '@') throw malformed(path, `a filter reads [?(@.field == value)]`);
  const { steps, end } = readSteps(text, i + 2, path, true);
  const field = steps.map((s) => {
    if ('field' in s) return s.field;
    if ('index' in s) return s.index;
    throw unsupported(path, 'a filter within a filter');
  });
  if (field.length === 0) throw malformed(path, 'a filter compares a field of the element: @.field');
  i = end;
  while (text[i] === ' ') i++;
  const op = text.slice(i, i + 2);
  if (op !== '==' && op !== '!=') throw unsupported(path, `a filter other than == and != (at ${i})`);
  i += 2;
  while (text[i] === ' ') i++;
  let value: string | number | boolean;
  if (text[i] === "'" || text[i] === '"') {
    const read = quoted(text, i, path);
    value = read.value;
    i = read.end;
  } else {
    const literal = /^(true|false|-?\d+(?:\.\d+)?)/.exec(text.slice(i))?.[0];
    if (!literal) throw malformed(path, `a filter compares with a quoted string, a number, true or false`);
    value = literal === 'true' ? true : literal === 'false' ? false : Number(literal);
    i += literal.length;
  }
  while (text[i] === ' ') i++;
  if (text[i] !== ')' || text[i + 1] !== ']') throw malformed(path, `a filter ends with )]`);
  return { step: { filter: { field, op, value } }, end: i + 2 };
}

/**
 * The steps of a field path.
 *
 * @throws IllFormedReference when it is not a path, or uses what is not supported.
 */
export function parseFieldPath(path: string): PathStep[] {
  let text = path.trim();
  if (text.startsWith('{')) {
    if (!text.endsWith('}')) throw malformed(path, 'a { is not closed');
    text = text.slice(1, -1).trim();
  }
  if (/^(range|end)\b/.test(text)) throw unsupported(path, 'a range template');
  if (text.startsWith('$')) text = text.slice(1);
  if (!text.startsWith('.') && !text.startsWith('['))
    throw malformed(path, 'it starts with a dot (.data.key) or a bracket');
  const { steps } = readSteps(text, 0, path, false);
  if (steps.length === 0) throw malformed(path, 'it names no field');
  return steps;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A step as a path shows it. */
export function showStep(step: PathStep): string {
  if ('field' in step)
    return /^[A-Za-z0-9_-]+$/.test(step.field) ? `.${step.field}` : `[${JSON.stringify(step.field)}]`;
  if ('index' in step) return `[${step.index}]`;
  const { field, op, value } = step.filter;
  const at = field.map((f) => (typeof f === 'number' ? `[${f}]` : showStep({ field: f }))).join('');
  return `[?(@${at}${op}${JSON.stringify(value)})]`;
}

/** The value one step leads to; undefined when there is none. */
function follow(value: unknown, step: PathStep): unknown {
  if ('field' in step)
    return isRecord(value) && Object.hasOwn(value, step.field) ? value[step.field] : undefined;
  if ('index' in step) {
    if (!Array.isArray(value)) return undefined;
    const i = step.index < 0 ? value.length + step.index : step.index;
    return i >= 0 && i < value.length ? value[i] : undefined;
  }
  if (!Array.isArray(value)) return undefined;
  const { field, op, value: expected } = step.filter;
  return value.find((element) => {
    let at: unknown = element;
    for (const f of field) at = follow(at, typeof f === 'number' ? { index: f } : { field: f });
    return op === '==' ? at === expected : at !== undefined && at !== expected;
  });
}

/**
 * The value at `steps` in `object`.
 *
 * @throws ReferenceFailure FieldNotFound, saying how far the path got.
 */
export function valueAt(object: unknown, steps: readonly PathStep[]): unknown {
  let value = object;
  let shown = '';
  for (const step of steps) {
    const next = follow(value, step);
    shown += showStep(step);
    if (next === undefined) {
      const what =
        'filter' in step
          ? `no element matches ${shown}`
          : 'index' in step
            ? `no element ${shown}`
            : `no field ${shown}`;
      throw new ReferenceFailure('FieldNotFound', what);
    }
    value = next;
  }
  return value;
}
