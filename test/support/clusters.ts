/**
 * Clusters of one test's own, for tests that stop an apiserver or change its credentials without
 * disturbing the shared servers: an extra apiserver on the run's etcd, with our CRDs or without, and
 * identities (service-account tokens bound to a cluster role) issued and revoked on demand.
 */
import { RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { crdFiles } from '../../dev/local/environment.js';
import { startExtraCluster, type ExtraCluster } from '../../dev/local/kube-control-plane.js';
import { clusterClientFromKubeconfig, type ClusterClient } from '../../src/kube/clients.js';
import { installCrds, readCrds } from '../../src/kube/crds.js';
import { isNotFound } from '../../src/kube/errors.js';
import { deleteRecord, listRecords, patchRecord } from '../../src/kube/custom-objects.js';
import { dropBoxNamespace } from '../../src/resources/names.js';
import { SFCLUSTER, type SFCluster } from '../../src/resources/types.js';
import { clusterHealthWorkflowId } from '../../src/workflows/messages.js';
import { environment, temporalClient } from './env.js';

/**
 * An extra cluster with our CRDs installed (none with `crds: false`, as a cluster to onboard is),
 * and the admin's clients of it.
 */
export async function startOwnCluster(
  id: string,
  options: { readonly crds?: boolean } = {},
): Promise<{ extra: ExtraCluster; admin: ClusterClient }> {
  const env = environment();
  if (!env.kube) throw new Error('the environment uses existing servers: no etcd to start a cluster on');
  const extra = await startExtraCluster({
    id,
    etcdUrl: env.kube.etcdUrl,
    pkiDir: env.kube.pkiDir,
    workDir: env.workDir,
  });
  try {
    const admin = clusterClientFromKubeconfig(id, extra.cluster.kubeconfig);
    if (options.crds ?? true) await installCrds(admin, readCrds(crdFiles()));
    return { extra, admin };
  } catch (err) {
    await extra.stop();
    throw err;
  }
}

/** An identity issued for a cluster: a kubeconfig with its token, until revoked. */
export interface Identity {
  readonly name: string;
  readonly kubeconfig: string;
  /** Deletes its ServiceAccount (the apiserver refuses its token from then on) and its binding. */
  revoke(): Promise<void>;
}

const IDENTITY_NAMESPACE = 'kube-system';

/** Replaces the token of the kubeconfig's user. */
function withToken(kubeconfig: string, token: string): string {
  const replaced = kubeconfig.replace(/^(\s+token:\s*).*$/m, `$1${token}`);
  if (replaced === kubeconfig) throw new Error('the kubeconfig has no token to replace');
  return replaced;
}

/**
 * Issues a new identity for the cluster: a ServiceAccount bound to `clusterRole` (cluster-admin
 * unless told) and a token for it (a TokenRequest), in a kubeconfig like `adminKubeconfig` with
 * that token instead.
 */
export async function issueIdentity(
  admin: ClusterClient,
  adminKubeconfig: string,
  name: string,
  clusterRole = 'cluster-admin',
): Promise<Identity> {
  await admin.core.createNamespacedServiceAccount({
    namespace: IDENTITY_NAMESPACE,
    body: { metadata: { name } },
  });
  const rbac = admin.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [{ kind: 'ServiceAccount', name, namespace: IDENTITY_NAMESPACE }],
    },
  });
  const request = await admin.core.createNamespacedServiceAccountToken({
    name,
    namespace: IDENTITY_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token issued for ${name}`);
  return {
    name,
    kubeconfig: withToken(adminKubeconfig, token),
    revoke: async () => {
      for (const remove of [
        () => admin.core.deleteNamespacedServiceAccount({ name, namespace: IDENTITY_NAMESPACE }),
        () => rbac.deleteClusterRoleBinding({ name }),
      ]) {
        try {
          await remove();
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    },
  };
}

/** What an identity may do in one namespace: the rules of a Role there. */
export interface NamespaceGrant {
  readonly namespace: string;
  readonly rules: V1PolicyRule[];
}

/**
 * Issues an identity that may do only what `grants` say, each in its namespace (a Role and a
 * RoleBinding there): a ServiceAccount and a token for it, in a kubeconfig like `adminKubeconfig`.
 */
export async function issueNamespacedIdentity(
  admin: ClusterClient,
  adminKubeconfig: string,
  name: string,
  grants: readonly NamespaceGrant[],
): Promise<Identity> {
  await admin.core.createNamespacedServiceAccount({
    namespace: IDENTITY_NAMESPACE,
    body: { metadata: { name } },
  });
  const rbac = admin.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  for (const { namespace, rules } of grants) {
    await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace: IDENTITY_NAMESPACE }],
      },
    });
  }
  const request = await admin.core.createNamespacedServiceAccountToken({
    name,
    namespace: IDENTITY_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token issued for ${name}`);
  return {
    name,
    kubeconfig: withToken(adminKubeconfig, token),
    revoke: async () => {
      const removals = [
        () => admin.core.deleteNamespacedServiceAccount({ name, namespace: IDENTITY_NAMESPACE }),
        ...grants.flatMap(({ namespace }) => [
          () => rbac.deleteNamespacedRoleBinding({ name, namespace }),
          () => rbac.deleteNamespacedRole({ name, namespace }),
        ]),
      ];
      for (const remove of removals) {
        try {
          await remove();
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    },
  };
}

/**
 * The identity on the master the chart gives the worker of a cluster with a worker of its own
 * (charts/interoperator/templates/cluster-worker-master-rbac.yaml): the catalog and its own
 * SFCluster in the registry's namespace, Secrets in its drop box.
 */
export function clusterWorkerGrants(registry: string, clusterId: string): NamespaceGrant[] {
  const group = 'osb.servicefabrik.io';
  return [
    {
      namespace: registry,
      rules: [
        { apiGroups: [group], resources: ['sfservices', 'sfplans'], verbs: ['get', 'list', 'watch'] },
        {
          apiGroups: ['resource.servicefabrik.io'],
          resources: ['sfclusters', 'sfclusters/status'],
          resourceNames: [clusterId],
          verbs: ['get', 'patch', 'update'],
        },
      ],
    },
    {
      namespace: dropBoxNamespace(registry, clusterId),
      rules: [
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'patch', 'update', 'delete'] },
      ],
    },
  ];
}

