/**
 * Rollout benchmark, in one run on this machine: instances updated per second by a plan's rollout
 * (from the plan change to the rollout's end, `concurrency` updates at once with no soak, each
 * starting as another ends) against the update workflow alone at the same concurrency (OSB updates
 * of the same instances, `concurrency` in flight, each waited for), measured alternately on the
 * same servers. The plan's single resource is ready as soon as it exists, so the figures are the
 * orchestration's, not an operator's.
 *
 *   npm run build && node dist/bench/rollout.js [instances] [concurrency]   (default: 200 10)
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { rolloutWorkflowId, type RolloutProgress } from '../src/admin/contract.js';
import { ROLLOUT_MESSAGES } from '../src/workflows/messages.js';
import { getRecord, patchRecord } from '../src/kube/custom-objects.js';
import { applyObject } from '../src/kube/objects.js';
import { instanceWorkflowId } from '../src/resources/names.js';
import { SFPLAN, type SFPlan } from '../src/resources/types.js';
import { EncryptionCodec, parsePayloadKeys } from '../src/temporal/codec.js';
import { startLocalEnvironment } from '../dev/local/environment.js';
import { pool } from './pool.js';
import { startBenchProcesses } from './processes.js';

const INSTANCES = Number(process.argv[2] ?? 200);
const CONCURRENCY = Number(process.argv[3] ?? 10);
/** Rounds, the update workflow alone and the rollout alternating. */
const ROUNDS = 2;
/** The rollout's overhead over the update workflow alone must stay under this. */
const TARGET_RATIO = 0.9;
const SERVICE = 'bench-service';
const PLAN = 'bench-rolled-out';

