/** The pure decisions of the cluster health round: the SFCluster's finalizer and the catalog's copies. */
import { catalogCopy, clusterFinalizers } from '../../../src/activities/clusters.js';
import { CLUSTER_FINALIZER, LABELS } from '../../../src/resources/names.js';
import type { KubeObject } from '../../../src/resources/types.js';

const OTHER = 'example.com/other';
const cluster = (finalizers?: string[], deleting = false) => ({
  metadata: {
    name: '2',
    ...(finalizers ? { finalizers } : {}),
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
});

describe('the finalizer of an SFCluster', () => {
  test.each([
    ['no finalizer yet, not deleting', cluster(), 0, { finalizers: [CLUSTER_FINALIZER], released: false }],
    [
      'another finalizer, not deleting',
      cluster([OTHER]),
      3,
      { finalizers: [OTHER, CLUSTER_FINALIZER], released: false },
    ],
    ['ours already, not deleting', cluster([CLUSTER_FINALIZER]), 0, undefined],
    ['deleting with an instance left', cluster([CLUSTER_FINALIZER], true), 1, undefined],
    [
      'deleting with no instance left',
      cluster([OTHER, CLUSTER_FINALIZER], true),
      0,
      { finalizers: [OTHER], released: true },
    ],
    ['deleting, ours already gone', cluster([OTHER], true), 0, undefined],
  ])('GIVEN %s WHEN decided THEN %j', (_, given, instances, expected) => {
    expect(clusterFinalizers(given, instances)).toEqual(expected);
  });
});

describe('a catalog copy', () => {
  const original = {
    apiVersion: 'osb.servicefabrik.io/v1alpha1',
    kind: 'SFPlan',
    metadata: {
      name: 'small',
      namespace: 'interoperator',
      uid: 'uid-1',
      resourceVersion: '42',
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { team: 'db' },
      annotations: { note: 'kept', 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
      managedFields: [],
    },
    spec: { id: 'plan-1', name: 'small' },
    status: { observed: true },
  } as unknown as KubeObject;

  test('GIVEN an original WHEN copied THEN name, labels, annotations and spec are kept, marked as a copy of the master', () => {
    expect(catalogCopy(original, '1')).toEqual({
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFPlan',
      metadata: {
        name: 'small',
        namespace: 'interoperator',
        labels: { team: 'db', [LABELS.replicaOf]: '1' },
        annotations: { note: 'kept' },
      },
      spec: { id: 'plan-1', name: 'small' },
    });
  });
});
