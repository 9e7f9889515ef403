/**
 * Upgrading the workers through Worker Versioning, on the real servers: workers of build v1 run a
 * provision that stays in flight until the test opens its gate (a ConfigMap the plan's status
 * template reads, so no operator's pace decides it) and the cluster health workflow; workers of build v2, whose provision workflow
 * differs in a way that cannot replay v1's histories (a timer first), join and are made current
 * with `interoperator worker-version set-current`. The provision in flight ends on v1, a new one
 * runs on v2, the health workflow moves to v2, no workflow task fails, and v1 is reported drained
 * once its provision has ended. Without versioning, the same change breaks the provision in flight
 * as soon as the old workers go: the contrast the versions are for.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { applyObject, readObject } from '../../src/kube/objects.js';
import { instanceWorkflowId } from '../../src/resources/names.js';
import type { KubeObject, PlanTemplate, SFPlan } from '../../src/resources/types.js';
import { CLUSTER_HEALTH_SETTINGS_SIGNAL } from '../../src/workflows/messages.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { DESIGN_SERVICE_ID, installDesignPlan, planHelpers } from '../support/plans.js';
import { startProcess, systemSettings, type SystemProcess, type SystemSettings } from '../support/system.js';

const [master] = clusters();

/**
 * The gated plan's templates: a provision makes the ConfigMap `gate`, and stays in progress until
 * `data.open` of that ConfigMap says "yes" (written by the test, another field manager).
 */
const GATED: PlanTemplate[] = [
  {
    action: 'provision',
    type: 'gotemplate',
    content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gate\ndata:\n  made: "yes"\n',
  },
  {
    action: 'sources',
    type: 'gotemplate',
    content:
      'gate:\n  apiVersion: v1\n  kind: ConfigMap\n  name: gate\n  namespace: {{ .instance.metadata.namespace }}\n',
  },
  {
    action: 'status',
    type: 'gotemplate',
    content: [
      '{{- $open := "" }}{{ with .gate }}{{ with .data }}{{ $open = index . "open" | default "" }}{{ end }}{{ end }}',
      'provision: {state: "{{ if eq $open "yes" }}succeeded{{ else }}in progress{{ end }}"}',
      'deprovision: {state: succeeded}',
    ].join('\n'),
  },
];

/** Opens the gate of an instance's provision once the provision made it: its next status poll reports it succeeded. */
async function openGate(instanceId: string): Promise<void> {
  const gate = { apiVersion: 'v1', kind: 'ConfigMap', name: 'gate', namespace: `sf-${instanceId}` };
  await eventually(`the gate of ${instanceId}`, async () =>
    (await readObject(master!, gate)) ? true : undefined,
  );
  await applyObject(
    master!,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'gate', namespace: gate.namespace },
      data: { open: 'yes' },
    } as KubeObject,
    'the-test',
  );
}

/** The changed provision's first step: a timer of 10 ms (the status polls wait 250 ms and more). */
const CHANGED_TIMER_MS = 10;

const root = process.cwd();
const run = promisify(execFile);

/**
 * The built workflow bundle with a provision that starts with a timer (CHANGED_TIMER_MS): new provisions run
 * as well on it, but a provision's history written by the built code cannot be replayed by it.
 */
function changedBundle(): string {
  const built = readFileSync(path.join(root, 'dist', 'bundles', 'workflows.js'), 'utf8');
  const start = 'async function provisionWorkflow(req) {\n';
  expect(built.split(start)).toHaveLength(2);
  const changed = built.replace(
    start,
    `${start}    await (0,_temporalio_workflow__WEBPACK_IMPORTED_MODULE_0__.sleep)(${CHANGED_TIMER_MS});\n`,
  );
  const file = path.join(environment().workDir, `workflows-changed-${randomUUID()}.js`);
  writeFileSync(file, changed);
  return file;
}

