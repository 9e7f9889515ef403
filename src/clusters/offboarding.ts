/**
 * What offboarding a sister removes besides its SFCluster: the Secret with its kubeconfig, once
 * the cluster's deletion may finish, unless another registered cluster still names that Secret or
 * the Secret asks to be kept.
 */

/** On a kubeconfig Secret: `"true"` keeps it when the cluster that names it is offboarded. */
export const KEEP_ON_OFFBOARDING_ANNOTATION = 'interoperator.servicefabrik.io/keep-on-offboarding';

interface ClusterSecretRef {
  readonly metadata: { readonly name?: string };
  readonly spec: { readonly secretRef?: string };
}

/**
 * The name of the kubeconfig Secret to delete with the cluster `leaving`, or undefined: it has
 * none (a cluster reached by a worker of its own), or another of the `registered` clusters names
 * it too.
 */
export function kubeconfigSecretToDelete(
  leaving: ClusterSecretRef,
  registered: readonly ClusterSecretRef[],
): string | undefined {
  const secretRef = leaving.spec.secretRef;
  if (!secretRef) return undefined;
  const shared = registered.some(
    (other) => other.metadata.name !== leaving.metadata.name && other.spec.secretRef === secretRef,
  );
  return shared ? undefined : secretRef;
}

/** Whether a kubeconfig Secret's annotations ask to keep it when its cluster is offboarded. */
export const keptOnOffboarding = (annotations: Readonly<Record<string, string>> | undefined): boolean =>
  annotations?.[KEEP_ON_OFFBOARDING_ANNOTATION] === 'true';
