/**
 * Who a change wakes: the operations that said "in progress" after reading the changed source,
 * each once, none that released their word, and only through watches of the operators' kinds
 * (one per kind and cluster, in the instance namespace when there is one). The watches are given
 * as a function, so these cases run without a cluster; the real watch is exercised by
 * test/integration/status-wakeups.test.ts.
 */
import { statusWakeups } from '../../../src/controllers/status-wakeups.js';
import type { ClusterClient } from '../../../src/kube/clients.js';
import type { ObjectKey } from '../../../src/kube/kind-watch.js';
import type { AppliedResource } from '../../../src/resources/types.js';

const cluster = { id: '1' } as ClusterClient;
const postgresql = (name: string): AppliedResource => ({
  apiVersion: 'acid.zalan.do/v1',
  kind: 'postgresql',
  name,
  namespace: 'sf-a',
});
/** The first run of the workflow `workflowId`, or its run `runId`. */
const run = (workflowId: string, runId = 'run-1') => ({ workflowId, runId });
const secret: AppliedResource = { apiVersion: 'v1', kind: 'Secret', name: 's', namespace: 'sf-a' };

function setUp(instanceNamespace?: string) {
  const woken: string[] = [];
  const watches: { kind: string; namespace: string | undefined; change(object: ObjectKey): void }[] = [];
  const wakeups = statusWakeups({
    wake: async ({ workflowId, runId }) => void woken.push(`${workflowId} ${runId}`),
    watch: (_cluster, _apiVersion, kind, namespace, onChange) => {
      watches.push({ kind, namespace, change: onChange });
      return { opened: Promise.resolve(), stop: () => undefined };
    },
    ...(instanceNamespace ? { instanceNamespace } : {}),
  });
  return { woken, watches, wakeups };
}

describe('status wake-ups', () => {
  test('GIVEN two operations waiting on one postgresql WHEN it changes twice THEN each is woken once', async () => {
    const { woken, watches, wakeups } = setUp();
    await wakeups.expect(cluster, [postgresql('pg')], run('instance/a'));
    await wakeups.expect(cluster, [postgresql('pg')], run('binding/a/b'));
    expect(watches.map((w) => w.kind)).toEqual(['postgresql']);
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    await Promise.resolve();
    expect(woken.sort()).toEqual(['binding/a/b run-1', 'instance/a run-1']);
    expect(wakeups.size()).toEqual({ waiting: 0, watches: 1 });
    wakeups.stop();
  });

  test('GIVEN a waiting operation WHEN another object of the kind changes THEN it sleeps on', async () => {
    const { woken, watches, wakeups } = setUp();
    await wakeups.expect(cluster, [postgresql('pg')], run('instance/a'));
    watches[0]!.change({ namespace: 'sf-a', name: 'other' });
    watches[0]!.change({ namespace: 'sf-b', name: 'pg' });
    await Promise.resolve();
    expect(woken).toEqual([]);
    wakeups.stop();
  });

  test('GIVEN an operation that released its word (its check settled) WHEN the source changes THEN it is not woken', async () => {
    const { woken, watches, wakeups } = setUp();
    const waiting = await wakeups.expect(cluster, [postgresql('pg')], run('instance/a'));
    waiting.release();
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    await Promise.resolve();
    expect(woken).toEqual([]);
    expect(wakeups.size().waiting).toBe(0);
    wakeups.stop();
  });

  test('GIVEN word left by one operation of an instance (its run ended unreleased) and the next operation waiting WHEN the source changes THEN each run is woken, never the next run for the first', async () => {
    const { woken, watches, wakeups } = setUp();
    await wakeups.expect(cluster, [postgresql('pg')], run('instance/a', 'provision'));
    await wakeups.expect(cluster, [postgresql('pg')], run('instance/a', 'deprovision'));
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    await Promise.resolve();
    expect(woken.sort()).toEqual(['instance/a deprovision', 'instance/a provision']);
    wakeups.stop();
  });

  test('GIVEN sources of the core group (a Secret) THEN no watch of them is started', async () => {
    const { watches, wakeups } = setUp();
    await wakeups.expect(cluster, [secret, postgresql('pg')], run('binding/a/b'));
    await wakeups.expect(cluster, [secret], run('binding/a/c'));
    expect(watches.map((w) => w.kind)).toEqual(['postgresql']);
    expect(wakeups.size()).toEqual({ waiting: 1, watches: 1 });
    wakeups.stop();
  });

  test('GIVEN one namespace for all instances THEN the watch stays in it', async () => {
    const { watches, wakeups } = setUp('instances');
    await wakeups.expect(cluster, [postgresql('pg')], run('instance/a'));
    expect(watches.map((w) => w.namespace)).toEqual(['instances']);
    wakeups.stop();
  });
});
