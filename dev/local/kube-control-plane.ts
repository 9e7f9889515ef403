/**
 * A real local Kubernetes control plane, the envtest way: one etcd, a master kube-apiserver and N
 * sister kube-apiservers (each under its own --etcd-prefix), each with a kube-controller-manager so
 * that namespaces finish deleting and owner references are garbage-collected. No kubelet: pods never
 * run, and nothing here needs them, unless the master is made ready for a node
 * ({@link ControlPlaneOptions.nodeAddress}, dev/local/kube-node.ts). RBAC is on; the admin identity
 * is a token in system:masters.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import path from 'node:path';
import { MASTER_CLUSTER_ID } from '../../src/resources/types.js';
import { ensureBinaries } from './binaries.js';
import { freePort, readyOrStopped, startProcess, withFreshPorts, type ManagedProcess } from './processes.js';

/** One cluster of the local control plane. */
export interface LocalCluster {
  /** Cluster id: `1` for the master, `sister-N` for the sisters. */
  readonly id: string;
  /** https://127.0.0.1:PORT (on its node's address for a cluster with a node) */
  readonly server: string;
  /** Path of a kubeconfig file with the admin identity. */
  readonly kubeconfigPath: string;
  /** The same kubeconfig as text. */
  readonly kubeconfig: string;
}

export interface ControlPlane {
  readonly master: LocalCluster;
  readonly sisters: readonly LocalCluster[];
  /** Master first, then the sisters. */
  readonly clusters: readonly LocalCluster[];
  /** Logs, certificates and kubeconfigs live here. */
  readonly workDir: string;
  /** Where the shared etcd listens, for {@link startExtraCluster}. */
  readonly etcdUrl: string;
  /** The admin token file and the service-account keys every apiserver shares. */
  readonly pkiDir: string;
  stop(): Promise<void>;
  /** SIGKILLs etcd, as in a crash; its data directory stays. */
  killEtcd(): Promise<void>;
  /** Starts etcd again on the same ports and data; resolves once it is healthy. */
  startEtcd(): Promise<void>;
}

/** The credentials every apiserver of the control plane shares, as files. */
interface SharedPki {
  readonly tokenFile: string;
  readonly saKey: string;
  readonly saPub: string;
}

const sharedPki = (pkiDir: string): SharedPki => ({
  tokenFile: path.join(pkiDir, 'tokens.csv'),
  saKey: path.join(pkiDir, 'sa.key'),
  saPub: path.join(pkiDir, 'sa.pub'),
});

/** The controllers every cluster runs: namespace deletion, garbage collection of what the records own. */
const CONTROLLERS = ['namespace-controller', 'garbage-collector-controller'];

/**
 * The controllers a master with a node runs besides: workloads make pods, Services get endpoints,
 * every namespace gets its `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap that pods'
 * service-account volumes mount, the kubelet's `not-ready` taint goes once the node is Ready, the
 * aggregated ClusterRoles (`view`, `edit`, `admin`) get their rules, and claims get volumes: a
 * StorageClass whose provisioner is `kubernetes.io/host-path` provisions folders of this machine
 * under /tmp/hostpath_pv and removes them with their claims (`--enable-hostpath-provisioner`, the
 * single-node provisioner Kubernetes keeps for development).
 */
const NODE_CONTROLLERS = [
  'node-lifecycle-controller',
  'clusterrole-aggregation-controller',
  'deployment-controller',
  'replicaset-controller',
  'statefulset-controller',
  'daemonset-controller',
  'job-controller',
  'endpoints-controller',
  'endpointslice-controller',
  'endpointslice-mirroring-controller',
  'serviceaccount-controller',
  'root-ca-certificate-publisher-controller',
  'persistentvolume-binder-controller',
  'persistentvolume-protection-controller',
  'persistentvolumeclaim-protection-controller',
];

/** Starts the controllers a cluster needs for what we do, against its apiserver. */
function startControllers(options: {
  readonly id: string;
  readonly kubeconfigPath: string;
  readonly dir: string;
  readonly saKey: string;
  readonly kubeControllerManager: string;
  /** The apiserver's CA, published to every namespace: given for a master with a node. */
  readonly rootCaFile?: string;
}): ManagedProcess {
  return startProcess({
    name: `kube-controller-manager (cluster ${options.id})`,
    command: options.kubeControllerManager,
    args: [
      `--kubeconfig=${options.kubeconfigPath}`,
      `--controllers=${[...CONTROLLERS, ...(options.rootCaFile ? NODE_CONTROLLERS : [])].join(',')}`,
      ...(options.rootCaFile
        ? [`--root-ca-file=${options.rootCaFile}`, '--enable-hostpath-provisioner=true']
        : []),
      '--leader-elect=false',
      '--secure-port=0',
      `--service-account-private-key-file=${options.saKey}`,
      '--v=0',
    ],
    logFile: path.join(options.dir, 'kube-controller-manager.log'),
  });
}

