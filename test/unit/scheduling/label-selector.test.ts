import {
  formatLabelSelector,
  matchesLabels,
  parseLabelSelector,
  selectorMismatch,
  type LabelSelectorError,
  type Requirement,
} from '../../../src/scheduling/label-selector.js';

describe('parseLabelSelector', () => {
  test.each<[string, Requirement[]]>([
    ['', []],
    ['   \n', []],
    ['plan=small', [{ key: 'plan', operator: '=', values: ['small'] }]],
    ['plan==small', [{ key: 'plan', operator: '=', values: ['small'] }]],
    ['plan!=small', [{ key: 'plan', operator: '!=', values: ['small'] }]],
    ['plan=', [{ key: 'plan', operator: '=', values: [''] }]],
    [
      'plan!=,x',
      [
        { key: 'plan', operator: '!=', values: [''] },
        { key: 'x', operator: 'exists', values: [] },
      ],
    ],
    ['tier in (gold,silver)', [{ key: 'tier', operator: 'in', values: ['gold', 'silver'] }]],
    ['tier in ( gold , silver )', [{ key: 'tier', operator: 'in', values: ['gold', 'silver'] }]],
    ['tier in (gold,gold)', [{ key: 'tier', operator: 'in', values: ['gold'] }]],
    ['tier in (gold,)', [{ key: 'tier', operator: 'in', values: ['gold', ''] }]],
    ['tier notin (bronze)', [{ key: 'tier', operator: 'notin', values: ['bronze'] }]],
    ['gpu', [{ key: 'gpu', operator: 'exists', values: [] }]],
    ['!gpu', [{ key: 'gpu', operator: '!', values: [] }]],
    ['! gpu', [{ key: 'gpu', operator: '!', values: [] }]],
    ['size>2', [{ key: 'size', operator: '>', values: ['2'] }]],
    ['size<-1', [{ key: 'size', operator: '<', values: ['-1'] }]],
    ['example.com/zone=eu-1', [{ key: 'example.com/zone', operator: '=', values: ['eu-1'] }]],
    [
      '  plan=abc-123 , region in (eu,us),!legacy,  gpu\n',
      [
        { key: 'plan', operator: '=', values: ['abc-123'] },
        { key: 'region', operator: 'in', values: ['eu', 'us'] },
        { key: 'legacy', operator: '!', values: [] },
        { key: 'gpu', operator: 'exists', values: [] },
      ],
    ],
  ])('%p', (text, requirements) => {
    expect(parseLabelSelector(text)).toEqual(requirements);
  });

  test.each<[string, string]>([
    ['plan=a=b', 'expected "," or the end at column 7, found "="'],
    ['tier in gold', 'expected "(" after "in" at column 9, found "gold"'],
    ['tier in (gold', 'expected "," or ")" at column 14, found the end'],
    ['tier in ()', '"in" needs at least one value (column 10)'],
    ['tier notin ()', '"notin" needs at least one value (column 13)'],
    ['tier in (a b)', 'expected "," or ")" at column 12, found "b"'],
    ['tier in (=)', 'expected a label value at column 10, found "="'],
    ['plan=small,', 'expected a label key at column 12, found the end'],
    [',plan', 'expected a label key at column 1, found ","'],
    [
      'plan small',
      'expected one of "=", "==", "!=", "in", "notin", ">", "<", "," or the end after "plan" at column 6, found "small"',
    ],
    ['!', 'expected a label key at column 2, found the end'],
    ['!a=b', 'expected "," or the end at column 3, found "="'],
    ['size>big', '">" needs an integer, not "big" (column 6)'],
    ['size<', 'expected an integer after "<" at column 6, found the end'],
    ['plan=-small', 'label value "-small" is invalid'],
    ['plan=' + 'x'.repeat(64), 'label value "' + 'x'.repeat(64) + '" is invalid: at most 63'],
    ['-plan=a', 'label key "-plan" is invalid: its name must be 1-63 alphanumerics'],
    [
      'Example.com/zone=a',
      'label key "Example.com/zone" is invalid: its prefix "Example.com" must be a DNS subdomain',
    ],
    ['/zone=a', 'label key "/zone" is invalid: its prefix "" must be a DNS subdomain'],
    ['example.com/=a', 'label key "example.com/" is invalid: its name must be 1-63'],
    ['in=a', 'expected a label key at column 1, found "in"'],
  ])('%p is refused: %s', (text, message) => {
    let caught: LabelSelectorError | undefined;
    try {
      parseLabelSelector(text);
    } catch (err) {
      caught = err as LabelSelectorError;
    }
    expect(caught?.name).toBe('LabelSelectorError');
    expect(caught?.selector).toBe(text);
    expect(caught?.message).toContain(`invalid label selector "${text}": ${message}`);
  });
});

describe('matching labels', () => {
  const labels = { plan: 'small', tier: 'gold', size: '3', zone: 'x' };

  test.each<[string, Record<string, string>, string | undefined]>([
    ['', {}, undefined],
    ['', labels, undefined],
    ['plan=small', labels, undefined],
    ['plan=large', labels, 'plan=small, not large'],
    ['plan=large', {}, 'no label plan'],
    ['plan!=large', labels, undefined],
    ['plan!=large', {}, undefined],
    ['plan!=small', labels, 'plan=small, excluded by plan!=small'],
    ['tier in (gold,silver)', labels, undefined],
    ['tier in (silver,bronze)', labels, 'tier=gold, not in (silver,bronze)'],
    ['tier in (gold)', {}, 'no label tier'],
    ['tier notin (bronze)', labels, undefined],
    ['tier notin (bronze)', {}, undefined],
    ['tier notin (gold,bronze)', labels, 'tier=gold, excluded by tier notin (gold,bronze)'],
    ['zone', labels, undefined],
    ['gpu', labels, 'no label gpu'],
    ['!gpu', labels, undefined],
    ['!zone', labels, 'has label zone'],
    ['size>2', labels, undefined],
    ['size>3', labels, 'size=3, not > 3'],
    ['size<4', labels, undefined],
    ['size<3', labels, 'size=3, not < 3'],
    ['size<3', {}, 'no label size'],
    ['zone>1', labels, 'zone=x, not an integer'],
    ['plan in (small,)', { plan: '' }, undefined],
    ['plan=', { plan: '' }, undefined],
    ['plan=small,tier=silver,gpu', labels, 'tier=gold, not silver'],
    ['toString', {}, 'no label toString'],
  ])('%p over %j: %p', (text, given, why) => {
    const selector = parseLabelSelector(text);
    expect(selectorMismatch(selector, given)).toBe(why);
    expect(matchesLabels(selector, given)).toBe(why === undefined);
  });
});

describe('formatLabelSelector', () => {
  test.each<[string, string]>([
    ['', ''],
    ['plan == small', 'plan=small'],
    ['a!=b, c in (x, y),d notin(z),e,!f,g>1,h<2', 'a!=b,c in (x,y),d notin (z),e,!f,g>1,h<2'],
  ])('%p is written %p', (text, formatted) => {
    expect(formatLabelSelector(parseLabelSelector(text))).toBe(formatted);
    expect(parseLabelSelector(formatted)).toEqual(parseLabelSelector(text));
  });
});
