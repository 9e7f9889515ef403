/**
 * The operator's command line (runCli) against the admin API served over HTTP by the real Koa app
 * in this test, over an in-memory AdminService: credentials from flags or the environment, tables,
 * updates, removals, rollout commands, and `rollout watch` over sequences of progress answers
 * with the exit status each ending gives; `plan dry-run` over pages of reports.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import { createApp } from '../../../src/api/app.js';
import type { PlanDryRunReport } from '../../../src/admin/dry-run.js';
import type { ActionState } from '../../../src/admin/service.js';
import { EXIT, runCli, type CliIo } from '../../../src/cli/program.js';
import type { AdminClientConfig } from '../../../src/config.js';
import { MemoryAdmin, bindingSummary, instanceSummary, progressOf } from '../../support/memory-admin.js';
import { FakeBroker, testCatalog } from '../api/support.js';

const ADMIN = { username: 'ops', password: 'admin-password-not-secret' };

let server: Server;
let url: string;
let service: MemoryAdmin;

beforeEach(async () => {
  service = new MemoryAdmin();
  const app = createApp({
    broker: new FakeBroker(),
    catalog: testCatalog(),
    credentials: () => ({ username: 'broker', password: 'osb-password' }),
    admin: { service, credentials: () => ADMIN },
  });
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Runs the command line with the admin settings in the environment (unless `config` says otherwise). */
async function cli(argv: string[], options: { tty?: boolean; config?: AdminClientConfig } = {}) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (t: string) => (stdout += t), isTTY: options.tty ?? false },
    stderr: { write: (t: string) => (stderr += t) },
    adminConfig: options.config ?? { url, ...ADMIN },
    rendererConfig: {},
    sleep: async () => undefined,
  };
  const status = await runCli(argv, io);
  return { status, stdout, stderr };
}

describe('credentials', () => {
  test('GIVEN no URL in flags or environment THEN exit 2 naming the flag and the variable', async () => {
    const res = await cli(['instances', 'list'], { config: {} });
    expect([res.status, res.stderr]).toEqual([
      EXIT.usage,
      "interoperator: the admin API's URL is missing: give --url or set INTEROP_ADMIN_URL\n",
    ]);
  });

  test('GIVEN the credentials as flags THEN they are used, and override the environment', async () => {
    const res = await cli(
      ['--url', url, '--username', ADMIN.username, '--password', ADMIN.password, 'instances', 'list'],
      { config: { url: 'http://127.0.0.1:1', username: 'x', password: 'y' } },
    );
    expect(res.status).toBe(EXIT.ok);
  });

  test('GIVEN wrong credentials THEN exit 1 with the API’s description and status', async () => {
    const res = await cli(['--password', 'wrong', 'instances', 'list']);
    expect([res.status, res.stderr]).toEqual([
      EXIT.failed,
      'interoperator: Authentication is required to access this broker. (401 Unauthorized)\n',
    ]);
  });

  test('GIVEN a broker that does not answer THEN exit 1 saying it cannot be reached', async () => {
    const res = await cli(['instances', 'list'], { config: { url: 'http://127.0.0.1:1', ...ADMIN } });
    expect([res.status, res.stderr]).toEqual([
      EXIT.failed,
      expect.stringMatching(/^interoperator: cannot reach/),
    ]);
  });
});

