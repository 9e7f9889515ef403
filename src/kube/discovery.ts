/**
 * What a cluster's apiserver says of itself, as Helm's `.Capabilities` shows it: its version and
 * its API versions (every group version, and every kind of each as `group/version/Kind`), read as
 * Helm's own discovery reads them. Kept for a few minutes per cluster client: a rollout of many
 * instances asks once.
 */
import { ApisApi, CoreApi, VersionApi } from '@kubernetes/client-node';
import type { ClusterClient } from './clients.js';

/** A cluster's version and API versions, as Helm's capabilities hold them. */
export interface ApiCapabilities {
  /** `gitVersion` of the apiserver's `/version` (`v1.31.2`). */
  readonly kubeVersion: string;
  /** `major` and `minor` of `/version`, as the apiserver gives them (`1`, `31`). */
  readonly major: string;
  readonly minor: string;
  /** Group versions and `group/version/Kind` of each kind served, sorted. */
  readonly apiVersions: readonly string[];
}

/** How long a cluster's capabilities are reused, in milliseconds. */
const CAPABILITIES_TTL_MS = 5 * 60_000;
const cache = new WeakMap<
  ClusterClient,
  { readonly expires: number; readonly value: Promise<ApiCapabilities> }
>();

async function discover(cluster: ClusterClient): Promise<ApiCapabilities> {
  const kc = cluster.kubeConfig;
  const [version, core, groups] = await Promise.all([
    kc.makeApiClient(VersionApi).getCode(),
    kc.makeApiClient(CoreApi).getAPIVersions(),
    kc.makeApiClient(ApisApi).getAPIVersions(),
  ]);
  const groupVersions = [
    ...core.versions,
    ...groups.groups.flatMap((g) => g.versions.map((v) => v.groupVersion)),
  ];
  const lists = await Promise.all(
    groupVersions.map((gv) => {
      const [group, version] = gv.includes('/') ? gv.split('/') : ['', gv];
      return group
        ? cluster.custom.getAPIResources({ group: group!, version: version! })
        : cluster.core.getAPIResources();
    }),
  );
  const apiVersions = new Set(groupVersions);
  for (const [i, list] of lists.entries()) {
    for (const resource of list.resources) apiVersions.add(`${groupVersions[i]}/${resource.kind}`);
  }
  return {
    kubeVersion: version.gitVersion,
    major: version.major,
    minor: version.minor,
    apiVersions: [...apiVersions].sort(),
  };
}

/** The cluster's capabilities, read at most every few minutes per cluster client. */
export function clusterCapabilities(cluster: ClusterClient): Promise<ApiCapabilities> {
  const cached = cache.get(cluster);
  if (cached && cached.expires > Date.now()) return cached.value;
  const value = discover(cluster);
  cache.set(cluster, { expires: Date.now() + CAPABILITIES_TTL_MS, value });
  value.catch(() => cache.delete(cluster));
  return value;
}
