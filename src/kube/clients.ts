/**
 * One set of Kubernetes API clients per cluster. The composition roots build them; activities and
 * the catalog cache receive them.
 */
import {
  ApiextensionsV1Api,
  CoreV1Api,
  createConfiguration,
  CustomObjectsApi,
  IsomorphicFetchHttpLibrary,
  KubeConfig,
  KubernetesObjectApi,
  ServerConfiguration,
  wrapHttpLibrary,
  type ApiConstructor,
  type ApiType,
  type HttpLibrary,
} from '@kubernetes/client-node';
import { kubeCallOutcome, kubeVerb, type KubeCallRecorder } from '../metrics/recorders.js';
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
  /**
   * The registry namespace of the installation the client works for: lists of instance and
   * binding records show only that installation's (src/kube/custom-objects.ts). Unset: all.
   */
  readonly owner?: string;
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

/** How the clients of a cluster are built. */
export interface ClusterClientOptions {
  /** Where each API call (watches aside) is counted, by verb and outcome. @default nowhere */
  readonly calls?: KubeCallRecorder;
  /** The installation whose records its lists show ({@link ClusterClient.owner}). @default all */
  readonly owner?: string;
}

/**
 * The library's own HTTP client, counting each call as it ends: one wrapper per cluster, one
 * callback per call.
 */
function countedHttp(calls: KubeCallRecorder): HttpLibrary {
  const http = new IsomorphicFetchHttpLibrary();
  return wrapHttpLibrary({
    async send(request) {
      const verb = kubeVerb(request.getHttpMethod());
      try {
        const response = await http.send(request).toPromise();
        calls.kubeCall(verb, kubeCallOutcome(response.httpStatusCode));
        return response;
      } catch (err) {
        calls.kubeCall(verb, 'error');
        throw err;
      }
    },
  });
}

/** An API client as `kubeConfig.makeApiClient` builds it, over `httpApi` when given. */
function apiClient<T extends ApiType>(
  kubeConfig: KubeConfig,
  type: ApiConstructor<T>,
  httpApi: HttpLibrary | undefined,
): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  return new type(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kubeConfig },
      ...(httpApi ? { httpApi } : {}),
    }),
  );
}

export function clusterClient(
  id: string,
  kubeConfig: KubeConfig,
  options: ClusterClientOptions = {},
): ClusterClient {
  reuseConnections(kubeConfig);
  const http = options.calls && countedHttp(options.calls);
  const objects = apiClient(kubeConfig, KubernetesObjectApi, http);
  // What KubernetesObjectApi.makeApiClient does after building the client (the method is protected).
  (objects as unknown as { setDefaultNamespace(kc: KubeConfig): void }).setDefaultNamespace(kubeConfig);
  return {
    id,
    kubeConfig,
    objects: tracedApi(objects, id),
    core: tracedApi(apiClient(kubeConfig, CoreV1Api, http), id),
    custom: tracedApi(apiClient(kubeConfig, CustomObjectsApi, http), id),
    apiextensions: tracedApi(apiClient(kubeConfig, ApiextensionsV1Api, http), id),
    ...(options.owner ? { owner: options.owner } : {}),
  };
}

/** Clients from a kubeconfig's text (as stored in an SFCluster's Secret). */
export function clusterClientFromKubeconfig(
  id: string,
  kubeconfig: string,
  options: ClusterClientOptions = {},
): ClusterClient {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  return clusterClient(id, kc, options);
}

/** Clients from a kubeconfig file, or from the default places (KUBECONFIG, in-cluster) when unset. */
export function clusterClientFromFile(
  id: string,
  file?: string,
  options: ClusterClientOptions = {},
): ClusterClient {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return clusterClient(id, kc, options);
}
