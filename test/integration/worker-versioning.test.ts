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
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { instanceWorkflowId } from '../../src/resources/names.js';
import type { SFPlan } from '../../src/resources/types.js';
import { CLUSTER_HEALTH_SETTINGS_SIGNAL } from '../../src/workflows/messages.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { DESIGN_SERVICE_ID, installDesignPlan, planHelpers } from '../support/plans.js';
import { startProcess, systemSettings, type SystemProcess, type SystemSettings } from '../support/system.js';
import {
  begun,
  buildOf,
  GATED,
  historyOf,
  openGate,
  withChangedProvision,
  workerVersion,
} from '../support/worker-versions.js';

const [master] = clusters();

const root = process.cwd();

/**
 * The built workflow bundle with a provision that starts with a timer (CHANGED_TIMER_MS): new provisions run
 * as well on it, but a provision's history written by the built code cannot be replayed by it.
 */
function changedBundle(): string {
  const changed = withChangedProvision(
    readFileSync(path.join(root, 'dist', 'bundles', 'workflows.js'), 'utf8'),
  );
  const file = path.join(environment().workDir, `workflows-changed-${randomUUID()}.js`);
  writeFileSync(file, changed);
  return file;
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
      await openGate(master!, first);
      await openGate(master!, second);

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
