/**
 * The count of the instances placed on each cluster kept from a watch of the master's records
 * (src/controllers/placed-instances.ts), on the real apiserver: it follows records created,
 * moved to another cluster, labelled leaving and deleted, of this installation alone and in the
 * instance namespace when there is one; after its watch lost its history it lists again and
 * drops the records gone meanwhile. The cluster health round reads it instead of listing the
 * records, falls back to the list while it is not to be trusted, and lets a deleted cluster go
 * only once the records, as listed, hold it no longer.
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { PlacedInstanceCounts } from '../../src/activities/deps.js';
import { clusterActivities } from '../../src/activities/clusters.js';
import { placedInstances, type PlacedInstances } from '../../src/controllers/placed-instances.js';
import { clusterClientFromFile, type ClusterClient } from '../../src/kube/clients.js';
import { clusterDirectory } from '../../src/kube/cluster-directory.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import {
  createRecord,
  deleteRecord,
  getRecord,
  jsonPatchRecord,
  patchRecord,
  pointerKey,
} from '../../src/kube/custom-objects.js';
import { watchKind, type KindWatch } from '../../src/kube/kind-watch.js';
import { LABELS, labelValue } from '../../src/resources/names.js';
import { SF_LABELS } from '../../src/resources/record-labels.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type SFCluster,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { removeRegistry } from '../support/clusters.js';
import { environment, eventually, unique, untilGone } from '../support/env.js';

const registry = unique('placed');
/** The master as this installation's worker reads it: its lists show the records of `registry` alone. */
const master = clusterClientFromFile('1', environment().clusters[0]!.kubeconfigPath, { owner: registry });
const namespaces = [unique('placed-a'), unique('placed-b')] as const;
const [here, there] = [unique('here'), unique('there')];

const record = (
  namespace: string,
  name: string,
  labels: Record<string, string>,
  /** The installation named in its owner label; none: no owner label. */
  owner: string | null = registry,
): SFServiceInstance => ({
  apiVersion: SFSERVICEINSTANCE.apiVersion,
  kind: SFSERVICEINSTANCE.kind,
  metadata: { name, namespace, labels: { ...labels, ...(owner ? { [SF_LABELS.owner]: owner } : {}) } },
  spec: { instanceId: name, serviceId: 's', planId: 'p', organizationGuid: 'o', spaceGuid: 's' },
});
const placedOn = (clusterId: string) => ({ [LABELS.clusterId]: labelValue(clusterId) });
const label = (key: string) => `/metadata/labels/${pointerKey(key)}`;

/** Waits until the count of each cluster named is as expected. */
const untilCounted = (
  counts: PlacedInstanceCounts,
  expected: Record<string, { placed: number; leaving: number }>,
  what: string,
) =>
  eventually(`the count ${what}`, async () =>
    Object.entries(expected).every(([id, count]) => JSON.stringify(counts.of(id)) === JSON.stringify(count))
      ? true
      : undefined,
  );

const running: PlacedInstances[] = [];
const started = (options: Omit<Parameters<typeof placedInstances>[0], 'master'> = {}) => {
  const counts = placedInstances({
    master,
    pageSize: 2,
    onError: (err, what) => console.warn(`placed instances: ${what}: ${String(err)}`),
    ...options,
  });
  running.push(counts);
  return counts;
};

beforeAll(async () => {
  for (const name of namespaces) await master.core.createNamespace({ body: { metadata: { name } } });
});

afterAll(async () => {
  for (const counts of running) counts.stop();
  for (const name of namespaces) await master.core.deleteNamespace({ name }).catch(() => undefined);
  await removeRegistry(master, registry);
});

