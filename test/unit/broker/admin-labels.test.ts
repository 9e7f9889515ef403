/** The label selectors of the admin listings. */
import { labelSelector } from '../../../src/broker/admin.js';
import { LABELS, labelValue } from '../../../src/resources/names.js';

test.each([
  ['nothing', {}, ''],
  ['values left out or empty', { [LABELS.planId]: undefined, [LABELS.clusterId]: '' }, ''],
  [
    'several, in order',
    { [LABELS.planId]: 'p', [LABELS.clusterId]: '2' },
    `${LABELS.planId}=p,${LABELS.clusterId}=2`,
  ],
])('labelSelector: %s', (_, labels, expected) => {
  expect(labelSelector(labels)).toEqual(expected);
});

test('GIVEN an id that is no label value THEN it is selected as the records label it', () => {
  const selector = labelSelector({ [LABELS.planId]: 'a plan/with spaces' });
  expect(selector).toBe(`${LABELS.planId}=${labelValue('a plan/with spaces')}`);
  expect(selector).toMatch(new RegExp(`^${LABELS.planId}=[0-9a-f]{56}$`));
});
