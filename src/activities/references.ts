/**
 * Resolving the references (`getValueFrom`) in the objects an operation is about to apply, on the
 * instance's cluster, all or nothing: every reference of every object is read and resolved before
 * anything is applied, and when one fails nothing is.
 *
 * - A referenced object that is not there (no such name, no label match, its kind not served yet)
 *   is waited for: the step fails retryably with {@link waitingForReference}, which
 *   `last_operation` shows, until the operation's deadline.
 * - A field not found, a value that cannot be transformed or is of the wrong type, a reference that
 *   is not one, or one into a namespace the instance may not read fails the operation at once.
 *
 * Values read from Secrets stay in this activity: messages name references, never values, and a
 * failure of the apply that quotes such a value (an apiserver's validation message) is redacted.
 * The resolved objects are applied here and never returned.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterClient } from '../kube/clients.js';
import { isKindNotServed, listObjects, readObject } from '../kube/objects.js';
import {
  describeReference,
  findReferences,
  FAILURE_KIND_TEXT,
  isIllFormedReference,
  isReferenceFailure,
  redact,
  resolveValue,
  secretTexts,
  showLocation,
  substitute,
  type FoundReference,
  type Reference,
} from '../references/index.js';
import type { KubeObject, ReferencedObject, TemplateAction } from '../resources/types.js';
import { waitingForReference } from '../workflows/messages.js';
import { namespaceRefusal, type DesiredObject, type NamespaceReach } from './desired-objects.js';
import { FAILURE_TYPES, retryable, terminal } from './failures.js';

/** Where the objects go and for what, and how a Kubernetes call there is made. */
export interface ResolvingFor {
  readonly cluster: ClusterClient;
  /** The instance's namespace: where a reference without one looks. */
  readonly namespace: string;
  /** The namespaces a reference may read: the instance's and those its service allows. */
  readonly reach: NamespaceReach;
  readonly planName: string;
  readonly action: TemplateAction;
  /** Runs a Kubernetes call; a failure says what it was doing and whether to retry. */
  readonly call: <T>(what: string, run: () => Promise<T>) => Promise<T>;
}

/** The objects to apply, their references resolved, and how to apply them. */
export interface Resolved {
  readonly desired: DesiredObject[];
  /**
   * Runs an apply of the resolved objects: a failure whose message quotes a value from a Secret
   * has it redacted (or its message withheld when the value is too short to find safely).
   */
  readonly applying: <T>(run: () => Promise<T>) => Promise<T>;
  /** Whether `value` (as JSON text) holds a value from a Secret, or text that may be one. */
  readonly holdsSecret: (value: unknown) => boolean;
  /** The objects the references read, each once, in the order first read: where they are, not what they hold. */
  readonly referenced: ReferencedObject[];
}

/** What a read of a referenced object found. */
type Lookup = { readonly object: KubeObject } | { readonly missing: string } | { readonly several: number };

const objectName = (obj: DesiredObject) => `${obj.ref.kind} ${obj.ref.name}`;

/** A reference as a description names it: where it stands, and what it reads. */
const named = (obj: DesiredObject, found: FoundReference, namespace: string) =>
  `${describeReference({ ...found.reference, namespace: found.reference.namespace ?? namespace })} (for ${showLocation(found.at)} of ${objectName(obj)})`;

/** The same failure with `message` in place of its own. */
function withMessage(err: unknown, message: string): Error {
  if (err instanceof ApplicationFailure)
    return ApplicationFailure.create({
      message,
      ...(err.type ? { type: err.type } : {}),
      nonRetryable: err.nonRetryable === true,
      ...(err.category ? { category: err.category } : {}),
    });
  return new Error(message);
}

/** Keeps `secrets` out of the message of what `run` throws. */
async function redacting<T>(secrets: readonly string[], run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (secrets.length === 0 || !(err instanceof Error)) throw err;
    const message =
      redact(err.message, secrets) ??
      'the apiserver refused an object that holds values from Secrets (its message is withheld, since it may quote them)';
    throw withMessage(err, message);
  }
}

/**
 * Resolves every reference in `desired` (see the module's doc) and gives the objects to apply.
 * Objects without references are given as they are.
 */
