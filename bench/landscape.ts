/**
 * A large landscape: the reads platforms make (catalog, last_operation, GET instance, GET binding)
 * at 100 concurrent clients, and the memory of the broker and the worker, first with a small
 * landscape (100 instances, 500 bindings), then, in the same run, with a large one (10,000
 * instances, 50,000 bindings by default). The ratios large/small are the result. At 100, 1,000 and
 * the large size, the CPU of each process per provision (with its bind) made through the OSB API.
 *
 * The first 100 instances and one binding each are made through the OSB API (broker, worker,
 * Temporal, the plan's templates); the read targets are among them. The rest of the records are
 * created directly in the apiserver, as the worker writes them (same kinds, namespace, names,
 * labels, spec): what the reads and the broker's memory could depend on is the number of records
 * the apiserver and etcd hold and anything that would list them, and neither the broker nor the
 * worker keeps a cache of records; the workflow histories of those operations would only add to
 * Temporal's database, which a read by id does not scan. All instances live in one namespace
 * (INTEROP_INSTANCE_NAMESPACE), the layout where a list of a namespace would hold them all.
 *
 *   npm run build && node dist/bench/landscape.js [--instances 10000] [--bindings-per-instance 5]
 *
 * BENCH_BROKER_NODE_ARGS: more node flags of the broker, space separated (e.g.
 * `--heapsnapshot-signal=SIGUSR2` to see what its memory holds).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { BROKER_NODE_FLAGS } from '../src/config.js';
import { createRecord } from '../src/kube/custom-objects.js';
import { applyObject } from '../src/kube/objects.js';
import { LABELS, labelValue, resourceName } from '../src/resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../src/resources/types.js';
import { startLocalEnvironment } from '../dev/local/environment.js';
import type { ClusterClient } from '../src/kube/clients.js';
import { cpuByRole, cpuSince, describeCpu, type CpuByRole } from './cpu.js';
import { runBench, startBenchProcesses } from './processes.js';
import type { ReadJob, ReadReply } from './read-load.js';

const { values: args } = parseArgs({
  options: {
    instances: { type: 'string', default: '10000' },
    'bindings-per-instance': { type: 'string', default: '5' },
  },
});
const LARGE = Number(args.instances);
const BINDINGS_PER_INSTANCE = Number(args['bindings-per-instance']);
const SMALL = 100;
/** The landscape between: the operations' CPU is measured at SMALL, MIDDLE and the large one. */
const MIDDLE = 1000;
/** Provisions (each with its bind) whose CPU is measured at each size. */
const OPERATIONS = 40;
const READ_CLIENTS = 100;
const READ_WARM_UP = 2000;
const TIMED_READS = 10_000;
const SEED_CONCURRENCY = 50;
const SERVICE = 'bench-service';
const PLAN = 'bench-plan';
const NAMESPACE = 'instances';
const auth = `Basic ${Buffer.from('bench:bench').toString('base64')}`;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** Resident memory of a process, MB: now and its peak. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** How many objects of a kind the apiserver holds (a list of one item and the count of the rest). */
async function objectCount(master: ClusterClient, apiVersion: string, plural: string): Promise<number> {
  type Counted = { items: unknown[]; metadata?: { remainingItemCount?: number } };
  const [group, version] = apiVersion.split('/') as [string, string];
  const list = (
    plural === 'sfserviceinstances' || plural === 'sfservicebindings'
      ? await master.custom.listClusterCustomObject({ group, version, plural, limit: 1 })
      : plural === 'secrets'
        ? await master.core.listSecretForAllNamespaces({ limit: 1 })
        : plural === 'configmaps'
          ? await master.core.listConfigMapForAllNamespaces({ limit: 1 })
          : await master.core.listNamespace({ limit: 1 })
  ) as Counted;
  return list.items.length + Number(list.metadata?.remainingItemCount ?? 0);
}

