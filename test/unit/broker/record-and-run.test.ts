/**
 * The order the broker reads an operation's record and its run in: a record found beside no
 * running run must be as the last run left it, even when that run ends between the two reads.
 */
import { describe, expect, it } from '@jest/globals';
import type { Found } from '../../../src/broker/found.js';
import { recordAsLeftByRun, recordOfCreate } from '../../../src/broker/records.js';
import type { RunState } from '../../../src/broker/workflow-runs.js';

interface Record {
  readonly state: string;
}

/**
 * An operation that ends the moment it is first described: its record says `in progress` until
 * then and `succeeded` after, as an operation writes its record before its run ends.
 */
function endingOperation(runningUntilDescribed = false) {
  const reads: string[] = [];
  let ended = false;
  const running: RunState = {
    runId: 'run-1',
    running: true,
    statusName: 'RUNNING',
    startedAt: 0,
  };
  return {
    reads,
    find: async (): Promise<Found<Record>> => {
      reads.push('record');
      return { record: { state: ended ? 'succeeded' : 'in progress' }, elsewhere: false };
    },
    run: async (): Promise<RunState | undefined> => {
      reads.push('run');
      if (runningUntilDescribed) return running;
      ended = true;
      return undefined;
    },
  };
}

describe('recordAsLeftByRun', () => {
  it('describes the run before it reads the record, so an operation that ended between is seen ended', async () => {
    const operation = endingOperation();
    const [found, running] = await recordAsLeftByRun(operation.find, operation.run);
    expect(operation.reads).toEqual(['run', 'record']);
    expect(running).toBeUndefined();
    expect(found.record).toEqual({ state: 'succeeded' });
  });

  it('answers with the running run', async () => {
    const operation = endingOperation(true);
    const [found, running] = await recordAsLeftByRun(operation.find, operation.run);
    expect(running?.runId).toBe('run-1');
    expect(found.record).toEqual({ state: 'in progress' });
  });

  it("leaves another installation's run out, and its failure", async () => {
    const [found, running] = await recordAsLeftByRun(
      async () => ({ elsewhere: true }),
      async () => {
        throw new Error('payloads this installation cannot read');
      },
    );
    expect(found).toEqual({ elsewhere: true });
    expect(running).toBeUndefined();
  });

  it("passes on the describe's failure for its own record", async () => {
    await expect(
      recordAsLeftByRun(
        async () => ({ record: { state: 'succeeded' }, elsewhere: false }),
        async () => {
          throw new Error('Temporal cannot be reached');
        },
      ),
    ).rejects.toThrow('Temporal cannot be reached');
  });
});

describe('recordOfCreate', () => {
  it('reads the record again when no run runs beside it: the run that wrote it may have just ended', async () => {
    const operation = endingOperation();
    const [found, running] = await recordOfCreate(operation.find, operation.run);
    expect(operation.reads).toEqual(['record', 'run', 'record']);
    expect(running).toBeUndefined();
    expect(found.record).toEqual({ state: 'succeeded' });
  });

  it('describes no run for an id without a record', async () => {
    const reads: string[] = [];
    const [found, running] = await recordOfCreate(
      async () => {
        reads.push('record');
        return { elsewhere: false };
      },
      async () => {
        reads.push('run');
        return undefined;
      },
    );
    expect(reads).toEqual(['record']);
    expect(found.record).toBeUndefined();
    expect(running).toBeUndefined();
  });

  it('answers with the running run after one read of the record', async () => {
    const operation = endingOperation(true);
    const [, running] = await recordOfCreate(operation.find, operation.run);
    expect(operation.reads).toEqual(['record', 'run']);
    expect(running?.runId).toBe('run-1');
  });
});
