/**
 * One set of Kubernetes API clients per cluster. The composition roots build them; activities and
 * the catalog cache receive them.
 */
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
} from '@kubernetes/client-node';
import { tracedApi } from './tracing.js';

/** API clients of one cluster. */
export interface ClusterClient {
  /** Cluster id (`1` for the master). */
  readonly id: string;
  readonly kubeConfig: KubeConfig;
  readonly objects: KubernetesObjectApi;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly apiextensions: ApiextensionsV1Api;
}

/**
 * @kubernetes/client-node 1.x builds a new HTTPS agent for every request, so every call pays a
 * TLS handshake. One keep-alive agent per kubeconfig (its TLS settings never change) reuses
 * connections, so an operation's many calls to one cluster pay the handshake once.
 */
function reuseConnections(kubeConfig: KubeConfig): void {
  const internals = kubeConfig as unknown as {
    createAgent(cluster: unknown, options: Record<string, unknown>): unknown;
  };
  const create = internals.createAgent.bind(kubeConfig);
  let agent: unknown;
  internals.createAgent = (cluster, options) => (agent ??= create(cluster, { ...options, keepAlive: true }));
}

export function clusterClient(id: string, kubeConfig: KubeConfig): ClusterClient {
  reuseConnections(kubeConfig);
  return {
    id,
    kubeConfig,
    objects: tracedApi(KubernetesObjectApi.makeApiClient(kubeConfig), id),
    core: tracedApi(kubeConfig.makeApiClient(CoreV1Api), id),
    custom: tracedApi(kubeConfig.makeApiClient(CustomObjectsApi), id),
    apiextensions: tracedApi(kubeConfig.makeApiClient(ApiextensionsV1Api), id),
  };
}

/** Clients from a kubeconfig's text (as stored in an SFCluster's Secret). */
export function clusterClientFromKubeconfig(id: string, kubeconfig: string): ClusterClient {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  return clusterClient(id, kc);
}

/** Clients from a kubeconfig file, or from the default places (KUBECONFIG, in-cluster) when unset. */
export function clusterClientFromFile(id: string, file?: string): ClusterClient {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return clusterClient(id, kc);
}