export async function resolveReferences(
  resolving: ResolvingFor,
  desired: readonly DesiredObject[],
): Promise<Resolved> {
  const { cluster, namespace, action, planName, call } = resolving;
  const template = `the ${action} template of plan ${planName}`;

  const references = desired.map((obj) => {
    try {
      return findReferences(obj.object);
    } catch (err) {
      if (!isIllFormedReference(err)) throw err;
      throw terminal(`${template} renders ${objectName(obj)} with ${err.message}`, FAILURE_TYPES.template);
    }
  });
  if (references.every((found) => found.length === 0))
    return { desired: [...desired], applying: (run) => run(), holdsSecret: () => false, referenced: [] };

  for (const [i, found] of references.entries()) {
    for (const f of found) {
      const where = f.reference.namespace ?? namespace;
      const refused = namespaceRefusal(where, resolving.reach);
      if (refused)
        throw terminal(
          `${template} renders ${objectName(desired[i]!)} with a reference to ${f.reference.kind} in ${refused}`,
          FAILURE_TYPES.template,
        );
    }
  }

  // One read per referenced object, so that every reference to it sees the same version.
  const lookups = new Map<string, Promise<Lookup>>();
  const lookup = (reference: Reference): Promise<Lookup> => {
    const where = reference.namespace ?? namespace;
    const key = JSON.stringify([
      reference.apiVersion,
      reference.kind,
      where,
      reference.name,
      reference.labels,
    ]);
    let found = lookups.get(key);
    if (!found) {
      found = read(reference, where);
      lookups.set(key, found);
    }
    return found;
  };
  const read = async (reference: Reference, where: string): Promise<Lookup> => {
    const what = `reading ${reference.kind} ${reference.name ?? 'by labels'} in ${where} in cluster ${cluster.id} for a reference`;
    return call(what, async () => {
      try {
        if (reference.name !== undefined) {
          const object = await readObject(cluster, {
            apiVersion: reference.apiVersion,
            kind: reference.kind,
            name: reference.name,
            namespace: where,
          });
          return object ? { object } : { missing: 'it does not exist' };
        }
        const selector = Object.entries(reference.labels ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(',');
        const objects = await listObjects(cluster, reference, where, selector);
        if (objects.length === 1) return { object: objects[0]! };
        return objects.length === 0 ? { missing: 'no object has these labels' } : { several: objects.length };
      } catch (err) {
        if (isKindNotServed(err))
          return { missing: `cluster ${cluster.id} serves no ${reference.kind} of ${reference.apiVersion}` };
        throw err;
      }
    });
  };

  const secrets: string[] = [];
  const referenced = new Map<string, ReferencedObject>();
  const waiting: string[] = [];
  const failures: string[] = [];
  const values: unknown[][] = [];
  for (const [i, found] of references.entries()) {
    const obj = desired[i]!;
    const resolved: unknown[] = [];
    for (const f of found) {
      const name = named(obj, f, namespace);
      const result = await lookup(f.reference);
      if ('missing' in result) {
        waiting.push(`${name}: ${FAILURE_KIND_TEXT.ObjectNotFound} (${result.missing})`);
        continue;
      }
      if ('several' in result) {
        failures.push(
          `${name}: its labels select ${result.several} objects, and a reference reads exactly one`,
        );
        continue;
      }
      const where = f.reference.namespace ?? namespace;
      const readName = result.object.metadata?.name ?? f.reference.name ?? '';
      referenced.set(JSON.stringify([f.reference.apiVersion, f.reference.kind, where, readName]), {
        apiVersion: f.reference.apiVersion,
        kind: f.reference.kind,
        namespace: where,
        name: readName,
        ...(result.object.metadata?.resourceVersion
          ? { resourceVersion: result.object.metadata.resourceVersion }
          : {}),
      });
      const fromSecret = f.reference.kind === 'Secret' && f.reference.apiVersion === 'v1';
      try {
        resolved.push(
          resolveValue(
            f.reference,
            result.object,
            fromSecret ? (v) => secrets.push(...secretTexts(v)) : undefined,
          ),
        );
      } catch (err) {
        if (!isReferenceFailure(err)) throw err;
        failures.push(`${name}: ${err.message}`);
      }
    }
    values.push(resolved);
  }

  // What waiting cannot mend ends the operation now; only then is an absent object waited for.
  if (failures.length > 0)
    throw terminal(
      `${template}: ${failures.length === 1 ? 'a reference' : `${failures.length} references`} cannot be resolved: ${failures.join('; ')}`,
      FAILURE_TYPES.reference,
    );
  if (waiting.length > 0)
    throw retryable(
      waitingForReference(`${waiting[0]}${waiting.length > 1 ? ` (and ${waiting.length - 1} more)` : ''}`),
    );

  const resolvedObjects = desired.map((obj, i) =>
    references[i]!.length === 0
      ? obj
      : { ...obj, object: substitute(obj.object, references[i]!, values[i]!) as KubeObject },
  );
  const holdsSecret = (value: unknown) => {
    const text = value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    return secrets.some((secret) => text.includes(secret));
  };
  return {
    desired: resolvedObjects,
    applying: (run) => redacting(secrets, run),
    holdsSecret,
    referenced: [...referenced.values()],
  };
}
