/**
 * Who a change wakes: the operations that said "in progress" after reading the changed source,
 * each once, none that released their word, only for news (not a change the read already showed,
 * nor one that leaves the operator behind the generation the read showed), and only through
 * watches of the operators' kinds (one per kind and cluster, in the instance namespace when there
 * is one). The watches are given
 * as a function, so these cases run without a cluster; the real watch is exercised by
 * test/integration/status-wakeups.test.ts.
 */
import { statusWakeups } from '../../../src/controllers/status-wakeups.js';
import type { ClusterClient } from '../../../src/kube/clients.js';
import type { ObjectChange, ObjectKey } from '../../../src/kube/kind-watch.js';
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

function setUp(instanceNamespace?: string, open = true) {
  const woken: string[] = [];
  const watches: {
    kind: string;
    namespace: string | undefined;
    change(object: ObjectKey, resourceVersion?: string, change?: ObjectChange): void;
  }[] = [];
  const wakeups = statusWakeups({
    wake: async ({ workflowId, runId }) => void woken.push(`${workflowId} ${runId}`),
    watch: (_cluster, _apiVersion, kind, namespace, onChange) => {
      watches.push({ kind, namespace, change: onChange });
      return { opened: Promise.resolve(), isOpen: () => open, stop: () => undefined };
    },
    ...(instanceNamespace ? { instanceNamespace } : {}),
  });
  /** Word left as a check leaves it: before the read, then told what the read showed (nothing: not there). */
  const waitOn = async (run: { workflowId: string; runId: string }, sources: AppliedResource[]) => {
    const word = await wakeups.expect(cluster, sources, run);
    for (const source of sources) word.seen(source, undefined);
    return word;
  };
  return { woken, watches, wakeups, waitOn };
}

