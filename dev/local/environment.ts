/**
 * The whole local environment, as the tests and the dev stack use it: a Temporal dev server (or,
 * with INTEROP_TEMPORAL=server, the production Temporal server on PostgreSQL) and a master plus
 * sister Kubernetes clusters with our CRDs installed and the sisters registered as SFClusters.
 * Environment variables point it at existing servers instead (ExistingServers in dev/settings.ts).
 */
import { readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { clusterClientFromFile, type ClusterClient } from '../../src/kube/clients.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { MASTER_CLUSTER_ID } from '../../src/resources/types.js';
import { existingServers, temporalKind, type ExistingServers, type TemporalKind } from '../settings.js';
import { startControlPlane, type ControlPlane } from './kube-control-plane.js';
import { repoRoot } from './paths.js';
import { startPostgres, type PostgresCluster } from './postgresql.js';
import { startTemporalDevServer } from './temporal-dev-server.js';
import { startTemporalServer } from './temporal-server.js';

export interface LocalEnvironmentOptions {
  readonly workDir: string;
  /** @default 2 */
  readonly sisters?: number;
  /** Web UI port of the Temporal dev server; headless when unset. */
  readonly temporalUiPort?: number;
  /**
   * The codec endpoint its Web UI decodes payloads with: the broker's, started later on this port
   * of 127.0.0.1 with this token (INTEROP_CODEC_PORT, INTEROP_CODEC_TOKEN).
   */
  readonly temporalUiCodec?: UiCodec;
  /** gRPC port of the Temporal dev server. @default a free port */
  readonly temporalPort?: number;
  /** SQLite file of the Temporal dev server; in memory when unset. */
  readonly temporalDbFile?: string;
  /** Namespace of the broker's own records (SFClusters, their Secrets) in the master. @default 'interoperator' */
  readonly namespace?: string;
  /** Which Temporal to start. @default INTEROP_TEMPORAL (dev/settings.ts) */
  readonly temporalKind?: TemporalKind;
  /**
   * The master made ready for a node, on this address of the node's bridge (ControlPlaneOptions in
   * dev/local/kube-control-plane.ts), and the Temporal dev server reached there too (it then
   * listens on every interface), so that pods reach both. @default unset
   */
  readonly nodeAddress?: string;
  /** Sisters made ready for a node of their own, by cluster id (ControlPlaneOptions). @default none */
  readonly sisterNodeAddresses?: Readonly<Record<string, string>>;
  /**
   * Whether the master gets the chart's CRDs (charts/interoperator/crds) and the clusters'
   * registrations; false leaves them to `helm install` of the chart (the example operator's CRDs
   * are installed either way). @default true
   */
  readonly chartCrdsOnMaster?: boolean;
}

/** Where the broker's codec endpoint will be, for the Temporal Web UI. */
export interface UiCodec {
  readonly port: number;
  readonly token: string;
}

/**
 * The URL the Web UI is given: the token in its path, since the dev server's UI sends no
 * credentials of its own (src/temporal/codec-server.ts).
 */
export const uiCodecEndpoint = (codec: UiCodec): string =>
  `http://127.0.0.1:${codec.port}/token/${codec.token}`;

/** What a test or the dev stack needs to reach the environment; serialisable. */
export interface EnvironmentInfo {
  readonly temporal: {
    readonly address: string;
    readonly namespace: string;
    /** The Temporal started: the dev server or the production server; absent for an existing one. */
    readonly kind?: TemporalKind;
    /**
     * The PostgreSQL cluster under the production server, for a test's own extra Temporal server
     * on databases of its own.
     */
    readonly postgres?: {
      readonly host: string;
      readonly port: number;
      readonly user: string;
      readonly socketDir: string;
    };
    readonly uiUrl?: string;
    /** The codec endpoint the Web UI is pointed at, for the broker to serve. */
    readonly uiCodec?: UiCodec;
  };
  readonly clusters: readonly { readonly id: string; readonly kubeconfigPath: string }[];
  readonly namespace: string;
  readonly workDir: string;
  /**
   * The local control plane's etcd and shared credentials, for a test's own extra cluster
   * (startExtraCluster); absent when the environment uses existing servers.
   */
  readonly kube?: { readonly etcdUrl: string; readonly pkiDir: string };
}

export interface LocalEnvironment {
  readonly info: EnvironmentInfo;
  readonly master: ClusterClient;
  readonly clusters: readonly ClusterClient[];
  stop(): Promise<void>;
}

/** Where the chart's CRDs are. */
const CHART_CRDS = path.join(repoRoot(), 'charts', 'interoperator', 'crds');

/** The CRD files the environment installs: ours and the example operator's. */
export function crdFiles(): string[] {
  const root = repoRoot();
  return [CHART_CRDS, path.join(root, 'examples', 'operator', 'crds')]
    .filter((dir) => existsSync(dir))
    .flatMap((dir) =>
      readdirSync(dir)
        .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
        .sort()
        .map((f) => path.join(dir, f)),
    );
}

export async function startLocalEnvironment(options: LocalEnvironmentOptions): Promise<LocalEnvironment> {
  const namespace = options.namespace ?? 'interoperator';
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s();
  };
  try {
    const existing = existingServers();
    const { masterKubeconfig, temporalAddress } = existing;

    const kind = options.temporalKind ?? temporalKind();
    let postgres: PostgresCluster | undefined;
    const startProductionTemporal = async () => {
      postgres = await startPostgres({ workDir: path.join(options.workDir, 'postgresql') });
      stops.push(() => postgres!.stop());
      return startTemporalServer({ workDir: path.join(options.workDir, 'temporal-server'), postgres });
    };
    const crds = readCrds(crdFiles());
    const chartCrdsOnMaster = options.chartCrdsOnMaster ?? true;
    const operatorCrds = readCrds(crdFiles().filter((file) => !file.startsWith(CHART_CRDS)));
    const crdsOf = (clusterIndex: number) => (clusterIndex > 0 || chartCrdsOnMaster ? crds : operatorCrds);
    const [controlPlane, temporal] = await Promise.all([
      masterKubeconfig
        ? Promise.resolve(undefined)
        : startControlPlane({
            workDir: path.join(options.workDir, 'kube'),
            sisters: options.sisters ?? 2,
            ...(options.nodeAddress ? { nodeAddress: options.nodeAddress } : {}),
            ...(options.sisterNodeAddresses ? { sisterNodeAddresses: options.sisterNodeAddresses } : {}),
            // Before the controller managers start, so that their garbage collectors know our kinds.
            beforeControllers: (cluster) =>
              installCrds(
                clusterClientFromFile(cluster.id, cluster.kubeconfigPath),
                crdsOf(cluster.id === MASTER_CLUSTER_ID ? 0 : 1),
              ),
          }),
      temporalAddress
        ? Promise.resolve(undefined)
        : kind === 'server'
          ? startProductionTemporal()
          : startTemporalDevServer({
              workDir: path.join(options.workDir, 'temporal'),
              port: options.temporalPort,
              ...(options.nodeAddress ? { advertisedHost: options.nodeAddress } : {}),
              uiPort: options.temporalUiPort,
              ...(options.temporalUiCodec
                ? { uiCodecEndpoint: uiCodecEndpoint(options.temporalUiCodec) }
                : {}),
              dbFile: options.temporalDbFile,
            }),
    ]);
    if (controlPlane) stops.push(() => controlPlane.stop());
    if (temporal) stops.push(() => temporal.stop());

    const clusterFiles = clusterKubeconfigs(controlPlane, existing);
    const clusters = clusterFiles.map((c) => clusterClientFromFile(c.id, c.kubeconfigPath));
    // Servers started elsewhere get them now.
    if (!controlPlane) await Promise.all(clusters.map((cluster, i) => installCrds(cluster, crdsOf(i))));
    const master = clusters[0]!;
    if (chartCrdsOnMaster)
      for (const c of clusterFiles) await registerCluster(master, namespace, c.id, c.kubeconfigPath);

    const info: EnvironmentInfo = {
      temporal: temporal
        ? {
            address: temporal.address,
            namespace: temporal.namespace,
            kind,
            ...('uiUrl' in temporal && temporal.uiUrl
              ? {
                  uiUrl: temporal.uiUrl,
                  ...(options.temporalUiCodec ? { uiCodec: options.temporalUiCodec } : {}),
                }
              : {}),
            ...(postgres
              ? {
                  postgres: {
                    host: postgres.host,
                    port: postgres.port,
                    user: postgres.user,
                    socketDir: postgres.socketDir,
                  },
                }
              : {}),
          }
        : { address: temporalAddress!, namespace: existing.temporalNamespace },
      clusters: clusterFiles,
      namespace,
      workDir: options.workDir,
      ...(controlPlane ? { kube: { etcdUrl: controlPlane.etcdUrl, pkiDir: controlPlane.pkiDir } } : {}),
    };
    return { info, master, clusters, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function clusterKubeconfigs(
  controlPlane: ControlPlane | undefined,
  existing: ExistingServers,
): { id: string; kubeconfigPath: string }[] {
  if (controlPlane) return controlPlane.clusters.map((c) => ({ id: c.id, kubeconfigPath: c.kubeconfigPath }));
  return [
    { id: MASTER_CLUSTER_ID, kubeconfigPath: existing.masterKubeconfig! },
    ...existing.sisterKubeconfigs.map((file, i) => ({ id: `sister-${i + 1}`, kubeconfigPath: file })),
  ];
}
