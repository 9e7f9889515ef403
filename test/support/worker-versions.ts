/**
 * What the Worker Versioning tests share: a plan whose provision stays in flight until the test
 * opens its gate, a workflow bundle whose provision cannot replay the built one's histories, and
 * what the server records of a run's build and history.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { ClusterClient } from '../../src/kube/clients.js';
import { applyObject, readObject } from '../../src/kube/objects.js';
import { instanceWorkflowId } from '../../src/resources/names.js';
import type { KubeObject, PlanTemplate } from '../../src/resources/types.js';
import { environment, eventually } from './env.js';

/**
 * The gated plan's templates: a provision makes the ConfigMap `gate`, and stays in progress until
 * `data.open` of that ConfigMap says "yes" (written by the test, another field manager), so no
 * operator's pace decides when it ends.
 */
export const GATED: PlanTemplate[] = [
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
export async function openGate(cluster: ClusterClient, instanceId: string): Promise<void> {
  const gate = { apiVersion: 'v1', kind: 'ConfigMap', name: 'gate', namespace: `sf-${instanceId}` };
  await eventually(`the gate of ${instanceId}`, async () =>
    (await readObject(cluster, gate)) ? true : undefined,
  );
  await applyObject(
    cluster,
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
export const CHANGED_TIMER_MS = 10;

/**
 * A built workflow bundle (dist/bundles/workflows.js) with a provision that starts with a timer
 * (CHANGED_TIMER_MS): new provisions run as well on it, but a provision's history written by the
 * built code cannot be replayed by it.
 */
export function withChangedProvision(built: string): string {
  const start = 'async function provisionWorkflow(req) {\n';
  const parts = built.split(start);
  if (parts.length !== 2) throw new Error(`the bundle has ${parts.length - 1} provision workflows, not 1`);
  return built.replace(
    start,
    `${start}    await (0,_temporalio_workflow__WEBPACK_IMPORTED_MODULE_0__.sleep)(${CHANGED_TIMER_MS});\n`,
  );
}

/** The build a workflow run is on (or was on, once closed), as the server records it. */
export async function buildOf(handle: WorkflowHandle): Promise<string | undefined> {
  const { raw } = await handle.describe();
  return raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? undefined;
}

/**
 * The run's history, as what matters here: its timers of the changed code, and its failed
 * workflow tasks' messages.
 */
export async function historyOf(handle: WorkflowHandle) {
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

/**
 * `interoperator worker-version ...` as an operator runs it, against the run's Temporal (the
 * compiled command line of this checkout); its exit status and output.
 */
export async function workerVersion(deploymentName: string, ...args: string[]) {
  const { temporal } = environment();
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [path.join(process.cwd(), 'dist', 'src', 'cli', 'main.js'), 'worker-version', ...args],
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

/** The provision's workflow run once it has begun (its first steps are in its history). */
export async function begun(client: Client, instanceId: string): Promise<WorkflowHandle> {
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
