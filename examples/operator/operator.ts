/**
 * An example operator that reconciles `acid.zalan.do/v1` `postgresql` resources the way Zalando's
 * postgres-operator appears from outside, so the design document's PostgreSQL plan runs end to
 * end without it: `Creating` at first, then after `readyAfterMs` a credentials Secret per user
 * (`<user>.<cluster>.credentials.postgresql.acid.zalan.do`), a Service with a cluster IP, and
 * `PostgresClusterStatus: Running`. A spec change goes through `Updating` the same way. Users
 * removed from the spec lose their Secret. Everything it creates is owned by the postgresql, so
 * the garbage collector removes it with its owner (no finalizers needed).
 *
 * For tests: `spec.teamId: fail` or the annotation `example-operator/fail: "true"` ends in
 * `CreateFailed` with a `reason`.
 *
 * Level-based: every `resyncMs` it lists the postgresqls of each cluster and converges each one.
 */
import { randomBytes } from 'node:crypto';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { ClusterClient } from '../../src/kube/clients.js';
import { isAlreadyExists, isNotFound } from '../../src/kube/errors.js';

export interface ExampleOperatorOptions {
  readonly clusters: readonly ClusterClient[];
  /** Delay from creation (or a spec change) to Running. @default 1000 */
  readonly readyAfterMs?: number;
  /** @default 250 */
  readonly resyncMs?: number;
  readonly log?: (message: string) => void;
}

interface Postgresql {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
  };
  spec?: { teamId?: string; users?: Record<string, unknown> };
  status?: { PostgresClusterStatus?: string; observedGeneration?: number; reason?: string };
}

const API = { group: 'acid.zalan.do', version: 'v1', plural: 'postgresqls' };
const secretName = (user: string, cluster: string) =>
  `${user}.${cluster}.credentials.postgresql.acid.zalan.do`;

export async function startExampleOperator(
  options: ExampleOperatorOptions,
): Promise<{ stop(): Promise<void> }> {
  const readyAfter = options.readyAfterMs ?? 1000;
  const log = options.log ?? (() => undefined);
  /** When each postgresql generation was first seen, by uid. */
  const seen = new Map<string, { generation: number; at: number }>();
  let stopped = false;

  async function setStatus(
    cluster: ClusterClient,
    pg: Postgresql,
    status: Record<string, unknown>,
  ): Promise<void> {
    await cluster.custom.patchNamespacedCustomObjectStatus(
      { ...API, namespace: pg.metadata.namespace, name: pg.metadata.name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  async function converge(cluster: ClusterClient, pg: Postgresql): Promise<void> {
    const { name, namespace, uid } = pg.metadata;
    if (pg.metadata.deletionTimestamp) return;
    const generation = pg.metadata.generation ?? 1;
    const first = seen.get(uid);
    if (!first || first.generation !== generation) seen.set(uid, { generation, at: Date.now() });
    const done = pg.status?.observedGeneration === generation;
    if (done) return;
    const since = seen.get(uid)!.at;
    if (Date.now() - since < readyAfter) {
      const pending = pg.status?.observedGeneration ? 'Updating' : 'Creating';
      if (pg.status?.PostgresClusterStatus !== pending)
        await setStatus(cluster, pg, { PostgresClusterStatus: pending });
      return;
    }
    if (pg.spec?.teamId === 'fail' || pg.metadata.annotations?.['example-operator/fail'] === 'true') {
      await setStatus(cluster, pg, {
        PostgresClusterStatus: 'CreateFailed',
        reason: 'the example operator was told to fail this cluster',
        observedGeneration: generation,
      });
      log(`postgresql ${namespace}/${name} in cluster ${cluster.id}: CreateFailed`);
      return;
    }
    const owner = {
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      name,
      uid,
      controller: true,
      blockOwnerDeletion: true,
    };
    const labels = { application: 'spilo', 'cluster-name': name, team: pg.spec?.teamId ?? '' };
    const users = Object.keys(pg.spec?.users ?? {});
    for (const user of users) {
      try {
        await cluster.core.createNamespacedSecret({
          namespace,
          body: {
            metadata: { name: secretName(user, name), namespace, labels, ownerReferences: [owner] },
            type: 'Opaque',
            stringData: {
              username: user.replace(/[^a-zA-Z0-9_]/g, '_'),
              password: randomBytes(24).toString('base64url'),
            },
          },
        });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    }
    const secrets = await cluster.core.listNamespacedSecret({
      namespace,
      labelSelector: `cluster-name=${name}`,
    });
    for (const secret of secrets.items) {
      const user = secret.metadata?.name?.split('.')[0];
      if (user && !users.includes(user)) {
        try {
          await cluster.core.deleteNamespacedSecret({ namespace, name: secret.metadata!.name! });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    }
    try {
      await cluster.core.createNamespacedService({
        namespace,
        body: {
          metadata: { name, namespace, labels, ownerReferences: [owner] },
          spec: { type: 'ClusterIP', ports: [{ name: 'postgresql', port: 5432, targetPort: 5432 }] },
        },
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    await setStatus(cluster, pg, { PostgresClusterStatus: 'Running', observedGeneration: generation });
    log(`postgresql ${namespace}/${name} in cluster ${cluster.id}: Running`);
  }

  async function resync(cluster: ClusterClient): Promise<void> {
    const list = (await cluster.custom.listClusterCustomObject(API)) as { items: Postgresql[] };
    await Promise.all(
      list.items.map((pg) =>
        converge(cluster, pg).catch((err: unknown) => {
          if (!isNotFound(err))
            log(`postgresql ${pg.metadata.namespace}/${pg.metadata.name}: ${String(err)}`);
        }),
      ),
    );
  }

  const loops = options.clusters.map(async (cluster) => {
    while (!stopped) {
      try {
        await resync(cluster);
      } catch (err) {
        log(`cluster ${cluster.id}: resync failed: ${String(err)}`);
      }
      await new Promise((r) => setTimeout(r, options.resyncMs ?? 250));
    }
  });
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