describe('instances and bindings', () => {
  test('GIVEN instances WHEN listed with filters THEN a table of those matching, the filters sent as given', async () => {
    service.instances = [
      instanceSummary('i-1', { planId: 'small' }),
      instanceSummary('i-2', { planId: 'small', state: 'failed', description: 'line one\nline two' }),
      instanceSummary('i-3', { planId: 'large', deletionRequestedAt: '2026-01-01T00:00:00Z' }),
    ];
    const res = await cli(['instances', 'list', '--plan', 'small', '--state', 'failed', '--as', 'alice']);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'INSTANCE   SERVICE   PLAN    CLUSTER   STATE    OPERATION   REVISION   DELETION\n' +
        'i-2        svc       small   1         failed   provision   rev-1      -\n',
    ]);
    expect(service.calls).toEqual([
      { method: 'listInstances', args: [{ planId: 'small', state: 'failed' }, {}] },
    ]);
  });

  test('GIVEN more records than a page WHEN listed THEN the first page and a hint; with --all every page', async () => {
    service.instances = ['a', 'b', 'c'].map((id) => instanceSummary(id));
    const first = await cli(['instances', 'list', '--limit', '2', '-o', 'json']);
    expect(JSON.parse(first.stdout)).toEqual({
      items: [instanceSummary('a'), instanceSummary('b')],
      continue: '2',
    });
    const all = await cli(['instances', 'list', '--limit', '2', '--all']);
    expect(
      all.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(' ')[0]),
    ).toEqual(['a', 'b', 'c']);
    const table = await cli(['instances', 'list', '--limit', '2']);
    expect(table.stderr).toBe('more records: add --continue 2 (or --all)\n');
  });

  test('GIVEN bindings WHEN listed THEN a table of them', async () => {
    service.bindings = [bindingSummary('b-1')];
    const res = await cli(['bindings', 'list', '--cluster', '1']);
    expect(res.stdout.split('\n')[1]).toBe(
      'b-1       i-1        svc       plan   1         succeeded   bind        -',
    );
  });

  test('GIVEN a state no record can have THEN exit 2 listing the states', async () => {
    const res = await cli(['instances', 'list', '--state', 'sleeping']);
    expect([res.status, res.stderr]).toEqual([
      EXIT.usage,
      expect.stringMatching(/Allowed choices are in_queue/),
    ]);
  });

  test('GIVEN an instance WHEN updated THEN the operation is printed and who asked is sent', async () => {
    service.instances = [instanceSummary('i-1')];
    const res = await cli(['--as', 'alice', 'instances', 'update', 'i-1']);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'update of i-1 started: operation update:run-1, to revision rev-2\n',
    ]);
    expect(service.calls).toEqual([{ method: 'updateInstance', args: ['i-1', 'alice (ops)'] }]);
  });

  test('GIVEN a busy instance WHEN updated THEN exit 1 with the ConcurrencyError', async () => {
    service.instances = [instanceSummary('i-1')];
    service.busy.add('i-1');
    const res = await cli(['instances', 'update', 'i-1']);
    expect([res.status, res.stderr]).toEqual([
      EXIT.failed,
      'interoperator: Another operation (update) is in progress. (422 ConcurrencyError)\n',
    ]);
  });

  test('GIVEN stuck records WHEN force-removed THEN what was done is printed', async () => {
    service.instances = [instanceSummary('i-1', { deletionRequestedAt: '2026-01-01T00:00:00Z' })];
    service.bindings = [bindingSummary('b-1')];
    const instance = await cli(['--as', 'alice', 'instances', 'force-remove', 'i-1']);
    expect(instance.stdout).toBe(
      'instance i-1: record sf-i-1/i-1 released, finalizer removed (by alice (ops))\n',
    );
    const binding = await cli(['--as', 'alice', 'bindings', 'force-remove', 'b-1']);
    expect(binding.stdout).toBe(
      'binding b-1: record sf-i-1/b-1 released, deletion requested, finalizer removed (by alice (ops))\n',
    );
  });
});

describe('adopt', () => {
  const report = {
    dryRun: false,
    adopted: [
      { kind: 'instance' as const, instanceId: 'i-1', namespace: 'sf-i-1', name: 'i-1', state: 'succeeded' },
    ],
    refused: [
      {
        kind: 'binding' as const,
        instanceId: 'i-1',
        bindingId: 'b-2',
        namespace: 'sf-i-1',
        name: 'b-2',
        state: 'delete',
        reason: 'an operation is in progress',
      },
    ],
    alreadyAdopted: 3,
  };

  test('GIVEN --dry-run WHEN some records cannot be adopted THEN both lists and the summary are printed, exit 1', async () => {
    service.adoption = report;
    const res = await cli(['--as', 'alice', 'adopt', '--dry-run']);
    expect([res.status, res.stdout]).toEqual([
      EXIT.failed,
      'adoptable:\n' +
        'KIND       INSTANCE   BINDING   RECORD       STATE\n' +
        'instance   i-1        -         sf-i-1/i-1   succeeded\n' +
        '\n' +
        'not adoptable:\n' +
        'KIND      INSTANCE   BINDING   RECORD       STATE    REASON\n' +
        'binding   i-1        b-2       sf-i-1/b-2   delete   an operation is in progress\n' +
        '\n' +
        '1 instances and 0 bindings adoptable, 1 not adoptable, 3 adopted before or made here (dry run: nothing was changed)\n',
    ]);
    expect(service.calls).toEqual([{ method: 'adoptServiceFabrik', args: [true, 'alice (ops)'] }]);
  });

  test('GIVEN every record adoptable WHEN adopted THEN the summary says adopted, exit 0', async () => {
    service.adoption = { ...report, refused: [] };
    const res = await cli(['--as', 'alice', 'adopt']);
    expect(res.status).toBe(EXIT.ok);
    expect(res.stdout).toMatch(
      /1 instances and 0 bindings adopted, 0 not adoptable, 3 adopted before or made here\n$/,
    );
    expect(service.calls).toEqual([{ method: 'adoptServiceFabrik', args: [false, 'alice (ops)'] }]);
  });
});

