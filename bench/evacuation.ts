/**
 * Evacuation benchmark, in one run on this machine: N instances of a plan that allows a rebuild
 * elsewhere (`migrate: {evacuate: true}`) are provisioned on a sister (each provision timed); then
 * the sister's apiserver stops for good. Measured: from the moment the apiserver stopped (and, for
 * the record, from the moment the cluster health probe marked the sister `offline`) to the moment
 * every instance is usable again on the master (its move ended succeeded and its record names the
 * master). The evacuation setting counts from the last probe the sister answered. The plan's single resource is ready as soon as it
 * exists, so the figures are the orchestration's, not an operator's.
 * Target: the evacuation setting (the grace period) plus twice the provisions' p99.
 *
 *   npm run build && node dist/bench/evacuation.js [instances] [graceSeconds]   (default: 10 5)
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { getRecord, listRecords, patchRecord } from '../src/kube/custom-objects.js';
import { clusterClientFromKubeconfig } from '../src/kube/clients.js';
import { registerCluster } from '../src/kube/cluster-registry.js';
import { installCrds, readCrds } from '../src/kube/crds.js';
import { applyObject } from '../src/kube/objects.js';
import { instanceWorkflowId, resourceName } from '../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type SFCluster,
  type SFServiceInstance,
} from '../src/resources/types.js';
import { EncryptionCodec, parsePayloadKeys } from '../src/temporal/codec.js';
import { crdFiles, startLocalEnvironment } from '../dev/local/environment.js';
import { startExtraCluster } from '../dev/local/kube-control-plane.js';
import { pool } from './pool.js';
import { startBenchProcesses } from './processes.js';

const INSTANCES = Number(process.argv[2] ?? 10);
const GRACE_SECONDS = Number(process.argv[3] ?? 5);
/** How long the probes go unanswered before the sister is offline. */
const OFFLINE_SECONDS = 2;
const SERVICE = 'bench-service';
const PLAN = 'bench-evacuable';
const LOST = 'lost-sister';

/** The p-th percentile (0..1) of `values`. */
const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
};

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await read().catch(() => undefined);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-bench-'));
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  const stops: (() => Promise<void>)[] = [() => env.stop()];
  try {
    const ns = env.info.namespace;
    const masterId = env.info.clusters[0]!.id;
    if (!env.info.kube) throw new Error('the bench needs its own etcd to start the sister on');
    const lost = await startExtraCluster({
      id: LOST,
      etcdUrl: env.info.kube.etcdUrl,
      pkiDir: env.info.kube.pkiDir,
      workDir,
    });
    stops.push(() => lost.stop());
    await installCrds(clusterClientFromKubeconfig(LOST, lost.cluster.kubeconfig), readCrds(crdFiles()));
    await registerCluster(env.master, ns, LOST, { text: lost.cluster.kubeconfig });

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
        name: 'ready-at-once-evacuable',
        description: 'one ConfigMap, ready as soon as it exists; rebuilt anew when its cluster is lost',
        serviceId: SERVICE,
        manager: { async: true },
        migrate: { evacuate: true },
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
    // The master cordoned while the instances are provisioned, so that they all land on the sister.
    await patchRecord(env.master, SFCLUSTER, ns, masterId, { spec: { schedulingDisabled: true } });

    const { osb, payloadKeys } = await startBenchProcesses({
      temporalAddress: env.info.temporal.address,
      masterKubeconfig: env.info.clusters[0]!.kubeconfigPath,
      plan: PLAN,
      maxSockets: 100,
      env: {
        INTEROP_CLUSTER_PROBE_SECONDS: '1',
        INTEROP_CLUSTER_OFFLINE_SECONDS: String(OFFLINE_SECONDS),
        INTEROP_CLUSTER_EVACUATE_AFTER_SECONDS: String(GRACE_SECONDS),
        INTEROP_CLUSTER_EVACUATION_CONCURRENCY: String(INSTANCES),
        INTEROP_SCHEDULER: 'least-utilized',
      },
      stops,
    });
    const connection = await Connection.connect({ address: env.info.temporal.address });
    stops.push(() => connection.close());
    const temporal = new Client({
      connection,
      dataConverter: { payloadCodecs: [new EncryptionCodec(parsePayloadKeys(payloadKeys))] },
    });
    const phases = async () =>
      Object.fromEntries(
        (await listRecords<SFCluster>(env.master, SFCLUSTER, ns)).map((c) => [
          c.metadata.name,
          c.status?.phase,
        ]),
      );
    await until(
      'both clusters running',
      async () => {
        const now = await phases();
        return now[masterId] === 'running' && now[LOST] === 'running' ? true : undefined;
      },
      60_000,
    );

    // The provisions, all at once, each timed to its end.
    const ids = Array.from({ length: INSTANCES }, () => randomUUID());
    const provisionSeconds: number[] = [];
    await pool(INSTANCES, INSTANCES, async (i) => {
      const started = performance.now();
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
      provisionSeconds.push((performance.now() - started) / 1000);
    });
    const recordOf = (id: string) =>
      getRecord<SFServiceInstance>(env.master, SFSERVICEINSTANCE, `sf-${id}`, resourceName(id));
    for (const id of ids) {
      const placed = (await recordOf(id))?.spec.clusterId;
      if (placed !== LOST) throw new Error(`instance ${id} was placed on ${placed}, not on the sister`);
    }

    // The sister lost for good, the master open again.
    await patchRecord(env.master, SFCLUSTER, ns, masterId, { spec: { schedulingDisabled: null } });
    await lost.stop();
    const stoppedAt = performance.now();
    await until(
      'the sister offline',
      async () => ((await phases())[LOST] === 'offline' ? true : undefined),
      60_000,
    );
    const offlineAt = performance.now();
    await until(
      'every instance usable on the master',
      async () => {
        const records = await Promise.all(ids.map(recordOf));
        const failed = records.find(
          (r) => r?.status?.lastAction?.operation === 'move' && r.status.lastAction.state === 'failed',
        );
        if (failed) throw new Error(`the rebuild of ${failed.spec.instanceId} failed`);
        return records.every(
          (r) =>
            r?.spec.clusterId === masterId &&
            r.status?.lastAction?.operation === 'move' &&
            r.status.lastAction.state === 'succeeded',
        )
          ? true
          : undefined;
      },
      GRACE_SECONDS * 1000 + 180_000,
    );
    const evacuationSeconds = (performance.now() - stoppedAt) / 1000;
    const sinceOffline = (performance.now() - offlineAt) / 1000;
    const p99 = percentile(provisionSeconds, 0.99);
    const target = GRACE_SECONDS + 2 * p99;
    console.log(
      `${INSTANCES} instances: provision p50 ${percentile(provisionSeconds, 0.5).toFixed(2)} s, ` +
        `p99 ${p99.toFixed(2)} s; lost to all usable elsewhere ${evacuationSeconds.toFixed(2)} s ` +
        `(offline to all usable ${sinceOffline.toFixed(2)} s) ` +
        `(grace ${GRACE_SECONDS} s; target ≤ ${target.toFixed(2)} s)`,
    );
    process.exitCode = evacuationSeconds <= target ? 0 : 1;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