describe('the count of the instances placed on each cluster', () => {
  test('GIVEN records created, moved, labelled leaving and deleted THEN the count follows them, of this installation and the instance namespace alone', async () => {
    const [a, b] = namespaces;
    const everywhere = started();
    const inA = started({ instanceNamespace: a });
    await Promise.all([everywhere.ready, inA.ready]);
    expect(everywhere.of(here)).toEqual({ placed: 0, leaving: 0 });

    // Three of this installation on `here` (one without an owner label), one of another's, one on `there`
    await createRecord(master, SFSERVICEINSTANCE, record(a, 'i1', placedOn(here)));
    await createRecord(master, SFSERVICEINSTANCE, record(a, 'i2', placedOn(here), null));
    await createRecord(master, SFSERVICEINSTANCE, record(b, 'i3', placedOn(here)));
    await createRecord(master, SFSERVICEINSTANCE, record(b, 'theirs', placedOn(here), 'elsewhere'));
    await createRecord(master, SFSERVICEINSTANCE, record(b, 'i4', placedOn(there)));
    await untilCounted(
      everywhere,
      { [here]: { placed: 3, leaving: 0 }, [there]: { placed: 1, leaving: 0 } },
      'of the records made',
    );
    await untilCounted(
      inA,
      { [here]: { placed: 2, leaving: 0 }, [there]: { placed: 0, leaving: 0 } },
      'in a',
    );

    // i1 moves to `there`, leaving `here` until what it had there is gone
    await jsonPatchRecord(master, SFSERVICEINSTANCE, a, 'i1', [
      { op: 'replace', path: label(LABELS.clusterId), value: labelValue(there) },
      { op: 'add', path: label(LABELS.leavingCluster), value: labelValue(here) },
    ]);
    await untilCounted(
      everywhere,
      { [here]: { placed: 2, leaving: 1 }, [there]: { placed: 2, leaving: 0 } },
      'of a record moved',
    );
    await jsonPatchRecord(master, SFSERVICEINSTANCE, a, 'i1', [
      { op: 'remove', path: label(LABELS.leavingCluster) },
    ]);
    await untilCounted(everywhere, { [here]: { placed: 2, leaving: 0 } }, 'once it left');
    await untilCounted(
      inA,
      { [here]: { placed: 1, leaving: 0 }, [there]: { placed: 1, leaving: 0 } },
      'in a',
    );

    // a record taken over by another installation, and one deleted
    await jsonPatchRecord(master, SFSERVICEINSTANCE, b, 'i3', [
      { op: 'add', path: label(SF_LABELS.owner), value: 'elsewhere' },
    ]);
    await deleteRecord(master, SFSERVICEINSTANCE, a, 'i2');
    await untilCounted(
      everywhere,
      { [here]: { placed: 0, leaving: 0 }, [there]: { placed: 2, leaving: 0 } },
      'of records gone',
    );
    await untilCounted(inA, { [here]: { placed: 0, leaving: 0 } }, 'in a');
  });

  test('GIVEN its watch lost its history WHEN it lists again THEN the records gone meanwhile are dropped and the changes counted', async () => {
    const [, b] = namespaces;
    const cluster = unique('relisted');
    for (const name of ['r1', 'r2', 'r3'])
      await createRecord(master, SFSERVICEINSTANCE, record(b, name, placedOn(cluster)));
    // The watch opens only when the test lets it, from a version long compacted: a 410, then a list.
    let openWatch!: () => void;
    const gate = new Promise<void>((resolve) => (openWatch = resolve));
    const relists: string[] = [];
    const counts = started({
      watch: (client, apiVersion, kind, namespace, onChange, onError, _since, relisting) => {
        let watch: KindWatch | undefined;
        let stopped = false;
        const opened = gate.then(() => {
          if (stopped) return;
          watch = watchKind(client, apiVersion, kind, namespace, onChange, onError, '1', {
            listing: () => (relists.push('listing'), relisting?.listing()),
            listed: () => (relists.push('listed'), relisting?.listed()),
          });
          return watch.opened;
        });
        return {
          opened,
          stop: () => {
            stopped = true;
            watch?.stop();
          },
        };
      },
    });
    await counts.ready;
    expect(counts.of(cluster)).toEqual({ placed: 3, leaving: 0 });
    // WHEN, unseen by any watch, one record goes, one moves away and one comes
    await deleteRecord(master, SFSERVICEINSTANCE, b, 'r1');
    await jsonPatchRecord(master, SFSERVICEINSTANCE, b, 'r2', [
      { op: 'replace', path: label(LABELS.clusterId), value: labelValue(there) },
    ]);
    await createRecord(master, SFSERVICEINSTANCE, record(b, 'r4', placedOn(cluster)));
    expect(counts.of(cluster)).toEqual({ placed: 3, leaving: 0 });
    openWatch();
    // THEN once it listed again, the count is the records'
    await eventually('the list after the 410', async () => (relists.includes('listed') ? true : undefined));
    expect(counts.of(cluster)).toEqual({ placed: 2, leaving: 0 });
    // AND it watches on from the list
    await deleteRecord(master, SFSERVICEINSTANCE, b, 'r3');
    await untilCounted(counts, { [cluster]: { placed: 1, leaving: 0 } }, 'after a deletion');
  });
});

