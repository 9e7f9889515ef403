/**
 * The cluster directory over the real master: it follows the registry and the kubeconfig Secrets
 * (each test registers its clusters in a registry namespace of its own).
 */
import { SFCLUSTER } from '../../src/resources/types.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { clusterDirectory } from '../../src/kube/cluster-directory.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { clusters, unique, untilGone } from '../support/env.js';

/** A kubeconfig for a server that is never called: the directory only builds clients from it. */
const kubeconfig = (server: string) => ({
  text: `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${server}" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
current-context: c
`,
});

const serverOf = (client: ClusterClient) => client.kubeConfig.getCurrentCluster()?.server;
const sfcluster = (namespace: string, name: string) => ({
  group: SFCLUSTER.group,
  version: SFCLUSTER.version,
  plural: SFCLUSTER.plural,
  namespace,
  name,
});

let master: ClusterClient;
let namespace: string;

beforeEach(() => {
  master = clusters()[0]!;
  namespace = unique('registry');
});

afterEach(async () => {
  await master.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

describe('the cluster directory', () => {
  test('GIVEN the master id WHEN asked THEN the master clients themselves', async () => {
    const directory = clusterDirectory(master, namespace);
    expect(await directory.get('1')).toBe(master);
  });

  test('GIVEN a configured master id WHEN asked THEN that id is the master and `1` is an ordinary cluster', async () => {
    await registerCluster(master, namespace, 'other', kubeconfig('https://other:6443'));
    const directory = clusterDirectory(master, namespace, { masterId: 'primary' });
    expect(directory.masterId).toBe('primary');
    expect(await directory.get('primary')).toBe(master);
    await expect(directory.get('1')).rejects.toThrow(
      `cluster 1 is not registered (no SFCluster ${namespace}/1)`,
    );
  });

  test('GIVEN an unchanged Secret WHEN asked twice THEN the same clients', async () => {
    await registerCluster(master, namespace, '2', kubeconfig('https://two:6443'));
    const directory = clusterDirectory(master, namespace);
    const first = await directory.get('2');
    expect(serverOf(first)).toBe('https://two:6443');
    expect(await directory.get('2')).toBe(first);
  });

  test('GIVEN a changed Secret WHEN asked THEN clients of the new kubeconfig, without a restart', async () => {
    await registerCluster(master, namespace, '2', kubeconfig('https://two:6443'));
    const directory = clusterDirectory(master, namespace);
    const before = await directory.get('2');
    await registerCluster(master, namespace, '2', kubeconfig('https://two-moved:6443'));
    const after = await directory.get('2');
    expect(after).not.toBe(before);
    expect(serverOf(after)).toBe('https://two-moved:6443');
  });

  test('GIVEN the SFCluster names another Secret WHEN asked THEN clients of that Secret', async () => {
    await registerCluster(master, namespace, '2', kubeconfig('https://two:6443'));
    const directory = clusterDirectory(master, namespace);
    await directory.get('2');
    await master.core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'other-secret' },
        stringData: { kubeconfig: kubeconfig('https://elsewhere:6443').text },
      },
    });
    await master.custom.patchNamespacedCustomObject({
      ...sfcluster(namespace, '2'),
      body: [{ op: 'replace', path: '/spec/secretRef', value: 'other-secret' }],
    });
    expect(serverOf(await directory.get('2'))).toBe('https://elsewhere:6443');
    expect(serverOf(await directory.get('2'))).toBe('https://elsewhere:6443');
  });

  test('GIVEN a cluster removed from the registry WHEN asked THEN a clear error', async () => {
    await registerCluster(master, namespace, '2', kubeconfig('https://two:6443'));
    const directory = clusterDirectory(master, namespace);
    await directory.get('2');
    // Its finalizer guards instances placed there; none are, so it is let go at once.
    await master.custom.patchNamespacedCustomObject({
      ...sfcluster(namespace, '2'),
      body: [{ op: 'remove', path: '/metadata/finalizers' }],
    });
    await master.custom.deleteNamespacedCustomObject(sfcluster(namespace, '2'));
    await untilGone('SFCluster 2', () => master.custom.getNamespacedCustomObject(sfcluster(namespace, '2')));
    await expect(directory.get('2')).rejects.toThrow(
      `cluster 2 is not registered (no SFCluster ${namespace}/2)`,
    );
  });

  test('GIVEN forgotten clients WHEN asked THEN new ones from the same Secret', async () => {
    await registerCluster(master, namespace, '2', kubeconfig('https://two:6443'));
    const directory = clusterDirectory(master, namespace);
    const before = await directory.get('2');
    directory.forget('2');
    const after = await directory.get('2');
    expect(after).not.toBe(before);
    expect(serverOf(after)).toBe('https://two:6443');
  });
});
