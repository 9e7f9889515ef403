/**
 * Kubernetes label selectors, in their string form (as `kubectl get -l` takes them), over a
 * cluster's labels. Requirements are separated by commas and all must hold:
 * `a=b` and `a==b` (equal), `a!=b` (absent or different), `a in (x,y)`, `a notin (x)` (absent or
 * not listed), `a` (present), `!a` (absent), `a>1` and `a<1` (an integer value above or below).
 * A blank selector matches every cluster.
 */

/** Operators of a requirement; `==` reads as `=`. */
export type Operator = '=' | '!=' | 'in' | 'notin' | 'exists' | '!' | '>' | '<';

/** One requirement of a selector. */
export interface Requirement {
  readonly key: string;
  readonly operator: Operator;
  /** One value for `=`, `!=`, `>`, `<`; the set for `in`, `notin`; none for `exists`, `!`. */
  readonly values: readonly string[];
}

/** A parsed selector: requirements that must all hold. Empty: matches everything. */
export type LabelSelector = readonly Requirement[];

/** A selector that does not parse; the message says where and what was expected. */
export class LabelSelectorError extends Error {
  constructor(
    message: string,
    /** The selector's text. */
    readonly selector: string,
  ) {
    super(message);
    this.name = 'LabelSelectorError';
  }
}

type TokenKind = 'identifier' | '!' | '=' | '!=' | '(' | ')' | ',' | '>' | '<' | 'in' | 'notin' | 'end';

interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  /** Column (1-based) where the token starts. */
  readonly column: number;
}

const SPECIAL = new Set(['!', '=', '(', ')', ',', '<', '>']);
const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (isSpace(c)) {
      i++;
      continue;
    }
    const column = i + 1;
    if (c === '=' && text[i + 1] === '=') {
      tokens.push({ kind: '=', text: '==', column });
      i += 2;
    } else if (c === '!' && text[i + 1] === '=') {
      tokens.push({ kind: '!=', text: '!=', column });
      i += 2;
    } else if (SPECIAL.has(c)) {
      tokens.push({ kind: c as TokenKind, text: c, column });
      i++;
    } else {
      let end = i;
      while (end < text.length && !isSpace(text[end]!) && !SPECIAL.has(text[end]!)) end++;
      const word = text.slice(i, end);
      tokens.push({ kind: word === 'in' || word === 'notin' ? word : 'identifier', text: word, column });
      i = end;
    }
  }
  tokens.push({ kind: 'end', text: '', column: text.length + 1 });
  return tokens;
}

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const INTEGER = /^[+-]?\d+$/;

/** Why a label key is invalid, or undefined. */
function keyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `its prefix "${prefix}" must be a DNS subdomain (lower case alphanumerics, "-" and ".", at most 253 characters)`;
  if (name.length === 0 || name.length > 63 || !NAME.test(name))
    return 'its name must be 1-63 alphanumerics, "-", "_" or ".", starting and ending with an alphanumeric';
  return undefined;
}

function describe(token: Token): string {
  return token.kind === 'end' ? 'the end' : `"${token.text}"`;
}

class Parser {
  private index = 0;
  constructor(
    private readonly text: string,
    private readonly tokens: readonly Token[],
  ) {}

  private peek(): Token {
    return this.tokens[this.index]!;
  }

  private next(): Token {
    const token = this.tokens[this.index]!;
    if (token.kind !== 'end') this.index++;
    return token;
  }

  private fail(token: Token, expected: string): never {
    throw new LabelSelectorError(
      `invalid label selector "${this.text}": expected ${expected} at column ${token.column}, found ${describe(token)}`,
      this.text,
    );
  }

  private invalid(token: Token, why: string): never {
    throw new LabelSelectorError(
      `invalid label selector "${this.text}": ${why} (column ${token.column})`,
      this.text,
    );
  }

  parse(): Requirement[] {
    const requirements: Requirement[] = [];
    if (this.peek().kind === 'end') return requirements;
    for (;;) {
      requirements.push(this.requirement());
      const token = this.next();
      if (token.kind === 'end') return requirements;
      if (token.kind !== ',') this.fail(token, '"," or the end');
    }
  }

  private key(): string {
    const token = this.next();
    if (token.kind !== 'identifier') this.fail(token, 'a label key');
    const problem = keyProblem(token.text);
    if (problem) this.invalid(token, `label key "${token.text}" is invalid: ${problem}`);
    return token.text;
  }

  private value(token: Token): string {
    if (token.text.length > 63 || !VALUE.test(token.text))
      this.invalid(
        token,
        `label value "${token.text}" is invalid: at most 63 alphanumerics, "-", "_" or ".", starting and ending with an alphanumeric`,
      );
    return token.text;
  }