describe('the cluster health round with the kept count', () => {
  const [a] = namespaces;
  let counts: PlacedInstances;
  /** The names of the master's custom-object calls the round made. */
  const calls: string[] = [];
  /** The master, its custom-object calls noted. */
  const observed: ClusterClient = {
    ...master,
    custom: new Proxy(master.custom, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(property));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as CustomObjectsApi,
  };
  const directory = clusterDirectory(observed, registry);
  const lists = () => calls.filter((name) => name.startsWith('list'));
  const round = (clusterId: string, kept: PlacedInstanceCounts | undefined) => {
    calls.length = 0;
    // Not probed: the count is what is looked at.
    return clusterActivities({
      clusters: directory,
      ...(kept ? { placedInstances: kept } : {}),
    }).recordClusterHealth(clusterId, 60_000, 'not probed by this test');
  };
  const readCluster = (id: string) => getRecord<SFCluster>(master, SFCLUSTER, registry, id);

  beforeAll(async () => {
    counts = started();
    await counts.ready;
  });

  test('GIVEN records placed on a cluster THEN the round writes their number from the kept count, without listing them; while the count is not to be trusted, from a list', async () => {
    const cluster = unique('probed');
    await registerCluster(master, registry, cluster, environment().clusters[0]!.kubeconfigPath);
    for (const name of ['p1', 'p2'])
      await createRecord(master, SFSERVICEINSTANCE, record(a, name, placedOn(cluster)));
    await untilCounted(counts, { [cluster]: { placed: 2, leaving: 0 } }, 'of the records placed');

    const kept = await round(cluster, counts);
    expect(kept.serviceInstanceCount).toBe(2);
    expect((await readCluster(cluster))?.status?.serviceInstanceCount).toBe(2);
    expect(lists()).toEqual([]);

    // One more; a count not to be trusted yet is not read
    await createRecord(master, SFSERVICEINSTANCE, record(a, 'p3', placedOn(cluster)));
    const listed = await round(cluster, { of: () => undefined });
    expect(listed.serviceInstanceCount).toBe(3);
    expect(lists()).not.toEqual([]);
    await untilCounted(counts, { [cluster]: { placed: 3, leaving: 0 } }, 'of the third');
    expect((await round(cluster, counts)).serviceInstanceCount).toBe(3);
    expect(lists()).toEqual([]);
    expect((await round(cluster, undefined)).serviceInstanceCount).toBe(3);
    expect(lists()).not.toEqual([]);
  });

  test('GIVEN a deleted cluster an instance is leaving THEN it is kept until the instance has left, and let go only when a list agrees', async () => {
    // GIVEN an instance moved from `gone` to `kept`, still leaving `gone`, and `gone` deleted
    const [gone, kept] = [unique('gone'), unique('kept')];
    await registerCluster(master, registry, gone, environment().clusters[0]!.kubeconfigPath);
    await createRecord(
      master,
      SFSERVICEINSTANCE,
      record(a, 'moved', { ...placedOn(kept), [LABELS.leavingCluster]: labelValue(gone) }),
    );
    await untilCounted(counts, { [gone]: { placed: 0, leaving: 1 } }, 'of the instance leaving');
    await deleteRecord(master, SFCLUSTER, registry, gone);
    // WHEN the rounds run THEN it is kept, terminated
    const held = await round(gone, counts);
    expect(held).toMatchObject({ phase: 'terminated', serviceInstanceCount: 0 });
    expect(held.released).toBeUndefined();
    expect(lists()).toEqual([]);
    // AND a kept count that says nothing holds it is not enough while the records, listed, say otherwise
    const lagging = await round(gone, { of: () => ({ placed: 0, leaving: 0 }) });
    expect(lagging.released).toBeUndefined();
    expect((await readCluster(gone))?.metadata.finalizers).toBeDefined();

    // WHEN the instance has left THEN the round lets it go
    await patchRecord(master, SFSERVICEINSTANCE, a, 'moved', {
      metadata: { labels: { [LABELS.leavingCluster]: null } },
    });
    await untilCounted(counts, { [gone]: { placed: 0, leaving: 0 } }, 'once it left');
    const released = await round(gone, counts);
    expect(released.released).toBe(true);
    await untilGone(`SFCluster ${gone}`, async () => {
      if (!(await readCluster(gone))) throw Object.assign(new Error('gone'), { code: 404 });
    });
  });
});
