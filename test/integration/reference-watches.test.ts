/**
 * The watches that follow the objects the instances' references read, on a real apiserver: however
 * many instances, in however many namespaces, read ConfigMaps, the worker opens one watch of
 * ConfigMaps per cluster, and a change of one of them is rolled out to its readers alone. A change
 * made before the watch opened is found too.
 */
import { followedReferences } from '../../src/controllers/followed-references.js';
import { watchKind } from '../../src/kube/kind-watch.js';
import { applyObject, ensureNamespace } from '../../src/kube/objects.js';
import type { KubeObject } from '../../src/resources/types.js';
import { clusters, eventually, unique } from '../support/env.js';

const INSTANCES = 6;

describe('the watches of referenced objects', () => {
  const [master] = clusters();

  test('GIVEN instances in as many namespaces reading ConfigMaps WHEN they are followed THEN one watch of ConfigMaps is open on the cluster, and a change reaches its readers alone', async () => {
    // GIVEN a ConfigMap in each of N namespaces, one of them changed before the instances follow
    const run = unique('refwatch');
    const namespaces = Array.from({ length: INSTANCES }, (_, i) => `${run}-${i}`);
    const versions: string[] = [];
    for (const namespace of namespaces) {
      await ensureNamespace(master!, namespace);
      const applied = await applyObject(master!, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'shared-settings', namespace },
        data: { hosts: 'a' },
      } as KubeObject);
      versions.push(applied.metadata.resourceVersion!);
    }
    await applyObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'shared-settings', namespace: namespaces[0] },
      data: { hosts: 'changed before the watch' },
    } as KubeObject);
    const opened: (string | undefined)[] = [];
    const updates: string[] = [];
    const followed = followedReferences({
      cluster: async () => master!,
      startRollout: async ({ reference }) => {
        updates.push(`${reference!.namespace}/${reference!.name}`);
      },
      watch: (...args) => {
        opened.push(args[3]);
        return watchKind(...args);
      },
      settleMs: 200,
    });
    try {
      // WHEN an instance in each namespace follows its ConfigMap
      namespaces.forEach((namespace, i) =>
        followed.follow(`instance-${i}`, 'plan', master!.id, [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            namespace,
            name: 'shared-settings',
            resourceVersion: versions[i]!,
          },
        ]),
      );
      // THEN one watch of ConfigMaps is open, in every namespace
      expect(followed.size()).toMatchObject({ instances: INSTANCES, objects: INSTANCES, watches: 1 });
      expect(opened).toEqual([undefined]);
      // AND the change made before it opened reaches its reader
      await eventually('the change made before the watch to be heard', async () =>
        updates.length > 0 ? true : undefined,
      );
      expect(updates).toEqual([`${namespaces[0]}/shared-settings`]);

      // WHEN the ConfigMap of one namespace changes
      await applyObject(master!, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'shared-settings', namespace: namespaces[3] },
        data: { hosts: 'b' },
      } as KubeObject);
      // THEN its reader alone follows it
      await eventually('the change to be heard', async () => (updates.length > 1 ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(updates).toEqual([`${namespaces[0]}/shared-settings`, `${namespaces[3]}/shared-settings`]);
      expect(followed.size().watches).toBe(1);
    } finally {
      followed.stop();
    }
  }, 120_000);
});