/** Ends the cluster health workflow of a test's own registry, so that it probes nothing after the test. */
export async function stopClusterHealth(registry: string): Promise<void> {
  const temporal = await temporalClient();
  try {
    await temporal.client.workflow
      .getHandle(clusterHealthWorkflowId(registry))
      .terminate('test over')
      .catch(() => undefined);
  } finally {
    await temporal.close();
  }
}

/**
 * Removes a test's own registry from the master: its SFClusters (their finalizer, which only the
 * health round would remove, dropped first) and its namespace.
 */
export async function removeRegistry(master: ClusterClient, registry: string): Promise<void> {
  for (const cluster of await listRecords<SFCluster>(master, SFCLUSTER, registry).catch(() => [])) {
    await patchRecord(master, SFCLUSTER, registry, cluster.metadata.name!, {
      metadata: { finalizers: null },
    });
    await deleteRecord(master, SFCLUSTER, registry, cluster.metadata.name!).catch(() => undefined);
  }
  await master.core.deleteNamespace({ name: registry }).catch(() => undefined);
}

/** The steps the latest run of a workflow scheduled as queued tasks, with their task queues. */
export async function scheduledSteps(workflowId: string): Promise<{ step: string; taskQueue: string }[]> {
  const temporal = await temporalClient();
  try {
    const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes)
      .filter((a): a is NonNullable<typeof a> => !!a)
      .map((a) => ({ step: a.activityType?.name ?? '', taskQueue: a.taskQueue?.name ?? '' }));
  } finally {
    await temporal.close();
  }
}
