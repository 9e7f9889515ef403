/** The sink of operation endings: each run's ending counted once, however often its task ran. */
import type { WorkflowInfo } from '@temporalio/workflow';
import { operationSinks } from '../../../src/activities/metrics.js';
import type { FinishedOperation } from '../../../src/metrics/recorders.js';

const ending = { kind: 'provision', outcome: 'succeeded', planId: 'p', clusterId: '1' } as const;
const info = (workflowId: string, runId: string) =>
  ({ workflowId, runId, runStartTime: new Date(Date.now() - 1000) }) as WorkflowInfo;

function counted(calls: [string, string][]): Omit<FinishedOperation, 'seconds'>[] {
  const finished: Omit<FinishedOperation, 'seconds'>[] = [];
  const sinks = operationSinks({
    operationFinished: ({ seconds: _s, ...operation }) => finished.push(operation),
    stepRetried: () => undefined,
    templateRendered: () => undefined,
  });
  for (const [workflowId, runId] of calls) void sinks.operations.finished.fn(info(workflowId, runId), ending);
  return finished;
}

describe('operation endings', () => {
  test.each([
    ['one run told once', [['instance/a', 'r1']], 1],
    [
      'one run told twice (its task ran again)',
      [
        ['instance/a', 'r1'],
        ['instance/a', 'r1'],
      ],
      1,
    ],
    [
      'two runs of one workflow id',
      [
        ['instance/a', 'r1'],
        ['instance/a', 'r2'],
      ],
      2,
    ],
    [
      'runs of two instances',
      [
        ['instance/a', 'r1'],
        ['instance/b', 'r1'],
      ],
      2,
    ],
  ] as [string, [string, string][], number][])('GIVEN %s THEN counted %s time(s)', (_n, calls, times) => {
    expect(counted(calls)).toEqual(Array.from({ length: times }, () => ending));
  });
});
