/** The OSB error catalogue: bodies and recognition across module copies. */
import {
  OsbError,
  asyncRequired,
  gone,
  isOsbError,
  planChangeNotSupported,
  unprocessableEntity,
} from '../../../src/osb/errors.js';

test.each([
  [
    asyncRequired(),
    422,
    {
      error: 'AsyncRequired',
      description: 'This service plan requires client support for asynchronous service operations.',
    },
  ],
  [gone('x'), 410, { error: 'Gone', description: 'x' }],
  [planChangeNotSupported('y'), 400, { error: 'PlanChangeNotSupported', description: 'y' }],
  [unprocessableEntity('z'), 422, { error: 'UnprocessableEntity', description: 'z' }],
  [new OsbError(400, 'no code'), 400, { description: 'no code' }],
])('GIVEN %p THEN status and body', (err, status, body) => {
  expect([err.status, err.toBody()]).toEqual([status, body]);
});

test.each([
  ['an OsbError', new OsbError(400, 'x'), true],
  [
    'an OsbError-shaped object from another module copy',
    { name: 'OsbError', status: 400, description: 'x', toBody: () => ({}) },
    true,
  ],
  ['an Error named OsbError without status', Object.assign(new Error('x'), { name: 'OsbError' }), false],
  ['a plain Error', new Error('x'), false],
  ['a string', 'OsbError', false],
  ['null', null, false],
])('GIVEN %s WHEN classified THEN isOsbError is %s', (_n, value, expected) => {
  expect(isOsbError(value)).toBe(expected);
});