describe('cluster drain', () => {
  test('GIVEN settings as flags WHEN a cluster is drained THEN they are sent as numbers, and the drain is printed', async () => {
    const res = await cli(['--as', 'alice', 'cluster', 'drain', 'sister-1', '--max-concurrency', '1']);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'drain of cluster sister-1: waves (canary batch): 0/10 done, 0 failed, 0 in flight\n',
    ]);
    expect(service.calls).toEqual([
      { method: 'rollouts.drain', args: ['sister-1', { maxConcurrency: 1 }, 'alice (ops)'] },
    ]);
  });

  test('GIVEN --wait WHEN the drain ends blocked THEN it is followed by its id, the unmovable instances listed, exit 1', async () => {
    const id = 'rollout/ns/drain/sister-1';
    service.rolloutList = [
      { id, kind: 'drain', drain: { clusterId: 'sister-1' }, running: true },
      { id: 'rollout/ns/p1', kind: 'plan', planId: 'p1', running: false },
    ];
    const { planId: _plan, ...blocked } = progressOf({
      state: 'blocked',
      wave: 1,
      total: 2,
      done: 1,
      unmovable: 1,
      drain: { clusterId: 'sister-1' },
      results: {
        i1: { state: 'moved' },
        i2: {
          state: 'unmovable',
          description: 'plan fixed does not say how its instances move (its spec.migrate)',
        },
      },
    });
    service.progressAnswers = [blocked];
    const res = await cli(['cluster', 'drain', 'sister-1', '--wait']);
    expect(res.status).toBe(EXIT.failed);
    expect(res.stdout.split('\n').slice(1)).toEqual([
      `drain ${id}`,
      'blocked (wave 1): 1/2 done, 0 failed, 1 unmovable, 0 in flight',
      'unmovable: i2: plan fixed does not say how its instances move (its spec.migrate)',
      '',
    ]);
    expect(service.calls.map((c) => c.method)).toEqual([
      'rollouts.drain',
      'rollouts.list',
      'rollouts.progressOf',
    ]);
    expect(service.calls[2]!.args).toEqual([id]);
  });
});

