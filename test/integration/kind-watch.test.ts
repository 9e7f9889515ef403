/**
 * The watch of a kind (src/kube/kind-watch.ts) on the real apiserver, asked to go on from a version
 * whose history the apiserver no longer has (410 Gone): what changed meanwhile is told all the
 * same, from a list of the objects, and what changes afterwards too. A watch whose apiserver
 * stops backs off, and says it is not open.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { watchKind, type KindWatch } from '../../src/kube/kind-watch.js';
import { startOwnCluster } from '../support/clusters.js';
import { clusters, eventually, unique } from '../support/env.js';

const [master] = clusters();

describe('a watch of a kind', () => {
  const namespace = unique('kind-watch');
  let watch: KindWatch | undefined;

  beforeAll(async () => {
    await master!.core.createNamespace({ body: { metadata: { name: namespace } } });
  });

  afterAll(async () => {
    watch?.stop();
    await master!.core.deleteNamespace({ name: namespace });
  });

  test('GIVEN a version whose history is gone WHEN it watches on from there THEN it tells of what changed since, then of what changes', async () => {
    // GIVEN a ConfigMap made after the version the watch is to go on from
    const made = await master!.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'settings' }, data: { hosts: 'db-1' } },
    });
    const heard: { name: string; resourceVersion?: string }[] = [];
    const errors: string[] = [];
    // WHEN the watch goes on from the first version there was: far behind the apiserver's history
    watch = watchKind(
      master!,
      'v1',
      'ConfigMap',
      namespace,
      (object, resourceVersion) =>
        heard.push({ name: object.name, ...(resourceVersion ? { resourceVersion } : {}) }),
      (err) => errors.push(String(err)),
      '1',
    );
    // THEN it tells of the ConfigMap as it is now
    await eventually('the ConfigMap made before the watch', async () =>
      heard.some((h) => h.name === 'settings' && h.resourceVersion === made.metadata?.resourceVersion)
        ? true
        : undefined,
    );
    // AND of a change after it
    const changed = await master!.core.replaceNamespacedConfigMap({
      name: 'settings',
      namespace,
      body: { ...made, data: { hosts: 'db-2' } },
    });
    await eventually('the change after the list', async () =>
      heard.some((h) => h.resourceVersion === changed.metadata?.resourceVersion) ? true : undefined,
    );
  });
});

describe('a watch of a cluster whose apiserver stops', () => {
  let own: Awaited<ReturnType<typeof startOwnCluster>> | undefined;

  afterAll(async () => {
    await own?.extra.stop();
  });

  test('GIVEN a watch that was open WHEN its apiserver stops THEN it retries later each time, not every half second', async () => {
    // GIVEN a watch open on an apiserver of the test's own
    own = await startOwnCluster(unique('watched'));
    const failures: number[] = [];
    const watch = watchKind(
      own.admin,
      'v1',
      'ConfigMap',
      undefined,
      () => undefined,
      () => failures.push(Date.now()),
    );
    await watch.opened;
    expect(watch.isOpen?.()).toBe(true);
    await own.admin.core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: unique('heard') } },
    });
    await sleep(500);
    // WHEN the apiserver stops for 7 s
    await own.extra.stop();
    await sleep(7000);
    // AND it does not say it is open while it is not
    expect(watch.isOpen?.()).toBe(false);
    watch.stop();
    // THEN it tried again after about 0.5, 1, 2 and 4 s (6 tries at most), not every half second
    expect(failures.length).toBeGreaterThanOrEqual(3);
    expect(failures.length).toBeLessThanOrEqual(6);
    const gaps = failures.slice(1).map((at, i) => at - failures[i]!);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]!).toBeGreaterThan(gaps[i - 1]! * 1.5);
  });
});
