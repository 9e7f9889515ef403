/** The error a promise is rejected with; fails the test when the promise resolves instead. */
export function rejectionOf<E = Error>(promise: Promise<unknown>): Promise<E> {
  return promise.then(
    () => {
      throw new Error('it succeeded');
    },
    (err: unknown) => err as E,
  );
}