  private requirement(): Requirement {
    if (this.peek().kind === '!') {
      this.next();
      return { key: this.key(), operator: '!', values: [] };
    }
    const key = this.key();
    const next = this.peek().kind;
    if (next === ',' || next === 'end') return { key, operator: 'exists', values: [] };
    const op = this.next();
    switch (op.kind) {
      case '=':
      case '!=':
        return { key, operator: op.kind, values: [this.exactValue()] };
      case '>':
      case '<': {
        const token = this.next();
        if (token.kind !== 'identifier') this.fail(token, `an integer after "${op.text}"`);
        if (!INTEGER.test(token.text))
          this.invalid(token, `"${op.text}" needs an integer, not "${token.text}"`);
        return { key, operator: op.kind, values: [token.text] };
      }
      case 'in':
      case 'notin':
        return { key, operator: op.kind, values: this.valueSet(op) };
      default:
        return this.fail(
          op,
          `one of "=", "==", "!=", "in", "notin", ">", "<", "," or the end after "${key}"`,
        );
    }
  }

  /** The value of `=` or `!=`; empty when the requirement ends right after the operator. */
  private exactValue(): string {
    const token = this.peek();
    if (token.kind === ',' || token.kind === 'end') return '';
    if (token.kind !== 'identifier') this.fail(token, 'a label value');
    return this.value(this.next());
  }

  /** `(v1, v2, ...)`; an empty element is the empty value, as Kubernetes reads it. */
  private valueSet(op: Token): string[] {
    const open = this.next();
    if (open.kind !== '(') this.fail(open, `"(" after "${op.text}"`);
    if (this.peek().kind === ')') this.invalid(this.peek(), `"${op.text}" needs at least one value`);
    const values: string[] = [];
    for (;;) {
      const token = this.peek();
      if (token.kind === 'identifier') values.push(this.value(this.next()));
      else if (token.kind === ',' || token.kind === ')') values.push('');
      else this.fail(token, 'a label value');
      const after = this.next();
      if (after.kind === ')') return [...new Set(values)];
      if (after.kind !== ',') this.fail(after, '"," or ")"');
    }
  }
}

/**
 * Parses a selector's string form.
 *
 * @throws LabelSelectorError saying what was expected and where.
 */
export function parseLabelSelector(text: string): LabelSelector {
  return new Parser(text, tokenize(text)).parse();
}

/** Why the labels fail the requirement (`no label tier`, `plan=large, not small`); undefined when they pass. */
export function requirementMismatch(
  requirement: Requirement,
  labels: Readonly<Record<string, string>>,
): string | undefined {
  const { key, operator, values } = requirement;
  const has = Object.prototype.hasOwnProperty.call(labels, key);
  const value = has ? labels[key]! : undefined;
  switch (operator) {
    case 'exists':
      return has ? undefined : `no label ${key}`;
    case '!':
      return has ? `has label ${key}` : undefined;
    case '=':
      if (!has) return `no label ${key}`;
      return value === values[0] ? undefined : `${key}=${value}, not ${values[0]}`;
    case '!=':
      return has && value === values[0] ? `${key}=${value}, excluded by ${key}!=${values[0]}` : undefined;
    case 'in':
      if (!has) return `no label ${key}`;
      return values.includes(value!) ? undefined : `${key}=${value}, not in (${values.join(',')})`;
    case 'notin':
      return has && values.includes(value!)
        ? `${key}=${value}, excluded by ${key} notin (${values.join(',')})`
        : undefined;
    case '>':
    case '<': {
      if (!has) return `no label ${key}`;
      const bound = BigInt(values[0]!);
      if (!INTEGER.test(value!)) return `${key}=${value}, not an integer`;
      const actual = BigInt(value!);
      const holds = operator === '>' ? actual > bound : actual < bound;
      return holds ? undefined : `${key}=${value}, not ${operator} ${values[0]}`;
    }
  }
}

/** Why the labels fail the selector (its first failing requirement); undefined when they match. */
export function selectorMismatch(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>>,
): string | undefined {
  for (const requirement of selector) {
    const why = requirementMismatch(requirement, labels);
    if (why) return why;
  }
  return undefined;
}

/** Whether the labels match the selector. */
export function matchesLabels(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return selectorMismatch(selector, labels) === undefined;
}

/** The selector's string form, one way of writing each requirement (`==` as `=`, spaces dropped). */
export function formatLabelSelector(selector: LabelSelector): string {
  return selector
    .map(({ key, operator, values }) => {
      switch (operator) {
        case 'exists':
          return key;
        case '!':
          return `!${key}`;
        case 'in':
        case 'notin':
          return `${key} ${operator} (${values.join(',')})`;
        default:
          return `${key}${operator}${values[0]}`;
      }
    })
    .join(',');
}