describe('rollouts', () => {
  test('GIVEN settings as flags WHEN a rollout starts THEN they are sent as numbers', async () => {
    const res = await cli([
      ...['--as', 'alice', 'rollout', 'start', 'p1', '--canary', '2', '--max-concurrency', '4'],
      ...['--soak-seconds', '0', '--max-failures', '1'],
    ]);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'rollout of p1 to revision rev-2: canary (canary batch): 0/10 done, 0 failed, 0 in flight\n',
    ]);
    expect(service.calls).toEqual([
      {
        method: 'rollouts.start',
        args: ['p1', { canary: 2, maxConcurrency: 4, soakSeconds: 0, maxFailures: 1 }, 'alice (ops)'],
      },
    ]);
  });

  test.each([
    [['--max-concurrency', '0'], /--max-concurrency <n>' argument '0' is invalid. a whole number, 1 or more/],
    [['--canary', 'two'], /--canary <n>' argument 'two' is invalid/],
  ])('GIVEN %j THEN exit 2 and nothing starts', async (flags, error) => {
    const res = await cli(['rollout', 'start', 'p1', ...flags]);
    expect([res.status, res.stderr]).toEqual([EXIT.usage, expect.stringMatching(error)]);
    expect(service.calls).toEqual([]);
  });

  test('GIVEN a rollout WHEN paused, resumed, aborted THEN each prints the state the rollout took', async () => {
    service.progressAnswers = [progressOf()];
    const printed: string[] = [];
    for (const action of ['pause', 'resume', 'abort']) {
      const res = await cli(['rollout', action, 'p1']);
      expect(res.status).toBe(EXIT.ok);
      printed.push(res.stdout);
    }
    expect(printed).toEqual([
      'rollout of p1 to revision rev-2: paused (canary batch): 0/10 done, 0 failed, 0 in flight\n',
      'rollout of p1 to revision rev-2: waves (canary batch): 0/10 done, 0 failed, 0 in flight\n',
      'rollout of p1 to revision rev-2: aborted (canary batch): 0/10 done, 0 failed, 0 in flight\n',
    ]);
    expect(service.calls.map((c) => c.method)).toEqual([
      'rollouts.pause',
      'rollouts.resume',
      'rollouts.abort',
    ]);
  });

  test('GIVEN a rollout that refuses the command WHEN paused THEN exit 1 with the API’s reason', async () => {
    service.progressAnswers = [progressOf({ state: 'paused' })];
    service.commandRefusal = 'The rollout of plan p1 to revision r1 is already paused.';
    const res = await cli(['rollout', 'pause', 'p1']);
    expect([res.status, res.stderr]).toEqual([
      EXIT.failed,
      'interoperator: The rollout of plan p1 to revision r1 is already paused. (409 Conflict)\n',
    ]);
  });

  test('GIVEN no rollout WHEN paused or its status read THEN exit 1 with the API’s 404', async () => {
    expect((await cli(['rollout', 'pause', 'p1'])).status).toBe(EXIT.failed);
    const status = await cli(['rollout', 'status', 'p1']);
    expect([status.status, status.stderr]).toEqual([
      EXIT.failed,
      'interoperator: the plan p1 has no rollout (404)\n',
    ]);
  });

  test('GIVEN a halted rollout WHEN its status is read THEN its failed instances with why', async () => {
    service.progressAnswers = [
      progressOf({
        state: 'halted',
        done: 3,
        failed: 1,
        wave: 2,
        results: { 'i-9': { state: 'failed', description: 'the template failed' } },
      }),
    ];
    const res = await cli(['rollout', 'status', 'p1']);
    expect(res.stdout).toBe(
      'rollout of p1 to revision rev-2: halted (wave 2): 3/10 done, 1 failed, 0 in flight\n' +
        'failed: i-9: the template failed\n',
    );
  });
});

describe('rollout watch', () => {
  const running = [
    progressOf({ state: 'canary', inFlight: 1 }),
    progressOf({ state: 'canary', inFlight: 1 }),
    progressOf({ state: 'soaking', done: 1 }),
    progressOf({ state: 'waves', wave: 1, done: 1, inFlight: 5 }),
  ];

  test('GIVEN a rollout that ends done WHEN watched without a terminal THEN a line at each change, exit 0', async () => {
    service.progressAnswers = [...running, progressOf({ state: 'done', wave: 2, done: 10 })];
    const res = await cli(['rollout', 'watch', 'p1']);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'canary (canary batch): 0/10 done, 0 failed, 1 in flight\n' +
        'soaking (canary batch): 1/10 done, 0 failed, 0 in flight\n' +
        'waves (wave 1): 1/10 done, 0 failed, 5 in flight\n' +
        'done (wave 2): 10/10 done, 0 failed, 0 in flight\n',
    ]);
  });

  test.each([
    ['halted', progressOf({ state: 'halted', wave: 1, done: 5, failed: 1 })],
    ['aborted', progressOf({ state: 'aborted', wave: 1, done: 5 })],
    ['done with failed instances', progressOf({ state: 'done', wave: 2, done: 9, failed: 1 })],
  ])('GIVEN a rollout that ends %s WHEN watched THEN exit 1', async (_, end) => {
    service.progressAnswers = [...running, end];
    const res = await cli(['rollout', 'watch', 'p1']);
    expect(res.status).toBe(EXIT.failed);
  });

  test('GIVEN a terminal WHEN watched THEN a bar redrawn in place, ended by a newline', async () => {
    service.progressAnswers = [
      progressOf({ state: 'waves', wave: 1, done: 5, failed: 1, inFlight: 2 }),
      progressOf({ state: 'done', wave: 2, done: 10 }),
    ];
    const res = await cli(['rollout', 'watch', 'p1'], { tty: true });
    expect(res.stdout).toBe(
      '\r\u001b[2K[###############!!!>>>>>>......] waves (wave 1): 5/10 done, 1 failed, 2 in flight' +
        '\r\u001b[2K[##############################] done (wave 2): 10/10 done, 0 failed, 0 in flight\n',
    );
  });

  test('GIVEN no rollout WHEN watched THEN exit 1 saying so', async () => {
    const res = await cli(['rollout', 'watch', 'p1']);
    expect([res.status, res.stderr]).toEqual([
      EXIT.failed,
      'interoperator: the plan p1 has no rollout (404)\n',
    ]);
  });
});