/**
 * The Service IP range of every local cluster: kubeadm's default network with room for 65,534 Services
 * (a /24 fills at 253, and every instance of the example plans has a Service of its own).
 */
export const SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/16';

/** Starts one kube-apiserver on the shared etcd, under its own prefix; resolves once it is ready. */
async function startApiserver(options: {
  readonly id: string;
  readonly port: number;
  readonly dir: string;
  readonly etcdUrl: string;
  readonly pki: SharedPki;
  readonly kubeApiserver: string;
  readonly timeoutMs: number;
  /** For a cluster with a node: the address its node reaches it at (see ControlPlaneOptions). */
  readonly nodeAddress?: string;
}): Promise<ManagedProcess> {
  const { id, port, dir, pki } = options;
  const address = options.nodeAddress ?? '127.0.0.1';
  const server = `https://${address}:${port}`;
  const token = readFileSync(pki.tokenFile, 'utf8').split(',')[0] ?? '';
  const apiserver = startProcess({
    name: `kube-apiserver (cluster ${id})`,
    command: options.kubeApiserver,
    args: [
      `--etcd-servers=${options.etcdUrl}`,
      `--etcd-prefix=/clusters/${id}`,
      `--secure-port=${port}`,
      // Its own certificate names both addresses (and the `kubernetes` Service's).
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      `--cert-dir=${path.join(dir, 'certs')}`,
      `--token-auth-file=${pki.tokenFile}`,
      '--authorization-mode=RBAC',
      `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
      '--allow-privileged=true',
      // Pods get service-account tokens only where they run.
      ...(options.nodeAddress ? [] : ['--disable-admission-plugins=ServiceAccount']),
      // The node's name resolves nowhere: the apiserver reaches its kubelet by its address.
      ...(options.nodeAddress ? ['--kubelet-preferred-address-types=InternalIP'] : []),
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${pki.saPub}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      '--v=0',
    ],
    logFile: path.join(dir, 'kube-apiserver.log'),
  });
  await readyOrStopped(
    apiserver,
    async () => (await httpGet(`${server}/readyz`, token)) === 200,
    options.timeoutMs,
  );
  // A cluster first started with a smaller range keeps it as its default ServiceCIDR: the range is
  // added as a ServiceCIDR of its own (overlapping the default is allowed), so every cluster has it.
  const added = await httpRequest('POST', `${server}/apis/networking.k8s.io/v1/servicecidrs`, token, {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    metadata: { name: 'local-services' },
    spec: { cidrs: [SERVICE_CLUSTER_IP_RANGE] },
  });
  if (added !== 201 && added !== 409) {
    await apiserver.stop();
    throw new Error(
      `kube-apiserver (cluster ${id}) refused the ServiceCIDR ${SERVICE_CLUSTER_IP_RANGE}: HTTP ${added}`,
    );
  }
  return apiserver;
}

/**
 * A cluster of one test's own: a kube-apiserver on the run's etcd under its own prefix, with its
 * controller manager, which the test may stop and start again (on the same address, with the same
 * certificate) without disturbing the shared servers.
 */
export interface ExtraCluster {
  readonly cluster: LocalCluster;
  /** Whether its apiserver is running. */
  readonly running: boolean;
  /** Stops its apiserver and controller manager; what it stored stays in etcd. */
  stop(): Promise<void>;
  /** Starts them again; resolves once the apiserver is ready. */
  start(): Promise<void>;
}

export interface ExtraClusterOptions {
  /** Cluster id; also its etcd prefix, so unique in the run. */
  readonly id: string;
  /** The control plane's etcd and shared credentials ({@link ControlPlane.etcdUrl}, `pkiDir`). */
  readonly etcdUrl: string;
  readonly pkiDir: string;
  /** Folder for its certificates, log and kubeconfig. */
  readonly workDir: string;
  /** @default 90000 */
  readonly startTimeoutMs?: number;
  /** As {@link ControlPlaneOptions.beforeControllers}, at its first start. */
  readonly beforeControllers?: (cluster: LocalCluster) => Promise<void>;
}

/** Starts a cluster of its own for one test: see {@link ExtraCluster}. */
export async function startExtraCluster(options: ExtraClusterOptions): Promise<ExtraCluster> {
  const bins = ensureBinaries(['kube']);
  const dir = path.resolve(options.workDir, `cluster-${options.id}`);
  mkdirSync(dir, { recursive: true });
  const pki = sharedPki(options.pkiDir);
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const start = (port: number) =>
    startApiserver({
      id: options.id,
      port,
      dir,
      etcdUrl: options.etcdUrl,
      pki,
      kubeApiserver: bins.kubeApiserver,
      timeoutMs,
    });
  const { port, apiserver: first } = await withFreshPorts(async () => {
    const port = await freePort();
    return { port, apiserver: await start(port) };
  });
  let apiserver: ManagedProcess | undefined = first;
  const server = `https://127.0.0.1:${port}`;
  const token = readFileSync(pki.tokenFile, 'utf8').split(',')[0] ?? '';
  const kubeconfigPath = path.join(dir, `${options.id}.kubeconfig`);
  const kubeconfig = kubeconfigText(options.id, server, path.join(dir, 'certs', 'apiserver.crt'), token);
  writeFileSync(kubeconfigPath, kubeconfig, { mode: 0o600 });
  const cluster: LocalCluster = { id: options.id, server, kubeconfigPath, kubeconfig };
  await options.beforeControllers?.(cluster);
  const controllers = () =>
    startControllers({
      id: options.id,
      kubeconfigPath,
      dir,
      saKey: pki.saKey,
      kubeControllerManager: bins.kubeControllerManager,
    });
  let controllerManager: ManagedProcess | undefined = controllers();
  return {
    cluster,
    get running() {
      return apiserver !== undefined;
    },
    async stop() {
      const stopping = [controllerManager, apiserver];
      apiserver = undefined;
      controllerManager = undefined;
      for (const proc of stopping) await proc?.stop();
    },
    async start() {
      if (apiserver) return;
      apiserver = await start(port);
      controllerManager = controllers();
    },
  };
}

export interface ControlPlaneOptions {
  /** Folder for data, logs and kubeconfigs; created if missing. */
  readonly workDir: string;
  /** How many sister clusters. @default 2 */
  readonly sisters?: number;
  /** Readiness time limit per server. @default 90000 */
  readonly startTimeoutMs?: number;
  /**
   * Makes the master ready for a node (dev/local/kube-node.ts): its apiserver listens and advertises
   * on this address (the node bridge's host side, which must exist; pods reach it through the
   * `kubernetes` Service) instead of 127.0.0.1, admits ServiceAccounts, and its controller manager
   * runs the workload, endpoint and service-account controllers too. The sisters stay as they are.
   * @default unset: the master on 127.0.0.1, for the API only
   */
  readonly nodeAddress?: string;
  /**
   * Sisters made ready for a node of their own, by cluster id: each listens and advertises on its
   * address (where its node's network namespace reaches the host: createSisterNodeNetwork in
   * dev/local/kube-node.ts) and runs the controllers of a master with a node.
   * @default none
   */
  readonly sisterNodeAddresses?: Readonly<Record<string, string>>;
  /**
   * Runs once a cluster's apiserver is ready, before its controller manager starts: CRDs installed
   * here are known to the garbage collector at once, which otherwise finds new kinds only at its
   * discovery resync (30 s), so that deletions waiting on it wait that long on a fresh cluster.
   */
  readonly beforeControllers?: (cluster: LocalCluster) => Promise<void>;
}

function httpGet(url: string, token?: string): Promise<number> {
  return httpRequest('GET', url, token);
}

function httpRequest(method: string, url: string, token?: string, body?: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = url.startsWith('https:') ? https.request : http.request;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      url,
      {
        method,
        headers: {
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
          ...(payload ? { 'Content-Type': 'application/json' } : {}),
        },
        rejectUnauthorized: false,
        timeout: 3000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(payload);
  });
}

function kubeconfigText(id: string, server: string, caFile: string, token: string): string {
  const ca = existsSync(caFile) ? readFileSync(caFile).toString('base64') : undefined;
  const cluster = ca
    ? `    certificate-authority-data: ${ca}\n    server: ${server}`
    : `    insecure-skip-tls-verify: true\n    server: ${server}`;
  return `apiVersion: v1
kind: Config
clusters:
- name: "${id}"
  cluster:
${cluster}
users:
- name: admin
  user:
    token: ${token}
contexts:
- name: "${id}"
  context:
    cluster: "${id}"
    user: admin
current-context: "${id}"
`;
}

/** Starts etcd, the apiservers and their controller managers; resolves once every apiserver is ready. */
export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const bins = ensureBinaries(['etcd', 'kube']);
  const workDir = path.resolve(options.workDir);
  const timeout = options.startTimeoutMs ?? 90_000;
  mkdirSync(workDir, { recursive: true });
  const processes: ManagedProcess[] = [];
  const stop = async () => {
    // Controllers and apiservers first, etcd last.
    for (const proc of [...processes].reverse()) await proc.stop();
  };

  try {
    // ---- etcd
    const startEtcd = (etcdPort: number, peerPort: number) => {
      const etcdUrl = `http://127.0.0.1:${etcdPort}`;
      const etcd = startProcess({
        name: 'etcd',
        command: bins.etcd,
        args: [
          `--data-dir=${path.join(workDir, 'etcd-data')}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
          '--unsafe-no-fsync=true',
          '--log-level=warn',
          '--quota-backend-bytes=4294967296',
        ],
        logFile: path.join(workDir, 'etcd.log'),
      });
      return { etcd, etcdUrl };
    };
    const etcdReady = (etcd: ManagedProcess, etcdUrl: string) =>
      readyOrStopped(etcd, async () => (await httpGet(`${etcdUrl}/health`)) === 200, timeout);
    const {
      etcd: firstEtcd,
      etcdUrl,
      etcdPorts,
    } = await withFreshPorts(async () => {
      const etcdPorts = [await freePort(), await freePort()] as const;
      const started = startEtcd(...etcdPorts);
      await etcdReady(started.etcd, started.etcdUrl);
      return { ...started, etcdPorts };
    });
    let etcd: ManagedProcess | undefined = firstEtcd;
    processes.push({
      name: 'etcd',
      get logFile() {
        return firstEtcd.logFile;
      },
      get pid() {
        return etcd?.pid;
      },
      get exited() {
        return etcd?.exited ?? Promise.resolve(null);
      },
      stop: async () => etcd?.stop(),
      kill: async () => etcd?.kill(),
      tail: (lines?: number) => firstEtcd.tail(lines),
    });
    const killEtcd = async () => {
      const running = etcd;
      etcd = undefined;
      await running?.kill();
    };
    const restartEtcd = async () => {
      if (etcd) return;
      const started = startEtcd(...etcdPorts);
      await etcdReady(started.etcd, started.etcdUrl);
      etcd = started.etcd;
    };

    // ---- shared credentials: the service-account signing key and the admin token
    const pkiDir = path.join(workDir, 'pki');
    mkdirSync(pkiDir, { recursive: true });
    const { saKey, saPub, tokenFile } = sharedPki(pkiDir);
    if (!existsSync(saKey)) {
      const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
      writeFileSync(saKey, pair.privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
      writeFileSync(saPub, pair.publicKey.export({ type: 'spki', format: 'pem' }));
      writeFileSync(tokenFile, `${randomBytes(24).toString('hex')},admin,admin-uid,"system:masters"\n`, {
        mode: 0o600,
      });
    }
    const token = readFileSync(tokenFile, 'utf8').split(',')[0] ?? '';

    // ---- apiservers and controller managers, started side by side
    const ids = [
      MASTER_CLUSTER_ID,
      ...Array.from({ length: options.sisters ?? 2 }, (_, i) => `sister-${i + 1}`),
    ];
    const clusters = await Promise.all(
      ids.map(async (id): Promise<LocalCluster> => {
        const dir = path.join(workDir, `cluster-${id}`);
        mkdirSync(dir, { recursive: true });
        const nodeAddress =
          id === MASTER_CLUSTER_ID ? options.nodeAddress : options.sisterNodeAddresses?.[id];
        const { server, apiserver } = await withFreshPorts(async () => {
          const port = await freePort();
          const apiserver = await startApiserver({
            id,
            port,
            dir,
            etcdUrl,
            pki: { tokenFile, saKey, saPub },
            kubeApiserver: bins.kubeApiserver,
            timeoutMs: timeout,
            nodeAddress,
          });
          return { server: `https://${nodeAddress ?? '127.0.0.1'}:${port}`, apiserver };
        });
        processes.push(apiserver);
        const kubeconfigPath = path.join(workDir, `${id}.kubeconfig`);
        const kubeconfig = kubeconfigText(id, server, path.join(dir, 'certs', 'apiserver.crt'), token);
        writeFileSync(kubeconfigPath, kubeconfig, { mode: 0o600 });
        await options.beforeControllers?.({ id, server, kubeconfigPath, kubeconfig });

        processes.push(
          startControllers({
            id,
            kubeconfigPath,
            dir,
            saKey,
            kubeControllerManager: bins.kubeControllerManager,
            ...(nodeAddress ? { rootCaFile: path.join(dir, 'certs', 'apiserver.crt') } : {}),
          }),
        );
        return { id, server, kubeconfigPath, kubeconfig };
      }),
    );
    const [master, ...sisters] = clusters;
    if (!master) throw new Error('no master cluster');
    return { master, sisters, clusters, workDir, etcdUrl, pkiDir, stop, killEtcd, startEtcd: restartEtcd };
  } catch (err) {
    await stop();
    throw err;
  }
}
