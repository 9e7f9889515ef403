/** The finalizer that holds a plan or service while instances of it remain: the pure decision. */
import { catalogFinalizers } from '../../../src/kube/catalog-entries.js';
import { CATALOG_FINALIZER } from '../../../src/resources/names.js';

const OTHER = 'example.com/other';
const entry = (finalizers?: string[], deleting = false) => ({
  metadata: {
    name: 'p-1',
    ...(finalizers ? { finalizers } : {}),
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
});

describe('the finalizer of an SFPlan or SFService', () => {
  test.each([
    ['in use, without it', entry([OTHER]), true, [OTHER, CATALOG_FINALIZER]],
    ['in use, with it', entry([CATALOG_FINALIZER]), true, undefined],
    ['in use, being deleted without it (none can be added)', entry([], true), true, undefined],
    ['in use, being deleted with it: held', entry([CATALOG_FINALIZER], true), true, undefined],
    ['no longer in use, being deleted: released', entry([OTHER, CATALOG_FINALIZER], true), false, [OTHER]],
    ['no longer in use, not deleted: released', entry([CATALOG_FINALIZER]), false, []],
    ['not in use, without it', entry(), false, undefined],
  ])('GIVEN %s THEN %j', (_, e, inUse, expected) => {
    expect(catalogFinalizers(e, inUse)).toEqual(expected);
  });
});
