/**
 * Drain benchmark, in one run on this machine: the time to drain N instances off a sister (the
 * drain moves each to the master through the move workflow, `concurrency` at once) against the
 * time to provision the same N instances there (OSB provisions, `concurrency` in flight, each
 * waited for). The plan's single resource is ready as soon as it exists and it moves by being
 * provisioned anew (`migrate: {}`), so the figures are the orchestration's, not an operator's.
 * Target: a drain takes at most twice the provisions' time.
 *
 *   npm run build && node dist/bench/drain.js [instances] [concurrency]   (default: 10 10)
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { drainWorkflowId, type RolloutProgress } from '../src/admin/contract.js';
import { patchRecord, patchRecordStatus } from '../src/kube/custom-objects.js';
import { applyObject } from '../src/kube/objects.js';
import { instanceWorkflowId } from '../src/resources/names.js';
import { SFCLUSTER } from '../src/resources/types.js';
import { EncryptionCodec, parsePayloadKeys } from '../src/temporal/codec.js';
import { ROLLOUT_MESSAGES } from '../src/workflows/messages.js';
import { startLocalEnvironment } from '../dev/local/environment.js';
import { pool } from './pool.js';
import { startBenchProcesses } from './processes.js';

const INSTANCES = Number(process.argv[2] ?? 10);
const CONCURRENCY = Number(process.argv[3] ?? 10);
/** A drain may take at most this many times the provisions' time. */
const TARGET_RATIO = 2;
const SERVICE = 'bench-service';
const PLAN = 'bench-movable';
const SISTER = 'sister-1';
const ADMIN = { username: 'bench-admin', password: 'bench-admin-password' };

async function main(): Promise<void> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-bench-'));
  const env = await startLocalEnvironment({ workDir, sisters: 1 });
  const stops: (() => Promise<void>)[] = [() => env.stop()];
  try {
    const ns = env.info.namespace;
    const masterId = env.info.clusters[0]!.id;
    await applyObject(env.master, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE, namespace: ns },
      spec: { id: SERVICE, name: 'bench', description: 'bench', bindable: false },
    });
    await applyObject(env.master, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFPlan',
      metadata: { name: PLAN, namespace: ns },
      spec: {
        id: PLAN,
        name: 'ready-at-once-movable',
        description: 'one ConfigMap, ready as soon as it exists; moves by being provisioned anew',
        serviceId: SERVICE,
        manager: { async: true },
        migrate: {},
        templates: [
          {
            action: 'provision',
            type: 'gotemplate',
            content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n',
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
            content: 'provision: {state: {{ if .cm }}succeeded{{ else }}in progress{{ end }}}\n',
          },
        ],
      },
    });
    // Both clusters as a probed landscape shows them; the master cordoned while the instances are
    // provisioned, so that the least-utilized scheduler places them all on the sister.
    for (const id of [masterId, SISTER])
      await patchRecordStatus(env.master, SFCLUSTER, ns, id, { phase: 'running' });
    await patchRecord(env.master, SFCLUSTER, ns, masterId, { spec: { schedulingDisabled: true } });

    const { osb, payloadKeys, port } = await startBenchProcesses({
      temporalAddress: env.info.temporal.address,
      masterKubeconfig: env.info.clusters[0]!.kubeconfigPath,
      plan: PLAN,
      maxSockets: 100,
      env: {
        INTEROP_CLUSTER_PROBE_SECONDS: '0',
        INTEROP_SCHEDULER: 'least-utilized',
        INTEROP_ADMIN_USERNAME: ADMIN.username,
        INTEROP_ADMIN_PASSWORD: ADMIN.password,
      },
      stops,
    });
    const connection = await Connection.connect({ address: env.info.temporal.address });
    stops.push(() => connection.close());
    const temporal = new Client({
      connection,
      dataConverter: { payloadCodecs: [new EncryptionCodec(parsePayloadKeys(payloadKeys))] },
    });
    const admin = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}${route}`, {
        method,
        headers: {
          Authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`,
          'X-Requested-By': 'bench',
          'Content-Type': 'application/json',
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, text: await res.text() };
    };

    // The provisions, `CONCURRENCY` in flight, each waited for.
    const ids = Array.from({ length: INSTANCES }, () => randomUUID());
    const provisionSeconds = await pool(INSTANCES, CONCURRENCY, async (i) => {
      const res = await osb('PUT', `/v2/service_instances/${ids[i]}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: PLAN,
        organization_guid: 'o',
        space_guid: 's',
      });
      if (res.status !== 202) throw new Error(`provision answered ${res.status}: ${res.text}`);
      const status = (await temporal.workflow.getHandle(instanceWorkflowId(ids[i]!)).result()) as {
        state: string;
      };
      if (status.state !== 'succeeded') throw new Error(`provision of ${ids[i]} ${status.state}`);
    });

    // The drain of the sister, the master open again: from the request to the drain's end.
    await patchRecord(env.master, SFCLUSTER, ns, masterId, { spec: { schedulingDisabled: null } });
    const started = performance.now();
    const res = await admin('POST', `/admin/clusters/${SISTER}/drain`, {
      canary: 0,
      maxConcurrency: CONCURRENCY,
      soakSeconds: 0,
    });
    if (res.status !== 202) throw new Error(`drain answered ${res.status}: ${res.text}`);
    const handle = temporal.workflow.getHandle(drainWorkflowId(ns, SISTER));
    for (;;) {
      const progress = await handle.query<RolloutProgress>(ROLLOUT_MESSAGES.progress).catch(() => undefined);
      if (progress?.state === 'done') {
        if (progress.done !== INSTANCES) throw new Error(`the drain moved ${progress.done} of ${INSTANCES}`);
        break;
      }
      if (progress && ['halted', 'aborted', 'blocked'].includes(progress.state))
        throw new Error(`drain ${progress.state}: ${JSON.stringify(progress).slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const drainSeconds = (performance.now() - started) / 1000;
    const ratio = drainSeconds / provisionSeconds;
    console.log(
      `${INSTANCES} instances, ${CONCURRENCY} at once: provisions ${provisionSeconds.toFixed(2)} s, ` +
        `drain ${drainSeconds.toFixed(2)} s; ratio ${ratio.toFixed(2)} (target ≤ ${TARGET_RATIO})`,
    );
    process.exitCode = ratio <= TARGET_RATIO ? 0 : 1;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
