/**
 * What the cluster probe's count of the instances placed on a cluster costs the servers, read as
 * whole records or as their metadata alone (a PartialObjectMetadataList), a page at a time (from
 * etcd), or as metadata from the apiserver's watch cache (`resourceVersion=0`, which answers in one
 * page whatever the limit), over the same records in the same run: the apiserver's and etcd's CPU
 * (from /proc), this client's, and the time per count, the ways taking turns.
 *
 *   npm run build && node dist/bench/record-count.js [records] [rounds]
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
import { cpuByRole, cpuSince } from './cpu.js';
import { pool } from './pool.js';

const RECORDS = Number(process.argv[2] ?? 10_000);
const ROUNDS = Number(process.argv[3] ?? 10);
const NAMESPACES = 20;
const CLUSTER = 'sister-1';

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
  } finally {
    await env.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
