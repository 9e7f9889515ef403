import { refusalOf, startingStatus, type AwaitedOperation } from '../../../src/workflows/messages.js';

describe('refusalOf: which synchronous requests may wait on a running operation', () => {
  const bind = startingStatus('bind', { requestHash: 'h1' });

  test.each<[string, AwaitedOperation, string | undefined]>([
    ['the same operation, the same request', { operation: 'bind', requestHash: 'h1' }, undefined],
    [
      'the same operation, another request',
      { operation: 'bind', requestHash: 'h2' },
      'The bind in progress was asked with other attributes.',
    ],
    [
      'another operation',
      { operation: 'unbind', requestHash: 'h1' },
      'Another operation (bind) is in progress.',
    ],
  ])('%s', (_, awaited, expected) => {
    // GIVEN a bind in progress WHEN a request asks to wait on it THEN it is refused or not
    expect(refusalOf(bind, awaited)).toBe(expected);
  });

  test('an operation that has ended still answers the request that started it', () => {
    const ended = { ...bind, state: 'succeeded' as const, responseSecret: 'binding-secret' };
    expect(refusalOf(ended, { operation: 'bind', requestHash: 'h1' })).toBeUndefined();
  });
});
