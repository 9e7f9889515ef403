/**
 * Onboarding a sister: installs our CRDs there (server-side apply, only creating or upgrading) and
 * tells what came of it, for the `CrdsInstalled` condition of its SFCluster. The cluster health
 * step runs it at every probe the sister answers: the first one onboards a newly registered
 * cluster, later ones find the CRDs current and write nothing, and a worker that brings new CRD
 * versions upgrades them. What to do is decided in src/clusters/onboarding.ts.
 */
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { crdActions, sisterCrds, type DesiredCrd, type OnboardingOutcome } from '../clusters/index.js';
import type { ClusterClient } from '../kube/clients.js';
import { applyCrd, chartCrdFiles, crdDigest, readCrd, readCrds, type FoundCrd } from '../kube/crds.js';
import { apiMessageOf, statusCodeOf } from '../kube/errors.js';

/** How long an onboarding waits for the CRDs it applied to be Established. */
export const ESTABLISH_TIMEOUT_MS = 10_000;

const ESTABLISH_POLL_MS = 200;

/** The CRDs every sister gets: those of the chart's files in the sister's group, read once. */
let chartSisterCrds: V1CustomResourceDefinition[] | undefined;
export function defaultSisterCrds(): V1CustomResourceDefinition[] {
  chartSisterCrds ??= sisterCrds(readCrds(chartCrdFiles()));
  return chartSisterCrds;
}

const nameOf = (crd: V1CustomResourceDefinition): string => crd.metadata!.name!;

/** Whether every one of the CRDs' kinds is served by the cluster (read by discovery, which any identity may). */
async function allServed(cluster: ClusterClient, crds: readonly V1CustomResourceDefinition[]) {
  try {
    for (const crd of crds) {
      const version = crd.spec.versions.find((v) => v.served)?.name;
      if (!version) return false;
      const served = await cluster.custom.getAPIResources({ group: crd.spec.group, version });
      if (!served.resources.some((r) => r.name === crd.spec.names.plural)) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Installs `crds` on the sister where missing or out of date and waits (a little) until they are
 * Established. Never throws: a refusal or a failure is the outcome.
 */
export async function onboardSister(
  sister: ClusterClient,
  crds: readonly V1CustomResourceDefinition[],
  options: { readonly establishTimeoutMs?: number; readonly heartbeat?: () => void } = {},
): Promise<OnboardingOutcome> {
  const desired: DesiredCrd[] = crds.map((crd) => ({ name: nameOf(crd), digest: crdDigest(crd) }));
  const byName = new Map(crds.map((crd) => [nameOf(crd), crd]));
  try {
    const found = (await Promise.all(desired.map((d) => readCrd(sister, d.name)))).filter(
      (crd): crd is FoundCrd => crd !== undefined,
    );
    const actions = crdActions(desired, found);
    for (const { name, action } of actions) {
      if (action !== 'current') await applyCrd(sister, byName.get(name)!);
      options.heartbeat?.();
    }
    const deadline = Date.now() + (options.establishTimeoutMs ?? ESTABLISH_TIMEOUT_MS);
    let pending = actions.map((a) => a.name);
    for (;;) {
      const read = await Promise.all(pending.map((name) => readCrd(sister, name)));
      pending = pending.filter((_, i) => !read[i]?.established);
      if (pending.length === 0 || Date.now() >= deadline) break;
      options.heartbeat?.();
      await new Promise((r) => setTimeout(r, ESTABLISH_POLL_MS));
    }
    if (pending.length > 0) return { kind: 'not-established', pending };
    const with_ = (action: string) => actions.filter((a) => a.action === action).map((a) => a.name);
    return {
      kind: 'installed',
      crds: desired.map((d) => d.name),
      created: with_('create'),
      upgraded: with_('upgrade'),
    };
  } catch (err) {
    const error = apiMessageOf(err);
    const code = statusCodeOf(err);
    if (code === 403) return { kind: 'forbidden', error, served: await allServed(sister, crds) };
    const transient = code === undefined || code === 429 || code >= 500;
    return { kind: 'failed', error, ...(transient ? { transient } : {}) };
  }
}
