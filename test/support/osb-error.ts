/**
 * Capturing what a function throws, for tests of code that answers with an `OsbError`. A test
 * fails when the function returns where a throw was expected, or throws something other than an
 * OsbError where one was expected.
 */
import { isOsbError, type OsbError } from '../../src/osb/errors.js';

/** What `fn` throws. @throws when `fn` returns. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw, but the function returned');
}

/** The OsbError `fn` throws. @throws when `fn` returns or throws anything else. */
export function osbError(fn: () => unknown): OsbError {
  const err = thrownBy(fn);
  if (!isOsbError(err)) throw err;
  return err;
}

/** What `fn` returns, or the OsbError it throws. @throws whatever else `fn` throws. */
export function resultOrOsbError<T>(fn: () => T): T | OsbError {
  try {
    return fn();
  } catch (err) {
    if (isOsbError(err)) return err;
    throw err;
  }
}
