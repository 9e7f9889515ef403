/**
 * What the cluster probe's count of the instances placed on a cluster costs the servers, read as
 * whole records or as their metadata alone (a PartialObjectMetadataList), a page at a time (from
 * etcd), or as metadata from the apiserver's watch cache (`resourceVersion=0`, which answers in one
 * page whatever the limit), over the same records in the same run: the apiserver's and etcd's CPU
 * (from /proc), this client's, and the time per count, the ways taking turns.
 *
 * Then probe rounds as the cluster health round counts, each a fixed interval in which some of the
 * records are written (their status, as operations do): with no count (the baseline of the writes),
 * with the paged metadata list, and with the count kept from a watch of the records
 * (src/controllers/placed-instances.ts, started afresh for each block of rounds and read each
 * round). The apiserver's and etcd's CPU per round, and what the kept count's first list cost.
 *
 *   npm run build && node --expose-gc dist/bench/record-count.js [records] [rounds] [probe rounds]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { setHeaderOptions } from '@kubernetes/client-node';
import os from 'node:os';
import path from 'node:path';
import { startLocalEnvironment } from '../dev/local/environment.js';
import {
  METADATA_LIST_ACCEPT,
  countRecords,
  createRecord,
  patchRecordStatus,
} from '../src/kube/custom-objects.js';
import { LABELS } from '../src/resources/names.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../src/resources/types.js';
import { placedInstances } from '../src/controllers/placed-instances.js';
import type { ClusterClient } from '../src/kube/clients.js';
import { cpuByRole, cpuSince } from './cpu.js';
import { pool } from './pool.js';

const RECORDS = Number(process.argv[2] ?? 10_000);
const ROUNDS = Number(process.argv[3] ?? 10);
const PROBE_ROUNDS = Number(process.argv[4] ?? 5);
const NAMESPACES = 20;
const CLUSTER = 'sister-1';
/** A probe round's interval, and the records written in each (their status). */
const ROUND_MS = 2000;
const WRITES_PER_ROUND = 20;
/** Blocks of probe rounds, the three ways of counting taking turns block by block. */
const BLOCKS = 2;

/** An instance record about as big as one an operation leaves behind: its spec, labels and a status. */
function record(i: number): SFServiceInstance {
  const name = `bench-${i.toString().padStart(6, '0')}-4b6e-9c3d-1e2f3a4b5c6d`;
  return {
    apiVersion: SFSERVICEINSTANCE.apiVersion,
    kind: SFSERVICEINSTANCE.kind,
    metadata: {
      name,
      namespace: `bench-count-${i % NAMESPACES}`,
      labels: {
        [LABELS.instanceId]: name,
        [LABELS.clusterId]: CLUSTER,
        [LABELS.planId]: 'plan-0f5c8d2e-7a41',
        [LABELS.serviceId]: 'service-5f0c8d2e',
      },
      annotations: { 'interoperator.servicefabrik.io/placement': `placed on ${CLUSTER}: capacity left` },
    },
    spec: {
      instanceId: name,
      serviceId: 'service-5f0c8d2e',
      planId: 'plan-0f5c8d2e-7a41',
      organizationGuid: 'org-7a41-4b6e-9c3d-1e2f3a4b5c6d',
      spaceGuid: 'space-7a41-4b6e-9c3d-1e2f3a4b5c6d',
      clusterId: CLUSTER,
      parameters: { foo: 'bar', size: 'small', backups: { schedule: '0 3 * * *', keep: 7 } },
      context: { platform: 'cloudfoundry', organization_guid: 'org', space_guid: 'space' },
    } as SFServiceInstance['spec'],
  };
}

const STATUS = {
  state: 'succeeded',
  operation: 'provision',
  description: 'The service instance was provisioned',
  resources: ['postgresql', 'ConfigMap', 'Secret', 'Service'].map((kind) => ({
    apiVersion: kind === 'postgresql' ? 'acid.zalan.do/v1' : 'v1',
    kind,
    name: `sapcp-instance-${kind.toLowerCase()}`,
    namespace: 'bench-count',
  })),
};

