/**
 * Real PostgreSQL behind the broker (examples/postgresql-server), on the deploy suite's node: the
 * image of Debian's postgresql-15 (tools/build-postgresql-image.sh) runs as a StatefulSet the plan's
 * helm chart makes, over a claim the node's hostPath provisioner binds. A platform provisions, binds
 * twice and unbinds through OSB; the test then uses the credentials as an app would, with psql from
 * this machine over the Service's address: rows written with one binding are read with the other,
 * one binding's password does not open the other's login, an unbound login is refused, the rows
 * survive a plan change rolled out to the instance (the server restarted with the new setting), the
 * instance moves with its rows to a sister cluster's own node (backed up into the backup store on
 * the master's node, restored on the sister's) where the remaining binding works on with the same
 * password, and the deprovision leaves nothing on the sister's node.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, BatchV1Api, StorageV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { importImageArchive } from '../../dev/local/kube-node.js';
import { clusterClientFromFile } from '../../src/kube/clients.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { getRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { applyObject, ensureNamespace } from '../../src/kube/objects.js';
import { resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFPLAN,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { ADMIN_SETTINGS, callAdmin } from '../support/admin.js';
import { eventually, unique } from '../support/env.js';
import { packChart } from '../support/helm.js';
import { deployEnvironment, nodeTool } from '../support/node.js';
import { osbClient, untilSettled, type OsbClient } from '../support/osb.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';
import { describeWithTool } from '../support/tools.js';

const run = promisify(execFile);
const EXAMPLE = path.join(process.cwd(), 'examples', 'postgresql-server');
const plan = parse(readFileSync(path.join(EXAMPLE, 'sfplan.yaml'), 'utf8')) as SFPlan;
const service = parse(readFileSync(path.join(EXAMPLE, 'sfservice.yaml'), 'utf8')) as KubeObject;
const SERVICE_ID = plan.spec.serviceId;
const PLAN_ID = plan.spec.id;
const STORAGE_CLASS = 'interop-hostpath';

interface Credentials {
  host: string;
  hostname: string;
  port: number;
  dbname: string;
  username: string;
  password: string;
  uri: string;
}

/**
 * The network psql connects from, as an app on the instance's node would: the host's own for the
 * master's node, the sister node's namespace once the instance moved there (its Service addresses
 * are that node's).
 */
let appNetwork: string | undefined;

/** Runs SQL with psql as an app would connect; resolves with its unaligned, tuples-only output. */
async function sql(login: { uri: string } | Credentials, statement: string): Promise<string> {
  const psql = [
    'psql',
    login.uri,
    '--no-psqlrc',
    '--tuples-only',
    '--no-align',
    '--set',
    'ON_ERROR_STOP=1',
    '--command',
    statement,
  ];
  const [command, ...args] = appNetwork ? ['ip', 'netns', 'exec', appNetwork, ...psql] : psql;
  const { stdout } = await run(command!, args, {
    env: { ...process.env, PGCONNECT_TIMEOUT: '5' },
    timeout: 20_000,
  });
  return stdout.trim();
}