/** The plan: one ConfigMap whose data is `value`, ready as soon as it exists. */
const planSpec = (value: string) => ({
  id: PLAN,
  name: 'ready-at-once',
  description: 'one ConfigMap, ready as soon as it exists',
  serviceId: SERVICE,
  manager: { async: true },
  autoUpdateInstances: true,
  rollout: { canary: 0, maxConcurrency: CONCURRENCY, soakSeconds: 0, maxFailures: 0 },
  templates: [
    {
      action: 'provision',
      type: 'gotemplate',
      content: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: "${value}"\n`,
    },
    {
      action: 'sources',
      type: 'gotemplate',
      content:
        'cm: {apiVersion: v1, kind: ConfigMap, name: cm, namespace: {{ .instance.metadata.namespace }}}',
    },
    {
      action: 'status',
      type: 'gotemplate',
      content:
        'provision: {state: {{ if .cm }}succeeded{{ else }}in progress{{ end }}}\nupdate: {state: {{ if .cm }}succeeded{{ else }}in progress{{ end }}}\n',
    },
  ],
});

async function main(): Promise<void> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-bench-'));
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  const stops: (() => Promise<void>)[] = [() => env.stop()];
  try {
    const ns = env.info.namespace;
    await applyObject(env.master, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE, namespace: ns },
      spec: { id: SERVICE, name: 'bench', description: 'bench', bindable: false, planUpdatable: true },
    });
    await applyObject(env.master, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFPlan',
      metadata: { name: PLAN, namespace: ns },
      spec: planSpec('0'),
    });

    const { osb, payloadKeys } = await startBenchProcesses({
      temporalAddress: env.info.temporal.address,
      masterKubeconfig: env.info.clusters[0]!.kubeconfigPath,
      plan: PLAN,
      maxSockets: 100,
      env: { INTEROP_CLUSTER_PROBE_SECONDS: '0' },
      stops,
    });
    const connection = await Connection.connect({ address: env.info.temporal.address });
    stops.push(() => connection.close());
    const temporal = new Client({
      connection,
      dataConverter: { payloadCodecs: [new EncryptionCodec(parsePayloadKeys(payloadKeys))] },
    });
    const waitFor = (id: string) => temporal.workflow.getHandle(instanceWorkflowId(id)).result();
    /**
     * Where the time between `from` and `to` (epoch ms) went: until the first update workflow
     * started, from it to the last one's end, after that; and an update workflow's mean duration.
     */
    const timeline = async (from: number, to: number): Promise<string> => {
      // Visibility lags the workflows by a moment.
      await new Promise((r) => setTimeout(r, 1500));
      const runs: { start: number; end: number }[] = [];
      for await (const run of temporal.workflow.list({
        query: `WorkflowType = 'updateWorkflow' AND StartTime >= '${new Date(from).toISOString()}'`,
      }))
        runs.push({ start: run.startTime.getTime(), end: run.closeTime?.getTime() ?? Number.NaN });
      const first = Math.min(...runs.map((r) => r.start));
      const last = Math.max(...runs.map((r) => r.end));
      const mean = runs.reduce((sum, r) => sum + r.end - r.start, 0) / runs.length;
      return (
        `${runs.length} updates: first started after ${first - from} ms, the last ended ` +
        `${last - first} ms later, then ${to - last} ms to the end; an update took ${mean.toFixed(0)} ms on average`
      );
    };

    // The instances, provisioned once.
    const ids = Array.from({ length: INSTANCES }, () => randomUUID());
    await pool(INSTANCES, CONCURRENCY, async (i) => {
      const res = await osb('PUT', `/v2/service_instances/${ids[i]}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: PLAN,
        organization_guid: 'o',
        space_guid: 's',
      });
      if (res.status !== 202) throw new Error(`provision answered ${res.status}: ${res.text}`);
      await waitFor(ids[i]!);
    });
    const revisionOf = async () => (await getRecord<SFPlan>(env.master, SFPLAN, ns, PLAN))?.status?.specHash;
    while (!(await revisionOf())) await new Promise((r) => setTimeout(r, 100));

    const alone: number[] = [];
    const rolled: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // The update workflow alone: an OSB update of each instance, `CONCURRENCY` in flight.
      const aloneFrom = Date.now();
      const seconds = await pool(INSTANCES, CONCURRENCY, async (i) => {
        const res = await osb('PATCH', `/v2/service_instances/${ids[i]}?accepts_incomplete=true`, {
          service_id: SERVICE,
          plan_id: PLAN,
          parameters: { round },
        });
        if (res.status !== 202) throw new Error(`update answered ${res.status}: ${res.text}`);
        await waitFor(ids[i]!);
      });
      alone.push(INSTANCES / seconds);
      const aloneTimeline = await timeline(aloneFrom, Date.now());

      // The rollout: a change of the plan, until its rollout is done.
      const before = await revisionOf();
      const started = performance.now();
      const rolloutFrom = Date.now();
      await patchRecord(env.master, SFPLAN, ns, PLAN, { spec: planSpec(String(round)) });
      let revision: string | undefined;
      while ((revision = await revisionOf()) === before) await new Promise((r) => setTimeout(r, 20));
      const handle = temporal.workflow.getHandle(rolloutWorkflowId(ns, PLAN));
      for (;;) {
        const progress = await handle
          .query<RolloutProgress>(ROLLOUT_MESSAGES.progress)
          .catch(() => undefined);
        if (progress && progress.revision === revision && progress.state === 'done') {
          if (progress.done !== INSTANCES)
            throw new Error(`the rollout updated ${progress.done} of ${INSTANCES}`);
          break;
        }
        if (progress && ['halted', 'aborted'].includes(progress.state))
          throw new Error(`rollout ${progress.state}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      rolled.push(INSTANCES / ((performance.now() - started) / 1000));
      const rolloutTimeline = await timeline(rolloutFrom, Date.now());
      console.log(
        `round ${round}: update workflow alone ${alone.at(-1)!.toFixed(2)}/s, rollout ${rolled.at(-1)!.toFixed(2)}/s\n` +
          `  alone:   ${aloneTimeline}\n  rollout: ${rolloutTimeline}`,
      );
    }
    const best = (values: number[]) => Math.max(...values);
    const ratio = best(rolled) / best(alone);
    console.log(
      `\n${INSTANCES} instances, ${CONCURRENCY} at once: update workflow alone ${best(alone).toFixed(2)}/s, ` +
        `rollout ${best(rolled).toFixed(2)}/s; ratio ${ratio.toFixed(2)} (target ≥ ${TARGET_RATIO})`,
    );
    process.exitCode = ratio >= TARGET_RATIO ? 0 : 1;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