async function main(): Promise<void> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-record-count-'));
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  try {
    const master = env.master;
    for (let n = 0; n < NAMESPACES; n++)
      await master.core.createNamespace({ body: { metadata: { name: `bench-count-${n}` } } });
    const made = await pool(RECORDS, 20, async (i) => {
      const r = record(i);
      await createRecord(master, SFSERVICEINSTANCE, r);
      await patchRecordStatus(master, SFSERVICEINSTANCE, r.metadata.namespace!, r.metadata.name, STATUS);
    });
    console.log(`${RECORDS} records made in ${made.toFixed(1)} s`);
    const selector = `${LABELS.clusterId}=${CLUSTER}`;
    const ways = {
      'whole records': () => countRecords(master, SFSERVICEINSTANCE, undefined, selector, () => true),
      'metadata only': () => countRecords(master, SFSERVICEINSTANCE, undefined, selector),
      'metadata, cache': async () => {
        const list = (await master.custom.listClusterCustomObject(
          {
            group: SFSERVICEINSTANCE.group,
            version: SFSERVICEINSTANCE.version,
            plural: SFSERVICEINSTANCE.plural,
            labelSelector: selector,
            resourceVersion: '0',
          },
          setHeaderOptions('Accept', METADATA_LIST_ACCEPT),
        )) as { items: unknown[] | null };
        return list.items?.length ?? 0;
      },
    } as const;
    const spent: Record<string, { apiserver: number; etcd: number; client: number; seconds: number }> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const [way, count] of Object.entries(ways)) {
        const before = cpuByRole();
        const client = process.cpuUsage();
        const started = performance.now();
        const counted = await count();
        if (counted !== RECORDS) throw new Error(`${way} counted ${counted} of ${RECORDS}`);
        const seconds = (performance.now() - started) / 1000;
        const cpu = cpuSince(before);
        const own = process.cpuUsage(client);
        const sum = (spent[way] ??= { apiserver: 0, etcd: 0, client: 0, seconds: 0 });
        sum.apiserver += cpu['kube-apiserver'] ?? 0;
        sum.etcd += cpu.etcd ?? 0;
        sum.client += (own.user + own.system) / 1e6;
        sum.seconds += seconds;
      }
    }
    console.log(`\nA count of ${RECORDS} records (pages of 500), mean of ${ROUNDS}, the ways taking turns`);
    console.log('  way              apiserver CPU   etcd CPU   client CPU   time');
    const ms = (s: number) => `${((s * 1000) / ROUNDS).toFixed(0)} ms`;
    for (const [way, sum] of Object.entries(spent))
      console.log(
        `  ${way.padEnd(15)}  ${ms(sum.apiserver).padStart(13)}  ${ms(sum.etcd).padStart(9)}  ${ms(sum.client).padStart(11)}  ${ms(sum.seconds).padStart(6)}`,
      );
    const [whole, meta] = [spent['whole records']!, spent['metadata only']!];
    console.log(
      `  metadata / whole: apiserver ${(meta.apiserver / whole.apiserver).toFixed(2)} ×, time ${(meta.seconds / whole.seconds).toFixed(2)} ×`,
    );
    await probeRounds(master);
  } finally {
    await env.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/**
 * Probe rounds of {@link ROUND_MS}, each writing {@link WRITES_PER_ROUND} records' status and
 * counting the cluster's records one way; the apiserver's and etcd's CPU over each whole round.
 */
async function probeRounds(master: ClusterClient): Promise<void> {
  let written = 0;
  const writes = async (round: number) => {
    for (let i = 0; i < WRITES_PER_ROUND; i++) {
      const r = record((written += 7919) % RECORDS);
      await patchRecordStatus(master, SFSERVICEINSTANCE, r.metadata.namespace!, r.metadata.name, {
        description: `written in round ${round}`,
      });
    }
  };
  type Way = 'writes alone' | 'metadata list' | 'kept count';
  const spent: Record<string, { apiserver: number; etcd: number; rounds: number }> = {};
  const start = { apiserver: 0, etcd: 0, seconds: 0, client: 0, starts: 0, heap: 0 };
  /** The heap in use, after a full collection when node runs with --expose-gc. */
  const heapUsed = () => {
    (globalThis as { gc?: () => void }).gc?.();
    return process.memoryUsage().heapUsed;
  };
  const round = async (way: Way, n: number, count: () => Promise<number> | number) => {
    const began = performance.now();
    const before = cpuByRole();
    const [, counted] = await Promise.all([writes(n), count()]);
    if (counted !== RECORDS) throw new Error(`${way} counted ${counted} of ${RECORDS}`);
    await new Promise((r) => setTimeout(r, Math.max(0, ROUND_MS - (performance.now() - began))));
    const cpu = cpuSince(before);
    const sum = (spent[way] ??= { apiserver: 0, etcd: 0, rounds: 0 });
    sum.apiserver += cpu['kube-apiserver'] ?? 0;
    sum.etcd += cpu.etcd ?? 0;
    sum.rounds += 1;
  };
  const selector = `${LABELS.clusterId}=${CLUSTER}`;
  for (let block = 0, n = 0; block < BLOCKS; block++) {
    for (let i = 0; i < PROBE_ROUNDS; i++) await round('writes alone', n++, () => RECORDS);
    for (let i = 0; i < PROBE_ROUNDS; i++)
      await round('metadata list', n++, () => countRecords(master, SFSERVICEINSTANCE, undefined, selector));
    const heapBefore = heapUsed();
    const before = cpuByRole();
    const client = process.cpuUsage();
    const began = performance.now();
    const placed = placedInstances({ master });
    await placed.ready;
    start.seconds += (performance.now() - began) / 1000;
    const own = process.cpuUsage(client);
    start.client += (own.user + own.system) / 1e6;
    const cpu = cpuSince(before);
    start.apiserver += cpu['kube-apiserver'] ?? 0;
    start.etcd += cpu.etcd ?? 0;
    start.starts += 1;
    start.heap += heapUsed() - heapBefore;
    try {
      for (let i = 0; i < PROBE_ROUNDS; i++)
        await round('kept count', n++, () => placed.of(CLUSTER)?.placed ?? -1);
    } finally {
      placed.stop();
    }
  }
  console.log(
    `\nProbe rounds of ${ROUND_MS / 1000} s over ${RECORDS} records, ${WRITES_PER_ROUND} records' status written in each, ` +
      `${PROBE_ROUNDS * BLOCKS} rounds each way in blocks taking turns; CPU per round`,
  );
  console.log('  way              apiserver CPU   etcd CPU');
  const ms = (s: number, n: number) => `${((s * 1000) / n).toFixed(0)} ms`;
  for (const [way, sum] of Object.entries(spent))
    console.log(
      `  ${way.padEnd(15)}  ${ms(sum.apiserver, sum.rounds).padStart(13)}  ${ms(sum.etcd, sum.rounds).padStart(9)}`,
    );
  const [alone, list, kept] = [spent['writes alone']!, spent['metadata list']!, spent['kept count']!];
  const over = (way: typeof alone) =>
    (way.apiserver - (alone.apiserver * way.rounds) / alone.rounds) / way.rounds;
  console.log(
    `  the count's own share of the apiserver per round: metadata list ${(over(list) * 1000).toFixed(0)} ms, kept count ${(over(kept) * 1000).toFixed(0)} ms`,
  );
  console.log(
    `  the kept count's start (its first list, metadata pages of 500), mean of ${start.starts}: apiserver ${ms(start.apiserver, start.starts)}, ` +
      `etcd ${ms(start.etcd, start.starts)}, client ${ms(start.client, start.starts)}, ${ms(start.seconds, start.starts)}`,
  );
  const gc = (globalThis as { gc?: unknown }).gc !== undefined;
  console.log(
    `  the kept count's heap: ${(start.heap / start.starts / 2 ** 20).toFixed(1)} MiB${gc ? '' : ' (without --expose-gc: rough)'}`,
  );
}

await main();
