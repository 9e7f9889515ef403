/**
 * The count of instance records per cluster kept from a watch: each event moves a record's count
 * from its old labels to its new ones, only the installation's records count, and the count is
 * trusted only once a listing has ended, which drops the records it no longer found.
 */
import { instanceCounts } from '../../../src/controllers/instance-counts.js';
import { LABELS, labelValue } from '../../../src/resources/names.js';
import { SF_LABELS } from '../../../src/resources/record-labels.js';

const on = (clusterId: string, more: Record<string, string> = {}) => ({
  [LABELS.clusterId]: labelValue(clusterId),
  ...more,
});
const leaving = (from: string) => ({ [LABELS.leavingCluster]: labelValue(from) });

/** A count whose first listing found `records` (key -> labels). */
function listedWith(records: Record<string, Record<string, string>>, owner?: string) {
  const counts = instanceCounts(owner);
  for (const [key, labels] of Object.entries(records)) counts.apply('LISTED', key, labels);
  counts.listed();
  return counts;
}

describe('the instance count kept from a watch', () => {
  test('GIVEN no listing has ended THEN it has no count to give; once one has, it counts what it found', () => {
    const counts = instanceCounts();
    counts.apply('LISTED', 'ns/a', on('1'));
    expect(counts.synced).toBe(false);
    expect(counts.of('1')).toBeUndefined();
    counts.listed();
    expect(counts.synced).toBe(true);
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 0 });
    expect(counts.of('2')).toEqual({ placed: 0, leaving: 0 });
  });

  test('GIVEN records added, modified twice and deleted THEN each counts once, where its labels say now', () => {
    const counts = listedWith({});
    counts.apply('ADDED', 'ns/a', on('1'));
    counts.apply('ADDED', 'ns/b', on('1'));
    counts.apply('MODIFIED', 'ns/a', on('1'));
    counts.apply('MODIFIED', 'ns/a', on('1', { other: 'x' }));
    expect(counts.of('1')).toEqual({ placed: 2, leaving: 0 });
    counts.apply('DELETED', 'ns/b', on('1'));
    counts.apply('DELETED', 'ns/b', on('1'));
    counts.apply('DELETED', 'ns/unknown', on('1'));
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 0 });
    expect(counts.size()).toBe(1);
  });

  test('GIVEN a record moved to another cluster THEN it counts there, and as leaving the first until that label goes', () => {
    const counts = listedWith({ 'ns/a': on('1'), 'ns/b': on('1') });
    counts.apply('MODIFIED', 'ns/a', { ...on('2'), ...leaving('1') });
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 1 });
    expect(counts.of('2')).toEqual({ placed: 1, leaving: 0 });
    counts.apply('MODIFIED', 'ns/a', on('2'));
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 0 });
    counts.apply('MODIFIED', 'ns/b', {});
    expect(counts.of('1')).toEqual({ placed: 0, leaving: 0 });
    expect(counts.size()).toBe(1);
  });

  test('GIVEN a cluster id that is no label value THEN its records count under the label value it is given', () => {
    const long = `cluster-${'x'.repeat(80)}`;
    const counts = listedWith({ 'ns/a': on(long) });
    expect(labelValue(long)).not.toBe(long);
    expect(counts.of(long)).toEqual({ placed: 1, leaving: 0 });
  });

  test("GIVEN another installation's records THEN they do not count, and one that changes hands leaves or joins the count", () => {
    const counts = listedWith(
      {
        'ns/ours': on('1', { [SF_LABELS.owner]: 'registry' }),
        'ns/unowned': on('1'),
        'ns/theirs': on('1', { [SF_LABELS.owner]: 'elsewhere' }),
      },
      'registry',
    );
    expect(counts.of('1')).toEqual({ placed: 2, leaving: 0 });
    counts.apply('MODIFIED', 'ns/unowned', on('1', { [SF_LABELS.owner]: 'elsewhere' }));
    counts.apply('MODIFIED', 'ns/theirs', on('1', { [SF_LABELS.owner]: 'registry' }));
    expect(counts.of('1')).toEqual({ placed: 2, leaving: 0 });
    counts.apply('MODIFIED', 'ns/ours', on('1', { [SF_LABELS.owner]: 'elsewhere' }));
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 0 });
  });

  test('GIVEN a listing again WHEN it runs THEN there is no count; once it ends, the records it did not find are gone', () => {
    const counts = listedWith({ 'ns/a': on('1'), 'ns/b': on('1'), 'ns/c': leaving('1') });
    counts.listing();
    expect(counts.synced).toBe(false);
    expect(counts.of('1')).toBeUndefined();
    // b went and d came meanwhile; a was moved; c is as it was
    counts.apply('LISTED', 'ns/a', on('2'));
    counts.apply('LISTED', 'ns/c', leaving('1'));
    counts.apply('LISTED', 'ns/d', on('1'));
    counts.listed();
    expect(counts.synced).toBe(true);
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 1 });
    expect(counts.of('2')).toEqual({ placed: 1, leaving: 0 });
    expect(counts.size()).toBe(3);
  });

  test('GIVEN a listing that failed part way WHEN the next one starts over and ends THEN it alone decides what is gone', () => {
    const counts = listedWith({ 'ns/a': on('1'), 'ns/b': on('1') });
    counts.listing();
    counts.apply('LISTED', 'ns/a', on('1'));
    counts.listing();
    counts.apply('LISTED', 'ns/b', on('1'));
    counts.listed();
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 0 });
    // and an ended listing ends nothing when it is told so twice
    counts.listed();
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 0 });
  });

  test('GIVEN the first listing WHEN a record it told of is deleted before it ends THEN it is not counted', () => {
    const counts = instanceCounts();
    counts.apply('LISTED', 'ns/a', on('1'));
    counts.apply('LISTED', 'ns/b', on('1'));
    counts.apply('DELETED', 'ns/a', on('1'));
    counts.listed();
    expect(counts.of('1')).toEqual({ placed: 1, leaving: 0 });
  });
});
