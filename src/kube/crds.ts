/**
 * CustomResourceDefinitions: read from YAML files (the chart's), installed and waited for until
 * the apiserver serves them; and, for onboarding a sister, read one by one and applied with a
 * digest of the definition beside it, so that a later round knows whether it is current.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  loadAllYaml,
  PatchStrategy,
  type KubernetesObject,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { ANNOTATIONS, FIELD_MANAGER } from '../resources/names.js';
import type { ClusterClient } from './clients.js';
import { isAlreadyExists, isNotFound } from './errors.js';

const CRD_API = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;

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

/**
 * The chart's CRD files (charts/interoperator/crds), found from this file in src/kube or
 * dist/src/kube; the image holds them at the same place.
 */
export function chartCrdFiles(): string[] {
  for (const up of ['../../', '../../../']) {
    const dir = fileURLToPath(new URL(`${up}charts/interoperator/crds/`, import.meta.url));
    if (!existsSync(dir)) continue;
    return readdirSync(dir)
      .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
      .sort()
      .map((f) => path.join(dir, f));
  }
  throw new Error(
    `the chart's CRDs (charts/interoperator/crds) are not beside ${fileURLToPath(import.meta.url)}`,
  );
}

/** Digest of a CRD's definition (its labels and spec), as kept in its `crd-digest` annotation. */
export function crdDigest(crd: V1CustomResourceDefinition): string {
  const definition = JSON.stringify({ labels: crd.metadata?.labels ?? {}, spec: crd.spec });
  return createHash('sha256').update(definition).digest('hex').slice(0, 32);
}

/** A CRD as found on a cluster: its digest annotation and whether it is Established. */
export interface FoundCrd {
  readonly name: string;
  readonly digest?: string;
  readonly established: boolean;
}

/** Reads one CRD of a cluster; undefined when it is not there. */
export async function readCrd(cluster: ClusterClient, name: string): Promise<FoundCrd | undefined> {
  try {
    const crd = (await cluster.objects.read({
      ...CRD_API,
      metadata: { name },
    })) as V1CustomResourceDefinition;
    const digest = crd.metadata?.annotations?.[ANNOTATIONS.crdDigest];
    return {
      name,
      ...(digest ? { digest } : {}),
      established: Boolean(
        crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'),
      ),
    };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Server-side applies a CRD (creating or upgrading it) with its digest annotation, taking over
 * the fields another manager set; never deletes anything.
 */
export async function applyCrd(cluster: ClusterClient, crd: V1CustomResourceDefinition): Promise<void> {
  const { name, labels, annotations } = crd.metadata ?? {};
  await cluster.objects.patch(
    {
      ...CRD_API,
      metadata: { name, labels, annotations: { ...annotations, [ANNOTATIONS.crdDigest]: crdDigest(crd) } },
      spec: crd.spec,
    } as KubernetesObject,
    undefined,
    undefined,
    FIELD_MANAGER,
    true,
    PatchStrategy.ServerSideApply,
  );
}
