/** The cluster directory over a fake master: it follows the registry and the kubeconfig Secrets. */
import type { ClusterClient } from '../../../src/kube/clients.js';
import { clusterDirectory } from '../../../src/kube/cluster-directory.js';

const kubeconfig = (server: string) => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${server}" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
current-context: c
`;

/** A master that holds SFClusters (by id) and Secrets (by name), as the registry reads them. */
function fakeMaster() {
  const clusters = new Map<string, string>();
  const secrets = new Map<string, { text: string; version: number }>();
  const notFound = () => Object.assign(new Error('not found'), { code: 404 });
  const reads = { clusters: 0, secrets: 0 };
  const master = {
    id: 'master',
    custom: {
      getNamespacedCustomObject: async ({ name }: { name: string }) => {
        reads.clusters += 1;
        const secretRef = clusters.get(name);
        if (!secretRef) throw notFound();
        return { metadata: { name }, spec: { secretRef } };
      },
    },
    core: {
      readNamespacedSecret: async ({ name }: { name: string }) => {
        reads.secrets += 1;
        const secret = secrets.get(name);
        if (!secret) throw notFound();
        return {
          metadata: { name, resourceVersion: String(secret.version) },
          data: { kubeconfig: Buffer.from(secret.text).toString('base64') },
        };
      },
    },
  } as unknown as ClusterClient;
  let version = 0;
  return {
    master,
    reads,
    register(id: string, server: string) {
      clusters.set(id, `cluster-${id}`);
      secrets.set(`cluster-${id}`, { text: kubeconfig(server), version: ++version });
    },
    /** Points the cluster's SFCluster at another Secret. */
    point(id: string, secretName: string, server: string) {
      clusters.set(id, secretName);
      secrets.set(secretName, { text: kubeconfig(server), version: ++version });
    },
    unregister(id: string) {
      clusters.delete(id);
    },
  };
}

const serverOf = (client: ClusterClient) => client.kubeConfig.getCurrentCluster()?.server;

describe('the cluster directory', () => {
  test('GIVEN the master id WHEN asked THEN the master clients, without reading the registry', async () => {
    const fake = fakeMaster();
    const directory = clusterDirectory(fake.master, 'interoperator');
    expect(await directory.get('1')).toBe(fake.master);
    expect(fake.reads).toEqual({ clusters: 0, secrets: 0 });
  });

  test('GIVEN a configured master id WHEN asked THEN that id is the master and `1` is an ordinary cluster', async () => {
    const fake = fakeMaster();
    const directory = clusterDirectory(fake.master, 'interoperator', { masterId: 'primary' });
    expect(directory.masterId).toBe('primary');
    expect(await directory.get('primary')).toBe(fake.master);
    await expect(directory.get('1')).rejects.toThrow('cluster 1 is not registered');
  });

  test('GIVEN an unchanged Secret WHEN asked twice THEN the same clients', async () => {
    const fake = fakeMaster();
    fake.register('2', 'https://two:6443');
    const directory = clusterDirectory(fake.master, 'interoperator');
    const first = await directory.get('2');
    expect(serverOf(first)).toBe('https://two:6443');
    expect(await directory.get('2')).toBe(first);
  });

  test('GIVEN a changed Secret WHEN asked THEN clients of the new kubeconfig, without a restart', async () => {
    const fake = fakeMaster();
    fake.register('2', 'https://two:6443');
    const directory = clusterDirectory(fake.master, 'interoperator');
    const before = await directory.get('2');
    fake.register('2', 'https://two-moved:6443');
    const after = await directory.get('2');
    expect(after).not.toBe(before);
    expect(serverOf(after)).toBe('https://two-moved:6443');
  });

  test('GIVEN the SFCluster names another Secret WHEN asked THEN clients of that Secret', async () => {
    const fake = fakeMaster();
    fake.register('2', 'https://two:6443');
    const directory = clusterDirectory(fake.master, 'interoperator');
    await directory.get('2');
    fake.point('2', 'other-secret', 'https://elsewhere:6443');
    expect(serverOf(await directory.get('2'))).toBe('https://elsewhere:6443');
    expect(serverOf(await directory.get('2'))).toBe('https://elsewhere:6443');
  });

  test('GIVEN a cluster removed from the registry WHEN asked THEN a clear error', async () => {
    const fake = fakeMaster();
    fake.register('2', 'https://two:6443');
    const directory = clusterDirectory(fake.master, 'interoperator');
    await directory.get('2');
    fake.unregister('2');
    await expect(directory.get('2')).rejects.toThrow(
      'cluster 2 is not registered (no SFCluster interoperator/2)',
    );
  });

  test('GIVEN forgotten clients WHEN asked THEN new ones from the same Secret', async () => {
    const fake = fakeMaster();
    fake.register('2', 'https://two:6443');
    const directory = clusterDirectory(fake.master, 'interoperator');
    const before = await directory.get('2');
    directory.forget('2');
    expect(await directory.get('2')).not.toBe(before);
  });
});
