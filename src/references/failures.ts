/**
 * How resolving a reference fails. A reference that cannot be read as one (a missing `kind`, an
 * unknown transformer, a path this module does not support) is an {@link IllFormedReference}: a
 * fault of the template. Resolving a well-formed one fails in one of four kinds
 * ({@link ReferenceFailureKind}); only a referenced object that is not there yet may pass by
 * waiting.
 *
 * Messages name the reference (its kind, name, path) and never a value read through it: a value
 * may come from a Secret.
 */

/** The four ways resolving a well-formed reference fails. */
export type ReferenceFailureKind =
  /** No object matches (none by that name, no label match, or its kind is not served yet). */
  | 'ObjectNotFound'
  /** The object is there, but the path leads nowhere in it. */
  | 'FieldNotFound'
  /** A transformer got a value of its type that it cannot transform ("abc" to an integer). */
  | 'ValueNotTransformable'
  /** A transformer got a value of a type it does not take (an object to base64-decode). */
  | 'WrongValueType';

/** Each kind as a description says it. */
export const FAILURE_KIND_TEXT: Readonly<Record<ReferenceFailureKind, string>> = {
  ObjectNotFound: 'referenced object not found',
  FieldNotFound: 'field not found',
  ValueNotTransformable: 'value cannot be transformed',
  WrongValueType: 'value of the wrong type',
};

/** A reference that is not one: `name` is `IllFormedReference`. The message says what to fix. */
export class IllFormedReference extends Error {
  override readonly name = 'IllFormedReference';
}

/**
 * A failure to resolve a well-formed reference: `name` is `ReferenceFailure`, `kind` says which of
 * the four. `detail` says where it stopped (a path step, a transformer), never a value.
 */
export class ReferenceFailure extends Error {
  override readonly name = 'ReferenceFailure';
  constructor(
    readonly kind: ReferenceFailureKind,
    readonly detail: string,
  ) {
    super(`${FAILURE_KIND_TEXT[kind]}: ${detail}`);
  }
}

/** Whether `err` is a {@link ReferenceFailure} (by name: instanceof breaks across module copies). */
export const isReferenceFailure = (err: unknown): err is ReferenceFailure =>
  err instanceof Error && err.name === 'ReferenceFailure';

/** Whether `err` is an {@link IllFormedReference}. */
export const isIllFormedReference = (err: unknown): err is IllFormedReference =>
  err instanceof Error && err.name === 'IllFormedReference';
