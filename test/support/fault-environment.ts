/**
 * Servers of a fault test's own, which it may kill and start again without disturbing the shared
 * servers of the integration run: a Temporal dev server on a SQLite file (history survives its
 * restart), one etcd (its data survives its restart), the master apiserver and a sister apiserver that can be stopped and started
 * on the same address, with our CRDs installed and both clusters registered.
 *
 * Once started, `environment()` and everything built on it (test/support/env.ts, system.ts) points
 * at these servers: the file it reads is this environment's.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crdFiles, type EnvironmentInfo } from '../../dev/local/environment.js';
import {
  startControlPlane,
  startExtraCluster,
  type ExtraCluster,
} from '../../dev/local/kube-control-plane.js';
import { freePort } from '../../dev/local/processes.js';
import { startTemporalDevServer, type TemporalDevServer } from '../../dev/local/temporal-dev-server.js';
import { clusterClientFromFile, type ClusterClient } from '../../src/kube/clients.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { patchRecordStatus } from '../../src/kube/custom-objects.js';
import { SFCLUSTER } from '../../src/resources/types.js';

/** The id of the sister cluster, the one whose apiserver a test may restart. */
export const SISTER_ID = 'sister-1';

export interface FaultEnvironment {
  readonly info: EnvironmentInfo;
  /** Admin clients, master first. */
  readonly clusters: readonly ClusterClient[];
  /** SIGKILLs the Temporal dev server; its SQLite file stays. */
  killTemporal(): Promise<void>;
  /** Starts the Temporal dev server again on the same port and file; resolves once it serves. */
  startTemporal(): Promise<void>;
  /** Stops the sister's apiserver (what it stored stays in etcd). */
  stopSister(): Promise<void>;
  /** Starts the sister's apiserver again on the same address. */
  startSister(): Promise<void>;
  /** SIGKILLs etcd, under every apiserver; its data stays. */
  killEtcd(): Promise<void>;
  /** Starts etcd again on the same ports and data. */
  startEtcd(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the servers and points `environment()` at them (process.env.INTEROP_TEST_ENV of this test
 * file; jest gives each file its own copy of the environment variables).
 */
export async function startFaultEnvironment(name: string): Promise<FaultEnvironment> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), `interop-fault-${name}-`));
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const temporalPort = await freePort();
    const dbFile = path.join(workDir, 'temporal.sqlite');
    const startTemporal = () =>
      startTemporalDevServer({ workDir: path.join(workDir, 'temporal'), port: temporalPort, dbFile });
    const [controlPlane, firstTemporal] = await Promise.all([
      startControlPlane({ workDir: path.join(workDir, 'kube'), sisters: 0 }),
      startTemporal(),
    ]);
    let temporal: TemporalDevServer | undefined = firstTemporal;
    stops.push(() => controlPlane.stop());
    stops.push(async () => temporal?.stop());
    const sister: ExtraCluster = await startExtraCluster({
      id: SISTER_ID,
      etcdUrl: controlPlane.etcdUrl,
      pkiDir: controlPlane.pkiDir,
      workDir: path.join(workDir, 'kube'),
    });
    stops.push(() => sister.stop());

    const files = [
      { id: controlPlane.master.id, kubeconfigPath: controlPlane.master.kubeconfigPath },
      { id: SISTER_ID, kubeconfigPath: sister.cluster.kubeconfigPath },
    ];
    const clusters = files.map((c) => clusterClientFromFile(c.id, c.kubeconfigPath));
    const crds = readCrds(crdFiles());
    await Promise.all(clusters.map((cluster) => installCrds(cluster, crds)));
    const namespace = 'interoperator';
    // Nothing probes the clusters (system.ts turns the health workflow off): they are written
    // running, as the health workflow would, so that the schedulers place instances on both.
    for (const c of files) {
      await registerCluster(clusters[0]!, namespace, c.id, c.kubeconfigPath);
      await patchRecordStatus(clusters[0]!, SFCLUSTER, namespace, c.id, { phase: 'running' });
    }

    const info: EnvironmentInfo = {
      temporal: { address: firstTemporal.address, namespace: firstTemporal.namespace },
      clusters: files,
      namespace,
      workDir,
      kube: { etcdUrl: controlPlane.etcdUrl, pkiDir: controlPlane.pkiDir },
    };
    const file = path.join(workDir, 'environment.json');
    writeFileSync(file, JSON.stringify(info, null, 2));
    process.env.INTEROP_TEST_ENV = file;
    return {
      info,
      clusters,
      killTemporal: async () => {
        const running = temporal;
        temporal = undefined;
        await running?.kill();
      },
      startTemporal: async () => {
        if (!temporal) temporal = await startTemporal();
      },
      stopSister: () => sister.stop(),
      startSister: () => sister.start(),
      killEtcd: () => controlPlane.killEtcd(),
      startEtcd: () => controlPlane.startEtcd(),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
