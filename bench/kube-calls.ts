/**
 * What each kind of Kubernetes call a provision makes costs the servers: CPU time of the
 * apiserver, etcd and the controller manager (read from /proc) and of this client, per call, for
 * N instances, 10 calls at a time, in the order a provision makes them: it says which calls are
 * worth saving.
 *
 *   npm run build && node dist/bench/kube-calls.js [instances]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRecord, getRecord, patchRecord, patchRecordStatus } from '../src/kube/custom-objects.js';
import { applyObject, readObject } from '../src/kube/objects.js';
import { startLocalEnvironment } from '../dev/local/environment.js';
import { SFSERVICEINSTANCE, type KubeObject } from '../src/resources/types.js';
import { cpuByRole, cpuSince } from './cpu.js';

const INSTANCES = Number(process.argv[2] ?? 200);
const CONCURRENCY = 10;

async function main(): Promise<void> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-kube-calls-'));
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  try {
    const master = env.master;
    const names = Array.from({ length: INSTANCES }, (_, i) => `bench-${i}`);
    const namespace = (name: string) => `sf-${name}`;
    const record = (name: string) => ({
      apiVersion: SFSERVICEINSTANCE.apiVersion,
      kind: SFSERVICEINSTANCE.kind,
      metadata: {
        name,
        namespace: namespace(name),
        labels: { 'interoperator.servicefabrik.io/plan-id': 'plan' },
        finalizers: ['interoperator.servicefabrik.io/finalizer'],
      },
      spec: { instanceId: name, serviceId: 'service', planId: 'plan', organizationGuid: 'o', spaceGuid: 's' },
    });
    const configMap = (name: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: namespace(name) },
      data: { a: 'b' },
    });
    const cmRef = (name: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'cm',
      namespace: namespace(name),
    });
    const calls: [string, (name: string) => Promise<unknown>][] = [
      [
        'create namespace',
        (n) => master.core.createNamespace({ body: { metadata: { name: namespace(n) } } }),
      ],
      ['create record', (n) => createRecord(master, SFSERVICEINSTANCE, record(n))],
      [
        'patch record status',
        (n) => patchRecordStatus(master, SFSERVICEINSTANCE, namespace(n), n, { state: 'in progress' }),
      ],
      [
        'patch record spec',
        (n) => patchRecord(master, SFSERVICEINSTANCE, namespace(n), n, { spec: { clusterId: '1' } }),
      ],
      ['read record', (n) => getRecord(master, SFSERVICEINSTANCE, namespace(n), n)],
      ['read a missing object', (n) => readObject(master, cmRef(n))],
      ['apply (create)', (n) => applyObject(master, configMap(n))],
      ['read object', (n) => readObject(master, cmRef(n))],
      ['apply (unchanged)', (n) => applyObject(master, configMap(n))],
    ];
    console.log(`\nKubernetes calls: ${INSTANCES} of each, ${CONCURRENCY} at a time; CPU ms per call`);
    console.log('  call                    apiserver   etcd  controller-manager   client');
    for (const [label, call] of calls) {
      const before = cpuByRole();
      const client = process.cpuUsage();
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < INSTANCES) await call(names[next++]!);
        }),
      );
      const spent = cpuSince(before);
      const own = process.cpuUsage(client);
      const per = (seconds = 0) => ((seconds * 1000) / INSTANCES).toFixed(2).padStart(6);
      console.log(
        `  ${label.padEnd(22)}  ${per(spent['kube-apiserver'])}   ${per(spent.etcd)}  ${per(spent['kube-controller-manager']).padStart(18)}   ${per((own.user + own.system) / 1e6)}`,
      );
    }
  } finally {
    await env.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