await runBench(async (workDir, stops) => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const env = await startLocalEnvironment({ workDir, sisters: 0 });
  stops.push(() => env.stop());
  {
    const ns = env.info.namespace;
    const master = env.master;
    await master.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
    await applyObject(master, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE, namespace: ns },
      spec: {
        id: SERVICE,
        name: 'bench',
        description: 'bench',
        bindable: true,
        instancesRetrievable: true,
        bindingsRetrievable: true,
      },
    });
    await applyObject(master, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFPlan',
      metadata: { name: PLAN, namespace: ns },
      spec: {
        id: PLAN,
        name: 'ready-at-once',
        description: 'one ConfigMap per instance, ready as soon as it exists; bindings with a fixed response',
        serviceId: SERVICE,
        bindable: true,
        manager: { async: true, asyncBinding: false },
        templates: [
          {
            action: 'provision',
            type: 'gotemplate',
            content:
              'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ .instance.spec.instanceId }}\ndata:\n  a: b\n',
          },
          {
            action: 'sources',
            type: 'gotemplate',
            content:
              'cm: {apiVersion: v1, kind: ConfigMap, name: "cm-{{ .instance.spec.instanceId }}", namespace: {{ .instance.metadata.namespace }}}',
          },
          {
            action: 'status',
            type: 'gotemplate',
            content:
              'provision: {state: {{ if .cm }}succeeded{{ else }}in progress{{ end }}}\nbind: {state: succeeded, response: \'{"credentials": {"user": "u"}}\'}\nunbind: {state: succeeded}\n',
          },
        ],
      },
    });

    const { osb, processes, port } = await startBenchProcesses({
      temporalAddress: env.info.temporal.address,
      masterKubeconfig: env.info.clusters[0]!.kubeconfigPath,
      plan: PLAN,
      maxSockets: 60,
      nodeArgs: (role) =>
        role === 'broker'
          ? [...BROKER_NODE_FLAGS, ...(process.env.BENCH_BROKER_NODE_ARGS?.split(' ').filter(Boolean) ?? [])]
          : [],
      env: { INTEROP_NAMESPACE: ns, INTEROP_INSTANCE_NAMESPACE: NAMESPACE },
      stops,
    });

    // ---- the small landscape, through the OSB API
    const real: { id: string; operation: string; bindingId: string }[] = [];
    /** Provisions an instance through the OSB API, waits for it, and binds it once. */
    const provisionAndBind = async () => {
      const id = randomUUID();
      const res = await osb('PUT', `/v2/service_instances/${id}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: PLAN,
        organization_guid: 'o',
        space_guid: 's',
      });
      if (res.status !== 202) throw new Error(`provision answered ${res.status}: ${res.text}`);
      const operation = encodeURIComponent((JSON.parse(res.text) as { operation: string }).operation);
      for (;;) {
        const last = await osb('GET', `/v2/service_instances/${id}/last_operation?operation=${operation}`);
        const state = (JSON.parse(last.text) as { state: string }).state;
        if (state === 'succeeded') break;
        if (state !== 'in progress') throw new Error(`provision of ${id}: ${last.text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const bindingId = randomUUID();
      const bind = await osb('PUT', `/v2/service_instances/${id}/service_bindings/${bindingId}`, {
        service_id: SERVICE,
        plan_id: PLAN,
      });
      if (bind.status !== 201) throw new Error(`bind answered ${bind.status}: ${bind.text}`);
      return { id, operation, bindingId };
    };
    await pool(SMALL, 20, async () => void real.push(await provisionAndBind()));

    /** Records as the worker writes them, straight into the apiserver. */
    const seedInstance = (id: string) =>
      createRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, {
        apiVersion: SFSERVICEINSTANCE.apiVersion,
        kind: SFSERVICEINSTANCE.kind,
        metadata: {
          name: resourceName(id),
          namespace: NAMESPACE,
          labels: {
            [LABELS.instanceId]: labelValue(id),
            [LABELS.serviceId]: labelValue(SERVICE),
            [LABELS.planId]: labelValue(PLAN),
            [LABELS.clusterId]: '1',
          },
        },
        spec: {
          instanceId: id,
          serviceId: SERVICE,
          planId: PLAN,
          organizationGuid: 'o',
          spaceGuid: 's',
          clusterId: '1',
        },
      } as SFServiceInstance);
    const seedBinding = (instanceId: string, bindingId: string) =>
      createRecord<SFServiceBinding>(master, SFSERVICEBINDING, {
        apiVersion: SFSERVICEBINDING.apiVersion,
        kind: SFSERVICEBINDING.kind,
        metadata: {
          name: resourceName(bindingId),
          namespace: NAMESPACE,
          labels: { [LABELS.instanceId]: labelValue(instanceId), [LABELS.bindingId]: labelValue(bindingId) },
        },
        spec: { id: bindingId, instanceId, serviceId: SERVICE, planId: PLAN },
      });
    /** Seeds instances (and their bindings) up to `total` instances; the real ones have one binding each. */
    let seeded = SMALL;
    const seedUpTo = async (total: number) => {
      const started = performance.now();
      const count = total - seeded;
      await pool(count, SEED_CONCURRENCY, async () => {
        const id = randomUUID();
        await seedInstance(id);
        for (let b = 0; b < BINDINGS_PER_INSTANCE; b++) await seedBinding(id, randomUUID());
      });
      seeded = total;
      return (performance.now() - started) / 1000;
    };
    // The small landscape's other bindings: 4 more for each real instance.
    await pool(SMALL * (BINDINGS_PER_INSTANCE - 1), SEED_CONCURRENCY, async (i) => {
      await seedBinding(real[i % SMALL]!.id, randomUUID());
    });

    // ---- reads at 100 clients, from a process of their own (bench/read-load.ts)
    const loader = fork(fileURLToPath(new URL('./read-load.js', import.meta.url)), { stdio: 'inherit' });
    stops.push(async () => {
      loader.kill('SIGTERM');
      await new Promise((r) => loader.once('exit', r));
    });
    const readLatency = (p: string) =>
      new Promise<{ samples: number[]; cpu: CpuByRole }>((resolve, reject) => {
        let before: CpuByRole = {};
        const onReply = (reply: ReadReply) => {
          if ('warm' in reply) {
            before = cpuByRole();
            return;
          }
          loader.off('message', onReply);
          if ('error' in reply) return reject(new Error(reply.error));
          resolve({ samples: reply.samples, cpu: cpuSince(before) });
        };
        loader.on('message', onReply);
        const job: ReadJob = {
          port,
          path: p,
          headers: { Authorization: auth, 'X-Broker-API-Version': '2.17' },
          clients: READ_CLIENTS,
          warmUp: READ_WARM_UP,
          count: TIMED_READS,
        };
        loader.send(job);
      });
    const target = real[0]!;
    const paths = {
      catalog: '/v2/catalog',
      last_operation: `/v2/service_instances/${target.id}/last_operation?operation=${target.operation}`,
      'GET instance': `/v2/service_instances/${target.id}`,
      'GET binding': `/v2/service_instances/${target.id}/service_bindings/${target.bindingId}`,
    };
    type Landscape = {
      instances: number;
      /** CPU by process of OPERATIONS provisions through the OSB API, each with its bind. */
      operations: CpuByRole;
      reads: Record<string, { p50: number; p99: number; cpu: CpuByRole }>;
      broker: { rss: number; peak: number };
      worker: { rss: number; peak: number };
      objects: Record<string, number>;
    };
    const measure = async (instances: number): Promise<Landscape> => {
      const reads: Landscape['reads'] = {};
      for (const [name, p] of Object.entries(paths)) {
        const { samples, cpu } = await readLatency(p);
        reads[name] = { p50: percentile(samples, 50), p99: percentile(samples, 99), cpu };
      }
      const objects: Record<string, number> = {};
      for (const [apiVersion, plural] of [
        ['osb.servicefabrik.io/v1alpha1', 'sfserviceinstances'],
        ['osb.servicefabrik.io/v1alpha1', 'sfservicebindings'],
        ['v1', 'secrets'],
        ['v1', 'configmaps'],
        ['v1', 'namespaces'],
      ] as const)
        objects[plural] = await objectCount(master, apiVersion, plural);
      const before = cpuByRole();
      await pool(OPERATIONS, 10, async () => void (await provisionAndBind()));
      const operations = cpuSince(before);
      return {
        instances,
        operations,
        reads,
        broker: memory(processes.broker.pid!),
        worker: memory(processes.worker.pid!),
        objects,
      };
    };

    const small = await measure(SMALL);
    const middle = LARGE > MIDDLE ? (await seedUpTo(MIDDLE), await measure(MIDDLE)) : undefined;
    const seedSeconds = await seedUpTo(LARGE);
    const large = await measure(LARGE);

    const ms = (v: number) => `${v.toFixed(1)} ms`;
    const mb = (v: number) => `${v.toFixed(0)} MB`;
    console.log(
      `\nLandscape benchmark: ${SMALL} then ${LARGE} instances (${BINDINGS_PER_INSTANCE} bindings each), reads at ${READ_CLIENTS} clients (${TIMED_READS} timed each), ${os.cpus().length} cores; ${LARGE - SMALL} instances and their bindings seeded in ${seedSeconds.toFixed(0)} s`,
    );
    for (const name of Object.keys(paths)) {
      const a = small.reads[name]!;
      const b = large.reads[name]!;
      const cpuA = describeCpu(a.cpu, TIMED_READS);
      const cpuB = describeCpu(b.cpu, TIMED_READS);
      console.log(
        `  ${name.padEnd(15)} p50 ${ms(a.p50)} -> ${ms(b.p50)} (x${(b.p50 / a.p50).toFixed(2)})   p99 ${ms(a.p99)} -> ${ms(b.p99)} (x${(b.p99 / a.p99).toFixed(2)})   CPU/read ${cpuA.total.toFixed(2)} -> ${cpuB.total.toFixed(2)} ms (${cpuB.text})`,
      );
    }
    for (const l of [small, ...(middle ? [middle] : []), large]) {
      const cost = describeCpu(l.operations, OPERATIONS);
      console.log(
        `  ${l.instances} instances: CPU per provision with its bind ${cost.total.toFixed(1)} ms (${cost.text})`,
      );
    }
    for (const [label, l] of [
      ['small', small],
      ['large', large],
    ] as const) {
      console.log(
        `  ${label} (${l.instances} instances): broker RSS ${mb(l.broker.rss)} (peak ${mb(l.broker.peak)}), worker RSS ${mb(l.worker.rss)} (peak ${mb(l.worker.peak)}); apiserver objects: ${Object.entries(
          l.objects,
        )
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
    }
  }
});