/** What psql says when it cannot connect (or run) with `login`; undefined when it could. */
async function refusal(login: { uri: string }): Promise<string | undefined> {
  try {
    await sql(login, 'SELECT 1');
    return undefined;
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
}

describeWithTool(nodeTool())('real PostgreSQL through the broker, on the node', () => {
  const env = deployEnvironment();
  const master = clusterClientFromFile(env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
  const batch = master.kubeConfig.makeApiClient(BatchV1Api);
  const sisterNode = env.sisterNode!;
  const sisterFile = env.clusters.find((c) => c.id === sisterNode?.clusterId)!;
  const sister = clusterClientFromFile(sisterFile.id, sisterFile.kubeconfigPath);
  /** The backup store: a folder of this machine, which both nodes mount at the same path. */
  const backupFolder = path.join(env.workDir, 'postgresql-backups');
  const admin = (method: 'GET' | 'POST', adminPath: string, body?: unknown) =>
    callAdmin(system.url, method, adminPath, body !== undefined ? { body } : {});
  const registry = unique('pg-server');
  let chartServer: http.Server;
  let system: SystemProcess;
  let osb: OsbClient;
  const seconds: Record<string, number> = {};
  /** Applies the example's plan (the chart's url the test server's) with `context` over its own. */
  let applyPlan: (context: Record<string, unknown>) => Promise<unknown>;

  beforeAll(async () => {
    // GIVEN the image imported into the node, a StorageClass of the node's hostPath provisioner,
    // the chart served where the plan says, and the example's service and plan in a catalog
    const built = await run('bash', [path.join('tools', 'build-postgresql-image.sh')], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const archive = built.stdout.trim().split('\n').pop()!;
    for (const node of [env.node!, sisterNode]) await importImageArchive(node.containerdAddress, archive);
    for (const cluster of [master, sister])
      await cluster.kubeConfig
        .makeApiClient(StorageV1Api)
        .createStorageClass({
          body: {
            metadata: { name: STORAGE_CLASS },
            provisioner: 'kubernetes.io/host-path',
            reclaimPolicy: 'Delete',
            volumeBindingMode: 'Immediate',
          },
        })
        .catch((err: { code?: number }) => {
          if (err.code !== 409) throw err;
        });
    const chart = packChart(path.join(EXAMPLE, 'chart'));
    chartServer = http.createServer((req, res) => {
      if (req.url === '/postgresql-server-0.1.0.tgz') res.end(chart);
      else res.writeHead(404).end();
    });
    chartServer.listen(0, '127.0.0.1');
    await new Promise((resolve) => chartServer.once('listening', resolve));
    const chartUrl = `http://127.0.0.1:${(chartServer.address() as AddressInfo).port}/postgresql-server-0.1.0.tgz`;

    // The chart's CRDs, where the chart's test (first in the suite) has not had Helm install them.
    const crdDir = path.join('charts', 'interoperator', 'crds');
    const served = new Set(
      (await master.apiextensions.listCustomResourceDefinition()).items.map((c) => c.metadata!.name),
    );
    await installCrds(
      master,
      readCrds(readdirSync(crdDir).map((file) => path.join(crdDir, file))).filter(
        (crd) => !served.has(crd.metadata!.name),
      ),
    );
    await ensureNamespace(master, registry);
    await registerCluster(master, registry, env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
    await patchRecordStatus(master, SFCLUSTER, registry, env.clusters[0]!.id, { phase: 'running' });
    await applyObject(master, { ...service, metadata: { ...service.metadata, namespace: registry } });
    applyPlan = (context) =>
      applyObject(master, {
        ...plan,
        metadata: { ...plan.metadata, namespace: registry },
        spec: {
          ...plan.spec,
          context: { ...plan.spec.context, storageClass: STORAGE_CLASS, backupFolder, ...context },
          templates: plan.spec.templates.map((t) => (t.type === 'helm' ? { ...t, url: chartUrl } : t)),
        },
      } as KubeObject);
    await applyPlan({});
    system = await startProcess(
      'all',
      await systemSettings({ INTEROP_NAMESPACE: registry, ...ADMIN_SETTINGS }),
    );
    osb = osbClient(system.url);
    await eventually('the postgresql-server plan in the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      return services?.some((s) => s.plans.some((p) => p.id === PLAN_ID)) ? true : undefined;
    });
  }, 600_000);

  afterAll(async () => {
    await system?.stop();
    await new Promise((resolve) => (chartServer ? chartServer.close(resolve) : resolve(undefined)));
    await master.core.deleteNamespace({ name: registry }).catch(() => undefined);
    rmSync(backupFolder, { recursive: true, force: true });
    console.log(`[postgresql-server] seconds: ${JSON.stringify(seconds)}`);
  });

  const instanceId = randomUUID();
  const instancePath = `/v2/service_instances/${instanceId}`;
  const query = `service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`;
  const namespace = `sf-${instanceId}`;
  let first: Credentials;
  let second: Credentials;
  let firstBindingId: string;
  let secondBindingId: string;

  async function bind(): Promise<{ bindingId: string; credentials: Credentials }> {
    const bindingId = randomUUID();
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const accepted = await osb('PUT', `${bindingPath}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    });
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${bindingPath}/last_operation?${query}&operation=${encodeURIComponent(String(accepted.body.operation))}`,
      120_000,
    );
    expect(done.body).toMatchObject({ state: 'succeeded' });
    const fetched = await osb('GET', bindingPath);
    expect(fetched.status).toBe(200);
    return { bindingId, credentials: fetched.body.credentials as Credentials };
  }

  test('a provision starts PostgreSQL on the node and ends once it accepts connections', async () => {
    const started = Date.now();
    const accepted = await osb('PUT', `${instancePath}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
      organization_guid: 'org',
      space_guid: 'space',
    });
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${instancePath}/last_operation?${query}&operation=${encodeURIComponent(String(accepted.body.operation))}`,
      240_000,
    );
    seconds.provision = (Date.now() - started) / 1000;
    expect(done.body).toEqual({ state: 'succeeded', description: 'PostgreSQL accepts connections' });
    // THEN its pod runs on the node, its data on a volume the hostPath provisioner made
    const pod = await master.core.readNamespacedPod({ namespace, name: `pg-${instanceId}-0` });
    expect(pod.spec?.nodeName).toBe(env.node!.name);
    const claim = await master.core.readNamespacedPersistentVolumeClaim({
      namespace,
      name: `pg-${instanceId}-data`,
    });
    expect(claim.status?.phase).toBe('Bound');
  }, 300_000);

  test('a binding’s credentials write real rows, which a second binding reads', async () => {
    const started = Date.now();
    const a = await bind();
    seconds.bind = (Date.now() - started) / 1000;
    firstBindingId = a.bindingId;
    first = a.credentials;
    const service = await master.core.readNamespacedService({ namespace, name: `pg-${instanceId}` });
    expect(first).toEqual({
      host: service.spec!.clusterIP,
      hostname: service.spec!.clusterIP,
      port: 5432,
      dbname: 'app',
      username: `b${a.bindingId.replace(/-/g, '')}`,
      password: expect.stringMatching(/^[0-9a-f]{40}$/),
      uri: `postgresql://${first.username}:${first.password}@${service.spec!.clusterIP}:5432/app`,
    });
    // WHEN an app connects with them and writes rows
    await sql(first, 'CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL)');
    await sql(first, "INSERT INTO notes VALUES (1, 'written by the first binding'), (2, 'kept')");
    seconds.provisionToFirstRow = seconds.provision! + (Date.now() - started) / 1000;

    // THEN a second binding reads them and writes too, with a login of its own
    const other = await bind();
    second = other.credentials;
    secondBindingId = other.bindingId;
    expect(second.username).not.toBe(first.username);
    expect(second.password).not.toBe(first.password);
    expect(await sql(second, 'SELECT body FROM notes ORDER BY id')).toBe(
      'written by the first binding\nkept',
    );
    await sql(second, "INSERT INTO notes VALUES (3, 'written by the second binding')");
    expect(await sql(first, 'SELECT count(*) FROM notes')).toBe('3');
    // AND the first binding's password does not open the second's login
    const crossed = { uri: `postgresql://${second.username}:${first.password}@${first.host}:5432/app` };
    expect(await refusal(crossed)).toMatch(/password authentication failed for user "b[0-9a-f]{32}"/);
  }, 300_000);

  test('after an unbind its credentials are refused, and the other binding works on', async () => {
    const bindingPath = `${instancePath}/service_bindings/${firstBindingId}`;
    const accepted = await osb('DELETE', `${bindingPath}?${query}&accepts_incomplete=true`);
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${bindingPath}/last_operation?${query}&operation=${encodeURIComponent(String(accepted.body.operation))}`,
      120_000,
    );
    expect(done.body).toMatchObject({ state: 'succeeded' });
    expect(await refusal(first)).toMatch(/password authentication failed for user/);
    expect(await sql(second, 'SELECT count(*) FROM notes')).toBe('3');
    // AND the bind's Secret and Job, and the unbind's Job, are gone
    const jobs = await batch.listNamespacedJob({ namespace });
    expect(jobs.items.map((j) => j.metadata?.name).filter((n) => n?.includes(firstBindingId))).toEqual([]);
    await expect(
      master.core.readNamespacedSecret({ namespace, name: `login-${firstBindingId}` }),
    ).rejects.toMatchObject({ code: 404 });
  }, 300_000);

  test('a plan change rolls out: the server restarts with the new setting and the rows are still there', async () => {
    expect(await sql(second, 'SHOW max_connections')).toBe('50');
    const serverBefore = await master.core.readNamespacedPod({ namespace, name: `pg-${instanceId}-0` });
    const started = Date.now();
    await applyPlan({ maxConnections: 60 });
    await eventually(
      'the server restarted with max_connections 60',
      async () => ((await sql(second, 'SHOW max_connections').catch(() => '')) === '60' ? true : undefined),
      240_000,
    );
    seconds.rollout = (Date.now() - started) / 1000;
    const serverAfter = await master.core.readNamespacedPod({ namespace, name: `pg-${instanceId}-0` });
    expect(serverAfter.metadata?.uid).not.toBe(serverBefore.metadata?.uid);
    expect(await sql(second, 'SELECT body FROM notes ORDER BY id')).toBe(
      'written by the first binding\nkept\nwritten by the second binding',
    );
    // AND the instance's update, started by the plan's rollout, ended succeeded on the new revision
    await eventually(
      'the instance’s update succeeded on the plan’s revision',
      async () => {
        const planNow = await getRecord<SFPlan>(master, SFPLAN, registry, PLAN_ID);
        const record = await getRecord<SFServiceInstance>(
          master,
          SFSERVICEINSTANCE,
          namespace,
          resourceName(instanceId),
        );
        return record?.status?.operation === 'update' &&
          record.status.state === 'succeeded' &&
          record.status.planRevision !== undefined &&
          record.status.planRevision === planNow?.status?.specHash
          ? true
          : undefined;
      },
      120_000,
    );
  }, 300_000);

  test('a move takes the instance with its rows to the sister’s node: the remaining binding works there with the same password, and the master keeps nothing of it', async () => {
    const masterClaim = await master.core.readNamespacedPersistentVolumeClaim({
      namespace,
      name: `pg-${instanceId}-data`,
    });
    const masterFolder = (await master.core.readPersistentVolume({ name: masterClaim.spec!.volumeName! }))
      .spec!.hostPath!.path;
    // GIVEN the sister registered for the broker, running
    await registerCluster(master, registry, sisterFile.id, sisterFile.kubeconfigPath);
    await patchRecordStatus(master, SFCLUSTER, registry, sisterFile.id, { phase: 'running' });

    // WHEN an admin moves the instance there
    const started = Date.now();
    const accepted = await admin('POST', `/admin/instances/${instanceId}/move`, { cluster: sisterFile.id });
    expect(accepted.status).toBe(202);
    const runId = String(accepted.body.runId);
    // AND meanwhile the platform's bind is refused, its reads answered
    const refused = await osb(
      'PUT',
      `${instancePath}/service_bindings/${randomUUID()}?accepts_incomplete=true`,
      { service_id: SERVICE_ID, plan_id: PLAN_ID },
    );
    const ended = await eventually(
      'the move ended',
      async () => {
        const res = await admin('GET', `/admin/instances/${instanceId}/actions/move/${runId}`);
        expect(res.status).toBe(200);
        return res.body.state === 'in progress' ? undefined : res.body;
      },
      420_000,
    );
    seconds.move = (Date.now() - started) / 1000;
    expect(ended).toMatchObject({
      state: 'succeeded',
      description: `Moved from cluster ${env.clusters[0]!.id} to cluster ${sisterFile.id}`,
    });
    expect([refused.status, refused.body.error]).toEqual([422, 'ConcurrencyError']);

    // THEN the server runs on the sister's node, its data on a volume there
    const pod = await sister.core.readNamespacedPod({ namespace, name: `pg-${instanceId}-0` });
    expect(pod.spec?.nodeName).toBe(sisterNode.name);
    expect(pod.status?.podIP).toMatch(/^10\.244\.1\./);
    // AND the backup was taken into the store, as a dump of the database
    const dumps = readdirSync(path.join(backupFolder, resourceName(instanceId)));
    expect(dumps).toEqual([expect.stringMatching(/^[0-9a-f]{20}\.dump$/)]);
    // AND the remaining binding's credentials name the sister's Service, with the same login
    const moved = (await osb('GET', `${instancePath}/service_bindings/${secondBindingId}`)).body
      .credentials as Credentials;
    const sisterService = await sister.core.readNamespacedService({ namespace, name: `pg-${instanceId}` });
    expect(moved).toEqual({
      ...second,
      host: sisterService.spec!.clusterIP,
      hostname: sisterService.spec!.clusterIP,
      uri: `postgresql://${second.username}:${second.password}@${sisterService.spec!.clusterIP}:5432/app`,
    });
    // AND an app on the sister's node reads the rows written on the master, and writes more
    appNetwork = sisterNode.netns;
    expect(await sql(moved, 'SELECT body FROM notes ORDER BY id')).toBe(
      'written by the first binding\nkept\nwritten by the second binding',
    );
    await sql(moved, "INSERT INTO notes VALUES (4, 'written on the sister')");
    // AND the unbound login did not come back with the data
    expect(await refusal({ uri: first.uri.replace(first.host, sisterService.spec!.clusterIP!) })).toMatch(
      /password authentication failed for user/,
    );
    second = moved;

    // AND the master keeps nothing of it but the backup's finished Job, which goes with the instance's
    // record: no server, no claim, no volume or its folder, no container of the server
    await eventually(
      'nothing of the instance left on the master’s node',
      async () => {
        const pods = await master.core.listNamespacedPod({ namespace });
        const sets = await master.kubeConfig
          .makeApiClient(AppsV1Api)
          .listNamespacedStatefulSet({ namespace });
        const claims = await master.core.listNamespacedPersistentVolumeClaim({ namespace });
        const left = [
          ...sets.items.map((set) => `StatefulSet ${set.metadata?.name}`),
          ...claims.items.map((claim) => `claim ${claim.metadata?.name}`),
          ...(existsSync(masterFolder) ? [`the volume's folder ${masterFolder}`] : []),
          ...pods.items
            .filter(
              (p) =>
                !(
                  p.metadata?.labels?.['job-name']?.startsWith('x-backup-') && p.status?.phase === 'Succeeded'
                ),
            )
            .map((p) => `pod ${p.metadata?.name} (${p.status?.phase})`),
          ...containersOf(namespace, env.node!.containerdAddress, `pg-${instanceId}-0`).map(
            (id) => `container ${id} of the server`,
          ),
        ];
        if (left.length > 0) throw new Error(`left: ${left.join(', ')}`);
        return true;
      },
      120_000,
    );
  }, 600_000);

  test('a deprovision leaves nothing on the sister’s node: no pod, no claim, no volume or its folder', async () => {
    const claim = await sister.core.readNamespacedPersistentVolumeClaim({
      namespace,
      name: `pg-${instanceId}-data`,
    });
    const volume = await sister.core.readPersistentVolume({ name: claim.spec!.volumeName! });
    const folder = volume.spec!.hostPath!.path;
    expect(existsSync(folder)).toBe(true);

    const accepted = await osb('DELETE', `${instancePath}?${query}&accepts_incomplete=true`);
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      240_000,
    );
    expect(done.body).toMatchObject({ state: 'succeeded' });
    await eventually(
      'the volume and its folder gone',
      async () => {
        const gone = await sister.core
          .readPersistentVolume({ name: volume.metadata!.name! })
          .then(() => false)
          .catch((err: { code?: number }) => err.code === 404);
        return gone && !existsSync(folder) ? true : undefined;
      },
      120_000,
    );
    await eventually(
      'no container of the instance left in the sister node’s containerd',
      async () => (containersOf(namespace, sisterNode.containerdAddress).length === 0 ? true : undefined),
      120_000,
    );
    expect(await refusal(second)).toBeDefined();
  }, 400_000);

  /** The containers of pods in `podNamespace` (of the pod `podName` only, when given) in a node's containerd. */
  function containersOf(podNamespace: string, containerdAddress: string, podName?: string): string[] {
    const listed = execFileSync(
      'ctr',
      [
        '--address',
        containerdAddress,
        '-n',
        'k8s.io',
        'containers',
        'ls',
        '-q',
        `labels."io.kubernetes.pod.namespace"==${podNamespace}${podName ? `,labels."io.kubernetes.pod.name"==${podName}` : ''}`,
      ],
      { encoding: 'utf8' },
    );
    return listed.split('\n').filter(Boolean);
  }
});