describe('status wake-ups', () => {
  test('GIVEN two operations waiting on one postgresql WHEN it changes twice THEN each is woken once', async () => {
    const { woken, watches, wakeups, waitOn } = setUp();
    await waitOn(run('instance/a'), [postgresql('pg')]);
    await waitOn(run('binding/a/b'), [postgresql('pg')]);
    expect(watches.map((w) => w.kind)).toEqual(['postgresql']);
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    await Promise.resolve();
    expect(woken.sort()).toEqual(['binding/a/b run-1', 'instance/a run-1']);
    expect(wakeups.size()).toEqual({ waiting: 0, watches: 1 });
    wakeups.stop();
  });

  test('GIVEN a waiting operation WHEN another object of the kind changes THEN it sleeps on', async () => {
    const { woken, watches, wakeups, waitOn } = setUp();
    await waitOn(run('instance/a'), [postgresql('pg')]);
    watches[0]!.change({ namespace: 'sf-a', name: 'other' });
    watches[0]!.change({ namespace: 'sf-b', name: 'pg' });
    await Promise.resolve();
    expect(woken).toEqual([]);
    wakeups.stop();
  });

  test('GIVEN an operation that released its word (its check settled) WHEN the source changes THEN it is not woken', async () => {
    const { woken, watches, wakeups, waitOn } = setUp();
    const waiting = await waitOn(run('instance/a'), [postgresql('pg')]);
    waiting.release();
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    await Promise.resolve();
    expect(woken).toEqual([]);
    expect(wakeups.size().waiting).toBe(0);
    wakeups.stop();
  });

  test('GIVEN word left by one operation of an instance (its run ended unreleased) and the next operation waiting WHEN the source changes THEN each run is woken, never the next run for the first', async () => {
    const { woken, watches, wakeups, waitOn } = setUp();
    await waitOn(run('instance/a', 'provision'), [postgresql('pg')]);
    await waitOn(run('instance/a', 'deprovision'), [postgresql('pg')]);
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' });
    await Promise.resolve();
    expect(woken.sort()).toEqual(['instance/a deprovision', 'instance/a provision']);
    wakeups.stop();
  });

  test('GIVEN sources of the core group (a Secret) THEN no watch of them is started', async () => {
    const { watches, wakeups, waitOn } = setUp();
    await waitOn(run('binding/a/b'), [secret, postgresql('pg')]);
    await waitOn(run('binding/a/c'), [secret]);
    expect(watches.map((w) => w.kind)).toEqual(['postgresql']);
    expect(wakeups.size()).toEqual({ waiting: 1, watches: 1 });
    wakeups.stop();
  });

  test('GIVEN one namespace for all instances THEN the watch stays in it', async () => {
    const { watches, wakeups, waitOn } = setUp('instances');
    await waitOn(run('instance/a'), [postgresql('pg')]);
    expect(watches.map((w) => w.namespace)).toEqual(['instances']);
    wakeups.stop();
  });

  test('GIVEN a check that read the postgresql at version 10 WHEN the watch tells of version 10 (its own apply, late) and then 11 THEN only 11 wakes it', async () => {
    const { woken, watches, wakeups } = setUp();
    const word = await wakeups.expect(cluster, [postgresql('pg')], run('binding/a/b'));
    word.seen(postgresql('pg'), { resourceVersion: '10' });
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '9', { type: 'MODIFIED' });
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '10', { type: 'MODIFIED' });
    await Promise.resolve();
    expect(woken).toEqual([]);
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '11', { type: 'MODIFIED' });
    await Promise.resolve();
    expect(woken).toEqual(['binding/a/b run-1']);
    wakeups.stop();
  });

  test('GIVEN a read that showed generation 3 not yet observed WHEN changes leave the operator behind it THEN they wake nothing, until one reports generation 3 observed', async () => {
    const { woken, watches, wakeups } = setUp();
    const word = await wakeups.expect(cluster, [postgresql('pg')], run('binding/a/b'));
    expect(word.seen(postgresql('pg'), { resourceVersion: '10', unobservedGeneration: 3 })).toBe(true);
    const change = (rv: string, observedGeneration: number) =>
      watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, rv, {
        type: 'MODIFIED',
        generation: 4,
        observedGeneration,
      });
    change('11', 2); // another bind's apply
    change('12', 2); // the operator says it is updating
    await Promise.resolve();
    expect(woken).toEqual([]);
    change('13', 4);
    await Promise.resolve();
    expect(woken).toEqual(['binding/a/b run-1']);
    wakeups.stop();
  });

  test('GIVEN a read that showed an unobserved generation WHEN the postgresql is deleted THEN the deletion wakes it', async () => {
    const { woken, watches, wakeups } = setUp();
    const word = await wakeups.expect(cluster, [postgresql('pg')], run('instance/a'));
    word.seen(postgresql('pg'), { resourceVersion: '10', unobservedGeneration: 3 });
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '11', { type: 'DELETED', observedGeneration: 2 });
    await Promise.resolve();
    expect(woken).toEqual(['instance/a run-1']);
    wakeups.stop();
  });

  test('GIVEN word left before the read WHEN a change comes before the read is told THEN it is held and judged by what the read showed', async () => {
    const { woken, watches, wakeups } = setUp();
    const seenAlready = await wakeups.expect(cluster, [postgresql('pg')], run('binding/a/b'));
    const news = await wakeups.expect(cluster, [postgresql('pg')], run('binding/a/c'));
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '10', { type: 'MODIFIED' });
    await Promise.resolve();
    expect(woken).toEqual([]);
    // One read after the change (it showed version 10), one before it (version 9).
    expect(seenAlready.seen(postgresql('pg'), { resourceVersion: '10' })).toBe(true);
    expect(news.seen(postgresql('pg'), { resourceVersion: '9' })).toBe(false);
    await Promise.resolve();
    expect(woken).toEqual(['binding/a/c run-1']);
    expect(wakeups.size().waiting).toBe(1);
    wakeups.stop();
  });

  test('GIVEN watches that open THEN the word says it is heard, and a source of the core group keeps no word', async () => {
    const { wakeups } = setUp();
    const word = await wakeups.expect(cluster, [secret, postgresql('pg')], run('binding/a/b'));
    expect(word.heard).toBe(true);
    expect(word.seen(secret, undefined)).toBe(false);
    wakeups.stop();
  });

  test('GIVEN a watch the apiserver does not stream (refused, or ended and not yet back) THEN the word says it is not heard', async () => {
    const { wakeups } = setUp(undefined, false);
    const word = await wakeups.expect(cluster, [postgresql('pg')], run('binding/a/b'));
    expect(word.heard).toBe(false);
    wakeups.stop();
  });
  test('GIVEN a step that waits for the word itself WHEN the news comes THEN the step is woken, not the run, and the word is gone', async () => {
    const { woken, watches, wakeups, waitOn } = setUp();
    const word = await waitOn(run('binding/a/b'), [postgresql('pg')]);
    const heard = word.woken(60_000);
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '11', { type: 'MODIFIED' });
    await expect(heard).resolves.toBe(true);
    expect(woken).toEqual([]);
    expect(wakeups.size().waiting).toBe(0);
    wakeups.stop();
  });

  test('GIVEN a step that waits for the word itself WHEN nothing comes within its time THEN it answers so, and the word stays: a later change wakes the run', async () => {
    const { woken, watches, wakeups, waitOn } = setUp();
    const word = await waitOn(run('binding/a/b'), [postgresql('pg')]);
    await expect(word.woken(10)).resolves.toBe(false);
    expect(wakeups.size().waiting).toBe(1);
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '11', { type: 'MODIFIED' });
    await Promise.resolve();
    expect(woken).toEqual(['binding/a/b run-1']);
    expect(wakeups.size().waiting).toBe(0);
    wakeups.stop();
  });

  test('GIVEN a change held before the step told what it saw WHEN it tells THEN the wait that follows ends at once', async () => {
    const { woken, watches, wakeups } = setUp();
    const word = await wakeups.expect(cluster, [postgresql('pg')], run('binding/a/b'));
    watches[0]!.change({ namespace: 'sf-a', name: 'pg' }, '12', { type: 'MODIFIED', observedGeneration: 2 });
    // Told after the change came: the change was news to what the apply saw, and woke the run.
    word.seen(postgresql('pg'), { resourceVersion: '11', unobservedGeneration: 2 });
    await Promise.resolve();
    expect(woken).toEqual(['binding/a/b run-1']);
    await expect(word.woken(60_000)).resolves.toBe(false);
    wakeups.stop();
  });
});
