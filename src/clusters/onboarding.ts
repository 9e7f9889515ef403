/**
 * Onboarding a sister cluster, as pure decisions: which of our CRDs a sister gets, what to do with
 * each given what the sister holds (create, upgrade, leave), and the `CrdsInstalled` condition its
 * SFCluster reports. A sister whose CRDs are not installed is not scheduled onto.
 *
 * The master gets our CRDs with the chart, so it is never onboarded. A sister gets the kinds of
 * `osb.servicefabrik.io` (the records its steps copy there, and the catalog copied to it); the
 * cluster registry (`resource.servicefabrik.io`) stays in the master. CRDs are only created or
 * upgraded, never deleted: deleting a CRD deletes every object of its kind.
 *
 * Pure: the caller reads the sister and applies; no I/O and no Node builtins.
 */
import type { ConditionFacts } from '../resources/conditions.js';
import { CLUSTER_CONDITIONS, type SFCluster } from '../resources/types.js';

/** The API group whose CRDs every sister gets. */
export const SISTER_CRD_GROUP = 'osb.servicefabrik.io';

/** One of our CRDs as the decision sees it: its name and the digest of its definition. */
export interface DesiredCrd {
  /** `metadata.name`, `<plural>.<group>`. */
  readonly name: string;
  /** Digest of the definition, kept on the installed CRD in an annotation. */
  readonly digest: string;
}

/** One of our CRDs as found on the sister. */
export interface InstalledCrd {
  readonly name: string;
  /** The digest annotation written with it; absent when something else installed it. */
  readonly digest?: string;
  /** Whether its `Established` condition is True. */
  readonly established: boolean;
}

/** What onboarding does with one CRD. */
export type CrdAction = 'create' | 'upgrade' | 'current';

/** The CRDs a sister gets, of all those given: the ones of {@link SISTER_CRD_GROUP}, by name. */
export function sisterCrds<T extends { readonly spec?: { readonly group?: string } }>(
  crds: readonly T[],
): T[] {
  return crds.filter((crd) => crd.spec?.group === SISTER_CRD_GROUP);
}

/**
 * What to do with each desired CRD, in the given order: create it when the sister lacks it,
 * upgrade it (apply ours over it) when its digest differs, else leave it. Nothing is ever
 * deleted, whatever the sister holds besides.
 */
export function crdActions(
  desired: readonly DesiredCrd[],
  installed: readonly InstalledCrd[],
): { readonly name: string; readonly action: CrdAction }[] {
  const found = new Map(installed.map((crd) => [crd.name, crd]));
  return desired.map(({ name, digest }) => {
    const there = found.get(name);
    if (!there) return { name, action: 'create' };
    return { name, action: there.digest === digest ? 'current' : 'upgrade' };
  });
}

/** What one onboarding of a sister came to. */
export type OnboardingOutcome =
  | {
      readonly kind: 'installed';
      /** Every desired CRD, established. */
      readonly crds: readonly string[];
      readonly created: readonly string[];
      readonly upgraded: readonly string[];
    }
  | {
      /** Applied, but not all established yet. */
      readonly kind: 'not-established';
      readonly pending: readonly string[];
    }
  | {
      /** The cluster refused to let the worker read or write CRDs (403). */
      readonly kind: 'forbidden';
      /** The apiserver's message. */
      readonly error: string;
      /** Whether every one of our kinds is served there all the same (installed by other means). */
      readonly served: boolean;
    }
  | {
      /** Anything else: a 422, an unreachable cluster, a timeout. */
      readonly kind: 'failed';
      readonly error: string;
      /** Whether it may pass by itself (no answer, 429, 5xx): the condition written last then stands. */
      readonly transient?: boolean;
    };

/** Reasons of the `CrdsInstalled` condition. */
export const ONBOARDING_REASONS = {
  installed: 'Installed',
  installedByOthers: 'InstalledByOthers',
  notEstablished: 'NotEstablished',
  forbidden: 'Forbidden',
  failed: 'InstallFailed',
} as const;

const RBAC_HINT =
  'grant its identity get, create and patch on customresourcedefinitions.apiextensions.k8s.io there (docs/operations.md, "Onboarding a sister cluster")';

const listed = (names: readonly string[]) => names.join(', ');

/**
 * The `CrdsInstalled` condition of a sister's SFCluster after an onboarding; undefined when the
 * one written last (`previous`) stands: a transient failure does not turn a cluster unschedulable,
 * but a cluster that never reported one gets it, so that none runs without saying.
 */
export function onboardingCondition(
  outcome: OnboardingOutcome,
  previous?: { readonly status: string },
): ConditionFacts | undefined {
  const type = CLUSTER_CONDITIONS.crdsInstalled;
  if (outcome.kind === 'failed' && outcome.transient && previous) return undefined;
  switch (outcome.kind) {
    case 'installed': {
      const changes = [
        ...(outcome.created.length > 0 ? [`created ${listed(outcome.created)}`] : []),
        ...(outcome.upgraded.length > 0 ? [`upgraded ${listed(outcome.upgraded)}`] : []),
      ];
      return {
        type,
        status: 'True',
        reason: ONBOARDING_REASONS.installed,
        message: `the CRDs ${listed(outcome.crds)} are established${changes.length > 0 ? ` (${changes.join('; ')})` : ''}`,
      };
    }
    case 'not-established':
      return {
        type,
        status: 'False',
        reason: ONBOARDING_REASONS.notEstablished,
        message: `the CRDs ${listed(outcome.pending)} are applied but not established yet; no instance is placed on the cluster until they are`,
      };
    case 'forbidden':
      return outcome.served
        ? {
            type,
            status: 'True',
            reason: ONBOARDING_REASONS.installedByOthers,
            message: `our kinds are served, but the worker may not manage the CRDs on this cluster, so they are not upgraded with it (${outcome.error}); to let it, ${RBAC_HINT}`,
          }
        : {
            type,
            status: 'False',
            reason: ONBOARDING_REASONS.forbidden,
            message: `the worker may not install our CRDs on this cluster (${outcome.error}); no instance is placed on the cluster until it may: ${RBAC_HINT}`,
          };
    case 'failed':
      return {
        type,
        status: 'False',
        reason: ONBOARDING_REASONS.failed,
        message: `installing our CRDs on this cluster failed (${outcome.error}); no instance is placed on the cluster until they are installed`,
      };
  }
}

/**
 * Why new instances may not go to the cluster for want of our CRDs: the message of its
 * `CrdsInstalled` condition when that is False; undefined when it is True or not reported (the
 * master, or a cluster from before onboarding existed, not yet probed again).
 */
export function crdsMissing(cluster: Pick<SFCluster, 'status'>): string | undefined {
  const condition = cluster.status?.conditions?.find((c) => c.type === CLUSTER_CONDITIONS.crdsInstalled);
  if (condition?.status !== 'False') return undefined;
  return condition.message ?? condition.reason ?? 'our CRDs are not installed';
}
