/**
 * References to other objects in a rendered object, as the Composable SDK writes them: in place of
 * any value, at any depth,
 *
 *   password:
 *     getValueFrom:
 *       kind: Secret
 *       apiVersion: v1                 # optional for core kinds (ConfigMap, Secret, Service, ...)
 *       name: db-admin                 # or labels: {app: db} (exactly one object must match)
 *       namespace: shared              # optional: the instance's namespace
 *       path: '{.data.password}'       # field-path.ts
 *       format-transformers: [Base64ToString]   # transformers.ts, in order
 *
 * stands for the value at `path` in that object, transformed. This module finds the references of
 * an object ({@link findReferences}), resolves one over an object read ({@link resolveValue}),
 * puts the values in ({@link substitute}), and keeps values from Secrets out of messages
 * ({@link redact}). Pure: the resource activities read the objects and decide what to retry.
 */
import { IllFormedReference } from './failures.js';
import { parseFieldPath, valueAt, type PathStep } from './field-path.js';
import { transform, transformerNamed, type TransformerName } from './transformers.js';

export * from './failures.js';
export { parseFieldPath, valueAt, type PathStep } from './field-path.js';
export { TRANSFORMER_NAMES, transform, transformerNamed, type TransformerName } from './transformers.js';

/** The key that makes a map a reference. */
export const REFERENCE_KEY = 'getValueFrom';

/** The fields a reference may have. */
const FIELDS = new Set(['kind', 'apiVersion', 'name', 'labels', 'namespace', 'path', 'format-transformers']);

/** Core kinds whose `apiVersion` (`v1`) a reference may leave out. */
const CORE_KINDS = new Set([
  'ConfigMap',
  'Secret',
  'Service',
  'Endpoints',
  'PersistentVolumeClaim',
  'Pod',
  'ServiceAccount',
]);

/** Object fields that say which object it is: known before anything is read, never references. */
const IDENTITY = ['apiVersion', 'kind', 'metadata.name', 'metadata.namespace'];

/** A reference, checked. */
export interface Reference {
  readonly kind: string;
  readonly apiVersion: string;
  /** The object's name; absent when `labels` select it. */
  readonly name?: string;
  /** The labels that select exactly one object (`key=value` pairs, as a label selector). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Where to look; absent: the instance's namespace. */
  readonly namespace?: string;
  /** The path as written, and its steps. */
  readonly path: string;
  readonly steps: readonly PathStep[];
  readonly transformers: readonly TransformerName[];
}

/** Where a reference stands in an object: keys and indices from the top. */
export type Location = readonly (string | number)[];