describe('plan dry-run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dry-run-'));
  const specFile = join(dir, 'plan.yaml');
  writeFileSync(
    specFile,
    'kind: SFPlan\nspec:\n  id: p1\n  name: small\n  serviceId: s1\n  templates:\n  - { action: provision, type: gotemplate }\n',
  );
  const changed = {
    instanceId: 'i-1',
    clusterId: '1',
    revision: 'r1',
    objects: [
      {
        apiVersion: 'acid.zalan.do/v1',
        kind: 'postgresql',
        name: 'db',
        namespace: 'sf-i-1',
        change: 'changed' as const,
        fields: [{ path: 'spec.postgresql.parameters.max_connections', old: '100', new: '120' }],
      },
    ],
  };
  const page = (fields: Partial<PlanDryRunReport>): PlanDryRunReport => ({
    planId: 'p1',
    revision: 'r2',
    currentRevision: 'r1',
    instances: [],
    summary: { changed: 0, unchanged: 0, failed: 0 },
    ...fields,
  });

  test('GIVEN two pages WHEN dry run from an SFPlan file THEN every page is read, the spec sent, a diff printed, exit 0', async () => {
    service.dryRunAnswers = [
      page({ instances: [changed], summary: { changed: 1, unchanged: 0, failed: 0 }, continue: 'c1' }),
      page({
        instances: [{ instanceId: 'i-2', objects: [] }],
        summary: { changed: 0, unchanged: 1, failed: 0 },
      }),
    ];
    const res = await cli(['plan', 'dry-run', 'p1', '--file', specFile, '--limit', '1']);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'instance i-1 (cluster 1, revision r1 → r2):\n' +
        '  ~ postgresql sf-i-1/db\n' +
        '      ~ spec.postgresql.parameters.max_connections: "100" → "120"\n' +
        'instance i-2: no change (0 objects unchanged)\n' +
        'plan p1: revision r1 → r2; 2 instances: 1 would change, 1 unchanged, 0 failed; nothing was applied\n',
    ]);
    expect(service.calls.map((c) => c.args[0])).toEqual([
      expect.objectContaining({ planId: 'p1', limit: 1, spec: expect.objectContaining({ name: 'small' }) }),
      expect.objectContaining({ continue: 'c1' }),
    ]);
  });

  test('GIVEN an instance that could not be dry run THEN it is printed with its error, exit 3', async () => {
    service.dryRunAnswers = [
      page({
        instances: [{ instanceId: 'i-3', objects: [], error: 'the provision template failed' }],
        summary: { changed: 0, unchanged: 0, failed: 1 },
      }),
    ];
    const res = await cli(['plan', 'dry-run', 'p1', '-f', specFile]);
    expect(res.status).toBe(EXIT.incomplete);
    expect(res.stdout).toContain('instance i-3: FAILED: the provision template failed\n');
  });

  test('GIVEN -o json THEN one JSON report of every page', async () => {
    service.dryRunAnswers = [
      page({ instances: [changed], summary: { changed: 1, unchanged: 0, failed: 0 } }),
    ];
    const res = await cli(['plan', 'dry-run', 'p1', '-f', specFile, '-o', 'json']);
    expect(JSON.parse(res.stdout)).toEqual(
      page({ instances: [changed], summary: { changed: 1, unchanged: 0, failed: 0 } }),
    );
  });

  test('GIVEN a spec file that is not YAML THEN exit 2, and nothing is asked', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'a: [\n');
    const res = await cli(['plan', 'dry-run', 'p1', '-f', bad]);
    expect([res.status, res.stderr]).toEqual([
      EXIT.usage,
      expect.stringMatching(/^interoperator: the spec file is not YAML/),
    ]);
    expect(service.calls).toEqual([]);
  });
});

