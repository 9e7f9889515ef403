/** The records an operation's run keeps between its steps (activities/run-records.ts). */
import { asyncLocalStorage, type Context } from '@temporalio/activity';
import {
  keepingAcrossSteps,
  keepingWrites,
  keptOrRead,
  runRecords,
} from '../../../src/activities/run-records.js';
import type { MasterRecords } from '../../../src/activities/master-records.js';
import { SFSERVICEBINDING, SFSERVICEINSTANCE, type KubeObject } from '../../../src/resources/types.js';

const record = (kind: string, name: string, resourceVersion: string): KubeObject => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind,
  metadata: { name, namespace: 'sf-1', resourceVersion },
});

/** Runs `work` as the step `activityId` (its run's sequence number) of the workflow run `runId`. */
const inStep = <T>(runId: string, work: () => Promise<T>, activityId = '1'): Promise<T> =>
  asyncLocalStorage.run(
    { info: { workflowExecution: { workflowId: 'w', runId }, activityId } } as unknown as Context,
    work,
  );

describe('the records a run keeps', () => {
  test('GIVEN a record a run kept WHEN the same run asks within the time THEN it is answered; other runs and later asks are not', () => {
    let now = 1_000;
    const kept = runRecords({ keptMs: 100, now: () => now });
    const instance = record('SFServiceInstance', 'i', '7');
    kept.keep('run-1', SFSERVICEINSTANCE, instance);
    expect(kept.kept('run-1', SFSERVICEINSTANCE, 'sf-1', 'i')).toBe(instance);
    expect(kept.kept('run-2', SFSERVICEINSTANCE, 'sf-1', 'i')).toBeUndefined();
    expect(kept.kept('run-1', SFSERVICEBINDING, 'sf-1', 'i')).toBeUndefined();
    now += 101;
    expect(kept.kept('run-1', SFSERVICEINSTANCE, 'sf-1', 'i')).toBeUndefined();
  });

  test('GIVEN records two runs kept WHEN one of them is written THEN neither run answers it any more', () => {
    const kept = runRecords();
    kept.keep('run-1', SFSERVICEBINDING, record('SFServiceBinding', 'b', '1'));
    kept.keep('run-2', SFSERVICEBINDING, record('SFServiceBinding', 'b', '1'));
    kept.keep('run-2', SFSERVICEINSTANCE, record('SFServiceInstance', 'i', '1'));
    kept.written({ plural: SFSERVICEBINDING.plural, namespace: 'sf-1', name: 'b' });
    expect(kept.kept('run-1', SFSERVICEBINDING, 'sf-1', 'b')).toBeUndefined();
    expect(kept.kept('run-2', SFSERVICEBINDING, 'sf-1', 'b')).toBeUndefined();
    expect(kept.kept('run-2', SFSERVICEINSTANCE, 'sf-1', 'i')).toBeDefined();
  });

  test('GIVEN more runs than it keeps WHEN another keeps a record THEN the least recently used run is dropped', () => {
    const kept = runRecords({ maxRuns: 2 });
    kept.keep('run-1', SFSERVICEINSTANCE, record('SFServiceInstance', 'a', '1'));
    kept.keep('run-2', SFSERVICEINSTANCE, record('SFServiceInstance', 'b', '1'));
    expect(kept.kept('run-1', SFSERVICEINSTANCE, 'sf-1', 'a')).toBeDefined();
    kept.keep('run-3', SFSERVICEINSTANCE, record('SFServiceInstance', 'c', '1'));
    expect(kept.kept('run-2', SFSERVICEINSTANCE, 'sf-1', 'b')).toBeUndefined();
    expect(kept.kept('run-1', SFSERVICEINSTANCE, 'sf-1', 'a')).toBeDefined();
    expect(kept.kept('run-3', SFSERVICEINSTANCE, 'sf-1', 'c')).toBeDefined();
  });

  test('GIVEN a run unused for longer than a record is kept WHEN another run keeps one THEN the first is let go', () => {
    let now = 1_000;
    const kept = runRecords({ keptMs: 100, now: () => now });
    kept.keep('run-1', SFSERVICEINSTANCE, record('SFServiceInstance', 'a', '1'));
    now += 50;
    kept.keep('run-2', SFSERVICEINSTANCE, record('SFServiceInstance', 'b', '1'));
    now += 60;
    kept.keep('run-3', SFSERVICEINSTANCE, record('SFServiceInstance', 'c', '1'));
    // run-1 is gone (110 ms unused), run-2 stays (60 ms), whatever is asked of it later.
    now -= 100;
    expect(kept.kept('run-1', SFSERVICEINSTANCE, 'sf-1', 'a')).toBeUndefined();
    expect(kept.kept('run-2', SFSERVICEINSTANCE, 'sf-1', 'b')).toBeDefined();
  });

  test('GIVEN a step that read a record WHEN the next step of its run reads it THEN it is not read again; outside a step it always is', async () => {
    const kept = runRecords();
    let reads = 0;
    const read = async () => {
      reads += 1;
      return record('SFServiceInstance', 'i', String(reads));
    };
    const first = await inStep('run-1', () => keptOrRead(kept, SFSERVICEINSTANCE, 'sf-1', 'i', read));
    const second = await inStep('run-1', () => keptOrRead(kept, SFSERVICEINSTANCE, 'sf-1', 'i', read));
    expect([first, second, reads]).toEqual([first, first, 1]);
    await inStep('run-2', () => keptOrRead(kept, SFSERVICEINSTANCE, 'sf-1', 'i', read));
    await keptOrRead(kept, SFSERVICEINSTANCE, 'sf-1', 'i', read);
    expect(reads).toBe(3);
  });

  test('GIVEN a step that fails WHEN its run reads again THEN every record it kept is read afresh', async () => {
    const kept = runRecords();
    const steps = keepingAcrossSteps(
      {
        fails: async () => {
          throw new Error('409: the object has been modified');
        },
        succeeds: async () => 'done',
      },
      kept,
    );
    await inStep('run-1', () => steps.succeeds(), '1');
    kept.keep('run-1', SFSERVICEINSTANCE, record('SFServiceInstance', 'i', '1'));
    await expect(inStep('run-1', () => steps.succeeds(), '2')).resolves.toBe('done');
    expect(kept.kept('run-1', SFSERVICEINSTANCE, 'sf-1', 'i')).toBeDefined();
    await expect(inStep('run-1', () => steps.fails(), '3')).rejects.toThrow('409');
    expect(kept.kept('run-1', SFSERVICEINSTANCE, 'sf-1', 'i')).toBeUndefined();
  });

  test('GIVEN records a run kept WHEN its next step here is not the one after the last (a step ran on another worker) THEN they are read afresh', async () => {
    const kept = runRecords();
    const steps = keepingAcrossSteps({ step: async () => 'done' }, kept);
    await inStep('run-1', () => steps.step(), '4');
    kept.keep('run-1', SFSERVICEBINDING, record('SFServiceBinding', 'b', '1'));
    await inStep('run-1', () => steps.step(), '5');
    expect(kept.kept('run-1', SFSERVICEBINDING, 'sf-1', 'b')).toBeDefined();
    // Step 6 ran elsewhere: step 7 here finds nothing kept.
    await inStep('run-1', () => steps.step(), '7');
    expect(kept.kept('run-1', SFSERVICEBINDING, 'sf-1', 'b')).toBeUndefined();
    // A step run again (its attempt after a failure elsewhere) has the same number: nothing kept either.
    kept.keep('run-1', SFSERVICEBINDING, record('SFServiceBinding', 'b', '2'));
    await inStep('run-1', () => steps.step(), '7');
    expect(kept.kept('run-1', SFSERVICEBINDING, 'sf-1', 'b')).toBeUndefined();
  });

  test('GIVEN records whose writes keep THEN a status write keeps the record as written and a removal drops the run', async () => {
    const kept = runRecords();
    const written = record('SFServiceBinding', 'b', '9');
    const records = keepingWrites(
      {
        write: async () => written,
        remove: async (_kind, onMaster) => onMaster(),
      } as Partial<MasterRecords> as MasterRecords,
      kept,
    );
    await inStep('run-1', () =>
      records.write({ kind: 'status', record: 'binding', namespace: 'sf-1', name: 'b', status: {} }),
    );
    expect(kept.kept('run-1', SFSERVICEBINDING, 'sf-1', 'b')).toBe(written);
    await inStep('run-1', () => records.remove('removeBindingRecord', async () => undefined));
    expect(kept.kept('run-1', SFSERVICEBINDING, 'sf-1', 'b')).toBeUndefined();
  });
});
