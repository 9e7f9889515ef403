import { defaultSisterCrds } from '../../../src/activities/cluster-onboarding.js';
import { crdDigest } from '../../../src/kube/crds.js';

describe("the CRDs a sister gets: the chart's of osb.servicefabrik.io", () => {
  test('GIVEN the chart THEN the records and the catalog, not the cluster registry', () => {
    expect(defaultSisterCrds().map((crd) => crd.metadata?.name)).toEqual([
      'sfplans.osb.servicefabrik.io',
      'sfservicebindings.osb.servicefabrik.io',
      'sfserviceinstances.osb.servicefabrik.io',
      'sfservices.osb.servicefabrik.io',
    ]);
  });

  test('GIVEN a CRD THEN its digest is stable, and changes with its spec', () => {
    const [crd] = defaultSisterCrds();
    expect(crdDigest(crd!)).toBe(crdDigest(structuredClone(crd!)));
    expect(crdDigest(crd!)).toMatch(/^[0-9a-f]{32}$/);
    const changed = { ...crd!, spec: { ...crd!.spec, scope: 'Cluster' } };
    expect(crdDigest(changed)).not.toBe(crdDigest(crd!));
  });
});
