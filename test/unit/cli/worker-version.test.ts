/**
 * `interoperator worker-version`: the workers' versions over an in-memory worker deployment
 * (connectWorkerVersions talks to Temporal; test/integration/worker-versioning.test.ts runs it
 * against the dev server): status, set-current (with a ramp), drained, and their exit statuses.
 */
import { EXIT, runCli, type CliIo } from '../../../src/cli/program.js';
import type { WorkerVersions } from '../../../src/temporal/worker-versions.js';
import type {
  WorkerDeploymentSummary,
  WorkerVersionState,
} from '../../../src/temporal/worker-version-status.js';

/** A deployment whose builds' states the test sets, and which records what was promoted. */
class MemoryVersions implements WorkerVersions {
  readonly promoted: { buildId: string; rampPercent?: number; waitMs: number }[] = [];
  closed = 0;
  /** The answers of the next describes, the last repeated. */
  constructor(private readonly answers: WorkerDeploymentSummary[]) {}

  describe(): Promise<WorkerDeploymentSummary> {
    const answer = this.answers.length > 1 ? this.answers.shift()! : this.answers[0]!;
    return Promise.resolve(answer);
  }

  promote(buildId: string, options: { rampPercent?: number; waitMs: number }): Promise<void> {
    if (buildId === 'absent')
      return Promise.reject(new Error('making interoperator.absent current failed: no pollers'));
    this.promoted.push({ buildId, ...options });
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed++;
    return Promise.resolve();
  }
}

const deployment = (...versions: [string, WorkerVersionState][]): WorkerDeploymentSummary => ({
  deploymentName: 'interoperator',
  ...(versions.some(([, s]) => s === 'current')
    ? { current: versions.find(([, s]) => s === 'current')![0] }
    : {}),
  versions: versions.map(([buildId, state]) => ({ buildId, state })),
});

async function cli(argv: string[], versions?: MemoryVersions) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    adminConfig: {},
    rendererConfig: {},
    ...(versions ? { workerVersions: () => Promise.resolve(versions) } : {}),
    sleep: async () => undefined,
  };
  const status = await runCli(argv, io);
  return { status, stdout, stderr };
}

describe('worker-version status', () => {
  test('GIVEN an upgrade under way THEN one line per build, exit 0, and the connection closed', async () => {
    const versions = new MemoryVersions([deployment(['v1', 'draining'], ['v2', 'current'])]);
    const res = await cli(['worker-version', 'status'], versions);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'worker deployment interoperator\nv1  draining\nv2  current\n',
    ]);
    expect(versions.closed).toBe(1);
  });

  test('GIVEN -o json THEN the summary as JSON', async () => {
    const summary = deployment(['v2', 'current']);
    const res = await cli(['worker-version', 'status', '-o', 'json'], new MemoryVersions([summary]));
    expect(JSON.parse(res.stdout)).toEqual(summary);
  });
});

describe('worker-version set-current', () => {
  test('GIVEN a build THEN it is made current, waiting 300 s for its workers by default', async () => {
    const versions = new MemoryVersions([deployment(['v1', 'draining'], ['v2', 'current'])]);
    const res = await cli(['worker-version', 'set-current', 'v2'], versions);
    expect([res.status, res.stdout]).toEqual([EXIT.ok, 'interoperator.v2 is current\n']);
    expect(versions.promoted).toEqual([{ buildId: 'v2', waitMs: 300_000 }]);
  });

  test('GIVEN --ramp and --wait-seconds THEN that share of the new operations goes to it', async () => {
    const versions = new MemoryVersions([deployment(['v1', 'current'], ['v2', 'ramping'])]);
    const res = await cli(
      ['worker-version', 'set-current', 'v2', '--ramp', '10', '--wait-seconds', '30'],
      versions,
    );
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'interoperator.v2 is ramping (10% of new operations)\n',
    ]);
    expect(versions.promoted).toEqual([{ buildId: 'v2', rampPercent: 10, waitMs: 30_000 }]);
  });

  test.each(['0', '100', 'half'])(
    'GIVEN --ramp %s THEN exit 2: a ramp is above 0 and below 100',
    async (ramp) => {
      const versions = new MemoryVersions([deployment()]);
      const res = await cli(['worker-version', 'set-current', 'v2', '--ramp', ramp], versions);
      expect(res.status).toBe(EXIT.usage);
      expect(res.stderr).toMatch(/a percentage above 0 and below 100/);
      expect(versions.promoted).toEqual([]);
    },
  );

  test('GIVEN a build whose workers never poll THEN exit 1 with why', async () => {
    const versions = new MemoryVersions([deployment()]);
    const res = await cli(['worker-version', 'set-current', 'absent'], versions);
    expect([res.status, res.stderr]).toEqual([
      EXIT.failed,
      'interoperator: making interoperator.absent current failed: no pollers\n',
    ]);
    expect(versions.closed).toBe(1);
  });

  test('GIVEN no Temporal settings THEN exit 2', async () => {
    const res = await cli(['worker-version', 'set-current', 'v2']);
    expect(res.status).toBe(EXIT.usage);
  });
});

describe('worker-version drained', () => {
  test.each<[string, WorkerVersionState | undefined, number, string]>([
    ['drained', 'drained', EXIT.ok, 'interoperator.v1 is drained: its workers may be removed\n'],
    ['never used', 'inactive', EXIT.ok, 'interoperator.v1 is inactive: its workers may be removed\n'],
    [
      'unknown to the deployment',
      undefined,
      EXIT.ok,
      'interoperator.v1 is unknown: its workers may be removed\n',
    ],
    ['draining', 'draining', EXIT.failed, 'interoperator.v1 is draining: keep its workers\n'],
    ['current', 'current', EXIT.failed, 'interoperator.v1 is current: keep its workers\n'],
  ])('GIVEN the old build %s (%s) THEN exit %i', async (_name, state, exit, line) => {
    const versions = new MemoryVersions([
      deployment(...(state ? [['v1', state] as [string, WorkerVersionState]] : [])),
    ]);
    const res = await cli(['worker-version', 'drained', 'v1'], versions);
    expect([res.status, res.stdout]).toEqual([exit, line]);
  });

  test('GIVEN --wait-seconds and a build that drains meanwhile THEN it waits for it, exit 0', async () => {
    const versions = new MemoryVersions([
      deployment(['v1', 'draining']),
      deployment(['v1', 'draining']),
      deployment(['v1', 'drained']),
    ]);
    const res = await cli(['worker-version', 'drained', 'v1', '--wait-seconds', '600'], versions);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'interoperator.v1 is drained: its workers may be removed\n',
    ]);
  });
});
