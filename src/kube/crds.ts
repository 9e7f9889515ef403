/** Installs CustomResourceDefinitions from YAML files and waits until the apiserver serves them. */
import { readFileSync } from 'node:fs';
import { loadAllYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import type { ClusterClient } from './clients.js';
import { isAlreadyExists } from './errors.js';

/**
 * Reads CRDs into the client's typed model: its serializer knows only model properties, so raw
 * keys such as `x-kubernetes-preserve-unknown-fields` must be mapped on the way in, or they are
 * silently dropped on the way out.
 */
export function readCrds(files: readonly string[]): V1CustomResourceDefinition[] {
  return files.flatMap((file) =>
    (loadAllYaml(readFileSync(file, 'utf8')) as (V1CustomResourceDefinition | null)[]).filter(
      (crd): crd is V1CustomResourceDefinition => crd?.kind === 'CustomResourceDefinition',
    ),
  );
}

/** Creates or replaces each CRD, then waits until every one is Established. */
export async function installCrds(
  cluster: ClusterClient,
  crds: readonly V1CustomResourceDefinition[],
  timeoutMs = 30_000,
): Promise<void> {
  for (const crd of crds) {
    try {
      await cluster.apiextensions.createCustomResourceDefinition({ body: crd });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const current = await cluster.apiextensions.readCustomResourceDefinition({ name: crd.metadata!.name! });
      await cluster.apiextensions.replaceCustomResourceDefinition({
        name: crd.metadata!.name!,
        body: { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata?.resourceVersion } },
      });
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    for (;;) {
      const current = await cluster.apiextensions.readCustomResourceDefinition({ name: crd.metadata!.name! });
      const established = current.status?.conditions?.some(
        (c) => c.type === 'Established' && c.status === 'True',
      );
      if (established) break;
      if (Date.now() > deadline) {
        throw new Error(
          `CRD ${crd.metadata?.name} on cluster ${cluster.id} not established in ${timeoutMs} ms`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