describe('instance action', () => {
  const ran = () => service.calls.find((c) => c.method === 'runAction')?.args;

  beforeEach(() => {
    service.instances = [instanceSummary('i-1')];
    service.actionsOf.set('i-1', ['x-backup']);
  });

  test('GIVEN --param flags WHEN an action runs without --wait THEN the run is printed, exit 0, parameters as strings', async () => {
    const res = await cli([
      'instance',
      'action',
      'i-1',
      'x-backup',
      '--param',
      'label=nightly',
      '--param',
      'note=a=b',
    ]);
    expect([res.status, res.stdout]).toEqual([
      EXIT.ok,
      'x-backup on i-1 started: run run-1 of workflow instance/i-1\n',
    ]);
    expect(ran()).toEqual(['i-1', 'x-backup', { label: 'nightly', note: 'a=b' }, expect.any(String)]);
    expect(service.calls.some((c) => c.method === 'actionState')).toBe(false);
  });

  test('GIVEN a parameters file and a --param WHEN run THEN the flag overrides the file', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const file = `${mkdtempSync(`${tmpdir()}/action-`)}/params.yaml`;
    writeFileSync(file, 'label: from-file\nkeep: 3\n');
    const res = await cli([
      'instances',
      'action',
      'i-1',
      'x-backup',
      '--parameters',
      file,
      '--param',
      'label=flag',
    ]);
    expect(res.status).toBe(EXIT.ok);
    expect(ran()?.[2]).toEqual({ label: 'flag', keep: 3 });
  });

  test.each([
    [['--param', 'novalue'], /--param.*key=value/],
    [['--parameters', '/nonexistent/params.json'], /cannot read the parameters file/],
  ])('GIVEN %j THEN exit 2', async (flags, message) => {
    const res = await cli(['instance', 'action', 'i-1', 'x-backup', ...flags]);
    expect(res.status).toBe(EXIT.usage);
    expect(res.stderr).toMatch(message);
  });

  test.each<[ActionState['state'][], number, string]>([
    [['in progress', 'in progress', 'succeeded'], EXIT.ok, 'x-backup on i-1 succeeded\n'],
    [
      ['in progress', 'failed'],
      EXIT.failed,
      'x-backup on i-1 failed: x-backup failed: the operator said no\n',
    ],
  ])(
    'GIVEN the states %j WHEN waited for THEN the end is printed and the exit is %s',
    async (states, exit, last) => {
      service.actionStates = [...states];
      const res = await cli(['instance', 'action', 'i-1', 'x-backup', '--wait']);
      expect(res.status).toBe(exit);
      expect(res.stdout.split('\n').at(-2)! + '\n').toBe(last);
      expect(service.calls.filter((c) => c.method === 'actionState')).toHaveLength(states.length);
    },
  );

  test.each<[ActionState['state'][], number, string]>([
    [['in progress', 'succeeded'], EXIT.ok, 'x-rotate-secret on i-1 succeeded\n'],
    [
      ['failed'],
      EXIT.failed,
      'x-rotate-secret on i-1 failed: x-rotate-secret failed: the operator said no\n',
    ],
  ])(
    'GIVEN the states %j WHEN a rotation is waited for THEN it is started, followed, and the exit is %s',
    async (states, exit, last) => {
      service.actionStates = [...states];
      const res = await cli(['instance', 'rotate-secret', 'i-1', 'password', '--wait', '--interval', '0.01']);
      expect(res.status).toBe(exit);
      expect(res.stdout).toBe(
        `rotation of password on i-1 started: run run-1 of workflow instance/i-1\n${last}`,
      );
      expect(service.calls.find((c) => c.method === 'rotateSecret')?.args).toEqual([
        'i-1',
        'password',
        expect.any(String),
      ]);
      expect(service.calls.filter((c) => c.method === 'actionState').map((c) => c.args[1])).toEqual(
        states.map(() => 'x-rotate-secret'),
      );
    },
  );

  test('GIVEN an unknown instance WHEN a rotation is asked THEN exit 1 with the API’s description', async () => {
    const res = await cli(['instance', 'rotate-secret', 'nope', 'password']);
    expect(res.status).toBe(EXIT.failed);
    expect(res.stderr).toBe('interoperator: The service instance does not exist. (404 NotFound)\n');
  });

  test('GIVEN an action the plan lacks THEN exit 1 with the API’s description', async () => {
    const res = await cli(['instance', 'action', 'i-1', 'x-restart']);
    expect(res.status).toBe(EXIT.failed);
    expect(res.stderr).toBe(
      'interoperator: Plan plan has no action x-restart; it has no custom actions. (404 NotFound)\n',
    );
  });
});