/** `interoperator worker-version ...` as an operator runs it, against the run's Temporal. */
async function workerVersion(deploymentName: string, ...args: string[]) {
  const { temporal } = environment();
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [path.join(root, 'dist', 'src', 'cli', 'main.js'), 'worker-version', ...args],
      {
        env: {
          ...process.env,
          INTEROP_TEMPORAL_ADDRESS: temporal.address,
          INTEROP_TEMPORAL_NAMESPACE: temporal.namespace,
          INTEROP_WORKER_DEPLOYMENT: deploymentName,
        },
      },
    );
    return { status: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { status: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** The build a workflow run is on (or was on, once closed), as the server records it. */
async function buildOf(handle: WorkflowHandle): Promise<string | undefined> {
  const { raw } = await handle.describe();
  return raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? undefined;
}

/**
 * The run's history, as what matters here: its timers of the changed code, and its failed
 * workflow tasks' messages.
 */
async function historyOf(handle: WorkflowHandle) {
  const events = (await handle.fetchHistory()).events ?? [];
  const ms = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    Number(d?.seconds ?? 0) * 1000 + (d?.nanos ?? 0) / 1e6;
  return {
    changedTimers: events.filter(
      (e) =>
        e.timerStartedEventAttributes &&
        ms(e.timerStartedEventAttributes.startToFireTimeout) === CHANGED_TIMER_MS,
    ).length,
    failedTasks: events.flatMap((e) =>
      e.workflowTaskFailedEventAttributes
        ? [e.workflowTaskFailedEventAttributes.failure?.message ?? '?']
        : [],
    ),
  };
}

/** Starts a provision of the gated plan through the OSB API (202) and returns its last_operation path. */
async function startProvision(osb: OsbClient, planId: string, instanceId: string): Promise<string> {
  const accepted = await osb(
    'PUT',
    `/v2/service_instances/${instanceId}?accepts_incomplete=true`,
    provisionBody(DESIGN_SERVICE_ID, planId),
  );
  expect(accepted.status).toBe(202);
  return `/v2/service_instances/${instanceId}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`;
}

/** The provision's workflow run once it has begun (its first steps are in its history). */
async function begun(client: Client, instanceId: string): Promise<WorkflowHandle> {
  const handle = client.workflow.getHandle(instanceWorkflowId(instanceId));
  await eventually('the provision to begin', async () => {
    try {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.length >= 5 ? true : undefined;
    } catch {
      return undefined;
    }
  });
  const { runId } = await handle.describe();
  return client.workflow.getHandle(instanceWorkflowId(instanceId), runId);
}

/** A process stopped at the end of the test, whatever happens. */
const started: SystemProcess[] = [];
async function start(role: 'broker' | 'worker', settings: SystemSettings, env: Record<string, string> = {}) {
  const process = await startProcess(role, { ...settings, extraEnv: { ...settings.extraEnv, ...env } });
  started.push(process);
  return process;
}

describe('upgrading the workers', () => {
  const registry = unique('versions');
  let design: SFPlan;
  let changed: string;

  beforeAll(async () => {
    design = await installDesignPlan(master!, registry);
    changed = changedBundle();
  });

  afterEach(async () => {
    for (const process of started.splice(0)) await process.stop();
  });

  afterAll(async () => {
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  /** The gated plan in the registry, once the workers have recorded it and the broker lists it. */
  const gatedPlan = (osb: OsbClient) =>
    planHelpers({ master: master!, registry, osb: () => osb, design: () => design }).planCopy(
      unique('gated'),
      {
        templates: GATED,
        schemas: {},
      },
    );

  test('GIVEN workers of v1 running a provision and the health workflow WHEN workers of v2, whose provision cannot replay v1’s, are made current THEN each provision ends on its build, the health workflow moves to v2 and v1 drains', async () => {
    const deploymentName = unique('interop');
    const settings = await systemSettings({
      INTEROP_NAMESPACE: registry,
      INTEROP_WORKER_DEPLOYMENT: deploymentName,
    });
    const { client, close } = await temporalClient(settings.payloadKeys);
    let health: WorkflowHandle | undefined;
    try {
      await start('worker', settings, { INTEROP_WORKER_BUILD_ID: 'v1' });
      const broker = await start('broker', settings);
      const osb = osbClient(broker.url);
      // Until a build is current, the deployment's workers get no workflow.
      expect(await workerVersion(deploymentName, 'set-current', 'v1', '--wait-seconds', '60')).toMatchObject({
        status: 0,
        stdout: `${deploymentName}.v1 is current\n`,
      });

      const planId = await gatedPlan(osb);
      const first = randomUUID();
      const firstOperation = await startProvision(osb, planId, first);
      const firstRun = await begun(client, first);
      health = await client.workflow.start('clusterHealthWorkflow', {
        taskQueue: settings.taskQueue,
        workflowId: unique('clusters'),
        args: [{ probeSeconds: 3600, offlineSeconds: 120 }],
      });
      await eventually('the health workflow on v1', async () =>
        (await buildOf(health!)) === 'v1' ? true : undefined,
      );

      await start('worker', settings, { INTEROP_WORKER_BUILD_ID: 'v2', INTEROP_WORKFLOW_BUNDLE: changed });
      expect(await workerVersion(deploymentName, 'set-current', 'v2', '--wait-seconds', '60')).toMatchObject({
        status: 0,
        stdout: `${deploymentName}.v2 is current\n`,
      });
      // The first provision is still in flight, pinned to v1: its workers are still needed.
      expect((await osb('GET', firstOperation)).body.state).toBe('in progress');
      expect(await workerVersion(deploymentName, 'drained', 'v1')).toMatchObject({
        status: 1,
        stdout: `${deploymentName}.v1 is draining: keep its workers\n`,
      });

      const second = randomUUID();
      const secondOperation = await startProvision(osb, planId, second);
      await health.signal(CLUSTER_HEALTH_SETTINGS_SIGNAL, { probeSeconds: 3600, offlineSeconds: 120 });
      await openGate(first);
      await openGate(second);

      expect((await untilSettled(osb, firstOperation)).body.state).toBe('succeeded');
      expect((await untilSettled(osb, secondOperation)).body.state).toBe('succeeded');
      const secondRun = client.workflow.getHandle(instanceWorkflowId(second));
      expect(await buildOf(firstRun)).toBe('v1');
      expect(await buildOf(secondRun)).toBe('v2');
      // Each ran its own build's code: only v2's provision starts with a timer.
      expect(await historyOf(firstRun)).toEqual({ changedTimers: 0, failedTasks: [] });
      expect(await historyOf(secondRun)).toEqual({ changedTimers: 1, failedTasks: [] });
      await eventually('the health workflow on v2', async () =>
        (await buildOf(health!)) === 'v2' ? true : undefined,
      );
      expect((await historyOf(health)).failedTasks).toEqual([]);

      // Nothing open is pinned to v1 any more: its workers may go.
      const drained = await workerVersion(deploymentName, 'drained', 'v1', '--wait-seconds', '60');
      expect(drained).toMatchObject({
        status: 0,
        stdout: `${deploymentName}.v1 is drained: its workers may be removed\n`,
      });
      const status = await workerVersion(deploymentName, 'status');
      expect(status.stdout).toBe(`worker deployment ${deploymentName}\nv1  drained\nv2  current\n`);
    } finally {
      await health?.terminate().catch(() => undefined);
      await close();
    }
  }, 180_000);

  test('GIVEN unversioned workers running a provision WHEN workers of the changed code take over THEN the provision cannot replay: its workflow tasks fail nondeterminism', async () => {
    const settings = await systemSettings({ INTEROP_NAMESPACE: registry });
    const { client, close } = await temporalClient(settings.payloadKeys);
    let firstRun: WorkflowHandle | undefined;
    try {
      const old = await start('worker', settings);
      const osb = osbClient((await start('broker', settings)).url);
      const planId = await gatedPlan(osb);
      const first = randomUUID();
      await startProvision(osb, planId, first);
      firstRun = await begun(client, first);
      await start('worker', settings, { INTEROP_WORKFLOW_BUNDLE: changed });
      await old.stop();
      const failed = await eventually(
        'a failed workflow task of the provision',
        async () => {
          const { failedTasks } = await historyOf(firstRun!);
          return failedTasks.length > 0 ? failedTasks : undefined;
        },
        60_000,
      );
      expect(failed[0]).toMatch(/nondetermin/i);
    } finally {
      await firstRun?.terminate().catch(() => undefined);
      await close();
    }
  }, 120_000);
});