/** A reference and where it stands. */
export interface FoundReference {
  readonly at: Location;
  readonly reference: Reference;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A location as a path (`spec.users[0].password`). */
export function showLocation(at: Location): string {
  return at
    .map((step, i) =>
      typeof step === 'number'
        ? `[${step}]`
        : /^[A-Za-z0-9_-]+$/.test(step)
          ? `${i === 0 ? '' : '.'}${step}`
          : `[${JSON.stringify(step)}]`,
    )
    .join('');
}

/** The labels of a reference: a map, or `key=value` strings (the SDK's `[]string`). */
function readLabels(labels: unknown): Record<string, string> {
  const pairs: [string, string][] = [];
  if (isRecord(labels)) {
    for (const [key, value] of Object.entries(labels)) {
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
        throw new IllFormedReference(`labels: the value of ${JSON.stringify(key)} is not a string`);
      pairs.push([key, String(value)]);
    }
  } else if (Array.isArray(labels)) {
    for (const entry of labels) {
      const m = typeof entry === 'string' ? /^([^=\s]+)=([^=\s]*)$/.exec(entry.trim()) : null;
      if (!m) throw new IllFormedReference(`labels: ${JSON.stringify(entry)} is not key=value`);
      pairs.push([m[1]!, m[2]!]);
    }
  } else {
    throw new IllFormedReference('labels is a map of label to value (or a list of key=value)');
  }
  if (pairs.length === 0) throw new IllFormedReference('labels selects nothing: give at least one label');
  for (const [key, value] of pairs) {
    if (!/^([a-z0-9.-]+\/)?[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/.test(key))
      throw new IllFormedReference(`labels: ${JSON.stringify(key)} is not a label key`);
    if (!/^([A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?)?$/.test(value))
      throw new IllFormedReference(`labels: the value of ${key} is not a label value`);
  }
  return Object.fromEntries(pairs);
}

const nonEmptyString = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/**
 * The reference that `body` (the value of `getValueFrom`) describes.
 *
 * @throws IllFormedReference saying what is wrong.
 */
export function parseReference(body: unknown): Reference {
  if (!isRecord(body)) throw new IllFormedReference('getValueFrom is a map (kind, name, path, ...)');
  const unknown = Object.keys(body).filter((key) => !FIELDS.has(key));
  if (unknown.length > 0)
    throw new IllFormedReference(
      `getValueFrom has no field ${unknown.map((k) => JSON.stringify(k)).join(', ')}; its fields: ${[...FIELDS].join(', ')}`,
    );
  const { kind, apiVersion, name, labels, namespace, path } = body;
  if (!nonEmptyString(kind)) throw new IllFormedReference('getValueFrom needs a kind');
  if (apiVersion !== undefined && !nonEmptyString(apiVersion))
    throw new IllFormedReference(`the apiVersion of a reference to ${kind} is not a string`);
  if (apiVersion === undefined && !CORE_KINDS.has(kind))
    throw new IllFormedReference(
      `a reference to ${kind} needs an apiVersion (only core kinds default to v1)`,
    );
  if ((name === undefined) === (labels === undefined))
    throw new IllFormedReference(
      `a reference to ${kind} gives either a name or labels${name === undefined ? '' : ', not both'}`,
    );
  if (name !== undefined && !nonEmptyString(name))
    throw new IllFormedReference(`the name of a reference to ${kind} is not a string`);
  if (namespace !== undefined && !nonEmptyString(namespace))
    throw new IllFormedReference(`the namespace of a reference to ${kind} is not a string`);
  if (!nonEmptyString(path)) throw new IllFormedReference(`a reference to ${kind} needs a path`);
  const transformers = body['format-transformers'];
  if (transformers !== undefined && !Array.isArray(transformers))
    throw new IllFormedReference('format-transformers is a list of transformer names');
  return {
    kind,
    apiVersion: apiVersion ?? 'v1',
    ...(name !== undefined ? { name } : {}),
    ...(labels !== undefined ? { labels: readLabels(labels) } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    path,
    steps: parseFieldPath(path),
    transformers: (transformers ?? []).map(transformerNamed),
  };
}

/** A reference as messages name it: `Secret db-admin, path {.data.password}`. */
export function describeReference(reference: Reference): string {
  const where = reference.namespace ? ` in ${reference.namespace}` : '';
  const which = reference.name
    ? reference.name
    : `with labels ${Object.entries(reference.labels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}`;
  return `${reference.kind} ${which}${where}, path ${reference.path}`;
}

/**
 * Every reference in `object`, with where it stands, in document order.
 *
 * @throws IllFormedReference naming where the first reference that is not one stands: a
 * `getValueFrom` beside other keys, one that says not what to read, or one in a field that says
 * which object this is (`apiVersion`, `kind`, `metadata.name`, `metadata.namespace`).
 */
export function findReferences(object: unknown): FoundReference[] {
  const found: FoundReference[] = [];
  const visit = (value: unknown, at: (string | number)[]) => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => visit(item, [...at, i]));
      return;
    }
    if (!isRecord(value)) return;
    if (Object.hasOwn(value, REFERENCE_KEY)) {
      const where = at.length ? ` at ${showLocation(at)}` : '';
      if (Object.keys(value).length > 1)
        throw new IllFormedReference(`the reference${where} has keys beside getValueFrom`);
      if (at.length === 0)
        throw new IllFormedReference('the reference: a whole object cannot be one, only values in it');
      if (IDENTITY.includes(at.join('.')))
        throw new IllFormedReference(
          `the reference${where}: ${at.join('.')} says which object this is and cannot be a reference`,
        );
      try {
        found.push({ at, reference: parseReference(value[REFERENCE_KEY]) });
      } catch (err) {
        if (err instanceof Error && err.name === 'IllFormedReference')
          throw new IllFormedReference(`the reference${where}: ${err.message}`);
        throw err;
      }
      return;
    }
    for (const [key, item] of Object.entries(value)) visit(item, [...at, key]);
  };
  visit(object, []);
  return found;
}

/**
 * The value a reference stands for, read from `object` (the referenced object as the apiserver
 * gave it). `seen` gets every value on the way (the one at the path, and each transformer's), for
 * {@link redact} when the object is a Secret.
 *
 * @throws ReferenceFailure FieldNotFound, WrongValueType or ValueNotTransformable.
 */
export function resolveValue(
  reference: Reference,
  object: unknown,
  seen?: (value: unknown) => void,
): unknown {
  return transform(valueAt(object, reference.steps), reference.transformers, seen);
}

/**
 * A copy of `object` with the value of each reference (`values[i]` for `found[i]`, as
 * {@link findReferences} gave them) in its place. The original is not changed.
 */
export function substitute(
  object: unknown,
  found: readonly FoundReference[],
  values: readonly unknown[],
): unknown {
  const byLocation = new Map(found.map((f, i) => [JSON.stringify(f.at), values[i]]));
  const copy = (value: unknown, at: (string | number)[]): unknown => {
    const key = JSON.stringify(at);
    if (byLocation.has(key)) return byLocation.get(key);
    if (Array.isArray(value)) return value.map((item, i) => copy(item, [...at, i]));
    if (!isRecord(value)) return value;
    return Object.fromEntries(Object.entries(value).map(([k, item]) => [k, copy(item, [...at, k])]));
  };
  return copy(object, []);
}

/** The text forms a value from a Secret may take in a message: itself, its base64, and escaped in JSON. */
export function secretTexts(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === '') return [];
  const escaped = JSON.stringify(text).slice(1, -1);
  const texts = [text, Buffer.from(text, 'utf8').toString('base64')];
  return escaped === text ? texts : [...texts, escaped];
}

/** Shorter values than this are not searched for in messages: the message is withheld instead. */
export const SHORTEST_REDACTED = 4;

/**
 * `message` with every one of `secrets` (texts of values from Secrets) replaced by `[redacted]`;
 * undefined when one of them is too short to replace safely (the caller then says less).
 */
export function redact(message: string, secrets: readonly string[]): string | undefined {
  let out = message;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (secret.length < SHORTEST_REDACTED) {
      if (out.includes(secret)) return undefined;
      continue;
    }
    out = out.split(secret).join('[redacted]');
  }
  return out;
}
