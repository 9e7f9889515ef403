/**
 * Counting records a page at a time, on the real apiserver: the count over several pages equals
 * the records selected, the predicate is applied to every one of them, and records of other
 * namespaces or labels are left out; a count without a predicate reads only the records' metadata.
 * (What the quota check and the cluster probe count with.)
 */
import { countRecords, createRecord, listRecordPage } from '../../src/kube/custom-objects.js';
import { LABELS } from '../../src/resources/names.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../../src/resources/types.js';
import { clusters, unique } from '../support/env.js';

const [master] = clusters();
const run = unique('count');

const instance = (namespace: string, name: string, planId: string, org: string): SFServiceInstance => ({
  apiVersion: SFSERVICEINSTANCE.apiVersion,
  kind: SFSERVICEINSTANCE.kind,
  metadata: { name, namespace, labels: { [LABELS.planId]: planId } },
  spec: { instanceId: name, serviceId: 's', planId, organizationGuid: org, spaceGuid: 'space' },
});

describe('counting records page by page', () => {
  const namespaces = [`${run}-a`, `${run}-b`];
  beforeAll(async () => {
    for (const name of namespaces) await master!.core.createNamespace({ body: { metadata: { name } } });
    // Seven of the plan (five in a, two in b; three of them of org x), two of another plan.
    const records = [
      ...[0, 1, 2, 3, 4].map((i) => instance(namespaces[0]!, `i${i}`, `${run}-plan`, i < 2 ? 'x' : 'y')),
      ...[5, 6].map((i) => instance(namespaces[1]!, `i${i}`, `${run}-plan`, i === 5 ? 'x' : 'y')),
      ...[7, 8].map((i) => instance(namespaces[1]!, `i${i}`, `${run}-other`, 'x')),
    ];
    for (const record of records) await createRecord(master!, SFSERVICEINSTANCE, record);
  });
  afterAll(async () => {
    for (const name of namespaces) await master!.core.deleteNamespace({ name }).catch(() => undefined);
  });

  const selector = `${LABELS.planId}=${run}-plan`;

  test('GIVEN seven records of a plan WHEN counted two at a time THEN seven, in all namespaces or in one', async () => {
    expect(await countRecords(master!, SFSERVICEINSTANCE, undefined, selector, undefined, 2)).toBe(7);
    expect(await countRecords(master!, SFSERVICEINSTANCE, namespaces[0], selector, undefined, 2)).toBe(5);
  });

  test('GIVEN a predicate THEN only the records that pass it count, on every page', async () => {
    const ofX = (r: SFServiceInstance) => r.spec.organizationGuid === 'x';
    expect(await countRecords(master!, SFSERVICEINSTANCE, undefined, selector, ofX, 2)).toBe(3);
    expect(await countRecords(master!, SFSERVICEINSTANCE, undefined, selector, ofX, 1)).toBe(3);
  });

  test('GIVEN no predicate THEN the pages hold only the records’ metadata, which the count reads', async () => {
    const page = await listRecordPage(master!, SFSERVICEINSTANCE, namespaces[0], {
      labelSelector: selector,
      limit: 2,
      metadataOnly: true,
    });
    expect(page.items).toHaveLength(2);
    expect(page.continue).toBeDefined();
    for (const item of page.items) {
      expect(item).toMatchObject({ kind: 'PartialObjectMetadata', metadata: { namespace: namespaces[0] } });
      expect(item.metadata.labels?.[LABELS.planId]).toBe(`${run}-plan`);
      expect((item as Partial<SFServiceInstance>).spec).toBeUndefined();
    }
    // (a metadata list of nothing has its items null, not empty)
    expect(await countRecords(master!, SFSERVICEINSTANCE, undefined, `${LABELS.planId}=${run}-none`)).toBe(0);
  });
});
