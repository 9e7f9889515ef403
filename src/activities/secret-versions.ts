/**
 * The versioned Secrets of generated secrets (src/resources/sfsecret.ts), in the
 * instance's namespace on its cluster: made once, never overwritten (a create that finds the
 * Secret keeps it), deleted once no binding uses them. Values are generated here and written
 * straight into the Secret; what these functions return names Secrets and versions only.
 */
import type { ClusterClient } from '../kube/clients.js';
import { isAlreadyExists, isNotFound } from '../kube/errors.js';
import {
  generationOrder,
  isGeneratedSecret,
  parseGeneratedSecret,
  versionedSecretName,
  type GeneratedSecretSpec,
  type GeneratedSecretStatus,
} from '../resources/sfsecret.js';
import { LABELS } from '../resources/names.js';
import type { KubeObject, OwnerReference } from '../resources/types.js';
import type { DesiredObject } from './desired-objects.js';
import { FAILURE_TYPES, terminal } from './failures.js';
import { generateSecretData, type CertificateAuthorityKeys } from './secret-values.js';

/** Runs one Kubernetes call; a failure says what it was doing and whether to retry. */
export type KubeCall = <T>(what: string, call: () => Promise<T>) => Promise<T>;

/** Where an instance's generated Secrets are, and how to reach them. */
export interface SecretPlace {
  readonly cluster: ClusterClient;
  readonly namespace: string;
  readonly call: KubeCall;
}

/** A declared generated secret, with the labels and owners its Secrets carry. */
export interface DeclaredSecret {
  readonly spec: GeneratedSecretSpec;
  readonly labels: Record<string, string>;
  readonly ownerReferences?: readonly OwnerReference[];
}

/**
 * Splits what a template rendered into the SFSecrets (validated, in the order they are generated)
 * and the objects to apply. An SFSecret that is not valid fails the operation at once.
 */
export function splitGenerated(
  desired: readonly DesiredObject[],
  template: string,
): { readonly secrets: readonly DeclaredSecret[]; readonly objects: readonly DesiredObject[] } {
  const declared: DeclaredSecret[] = [];
  const objects: DesiredObject[] = [];
  for (const d of desired) {
    if (!isGeneratedSecret(d.object)) {
      objects.push(d);
      continue;
    }
    const parsed = parseGeneratedSecret(d.object);
    if ('problem' in parsed)
      throw terminal(`the ${template} template renders ${parsed.problem}`, FAILURE_TYPES.template);
    const { labels, ownerReferences } = d.object.metadata;
    declared.push({ spec: parsed, labels: labels ?? {}, ...(ownerReferences ? { ownerReferences } : {}) });
  }
  const order = generationOrder(declared.map((d) => d.spec));
  if ('problem' in order)
    throw terminal(`the ${template} template renders ${order.problem}`, FAILURE_TYPES.template);
  const secrets = order.map((spec) => declared.find((d) => d.spec.name === spec.name)!);
  return { secrets, objects };
}

/** The specs of the SFSecrets among rendered objects that are valid ones (for naming them before generation). */
export function declaredSpecs(objects: readonly KubeObject[]): GeneratedSecretSpec[] {
  return objects
    .filter(isGeneratedSecret)
    .map(parseGeneratedSecret)
    .filter((s): s is GeneratedSecretSpec => !('problem' in s));
}

const text = (data: Record<string, string> | undefined, key: string): string | undefined =>
  data?.[key] === undefined ? undefined : Buffer.from(data[key], 'base64').toString('utf8');

/** Reads a Secret's data; undefined when the Secret does not exist. */
async function readSecretData(place: SecretPlace, name: string): Promise<Record<string, string> | undefined> {
  return place.call(`reading Secret ${place.namespace}/${name}`, async () => {
    try {
      const secret = await place.cluster.core.readNamespacedSecret({ name, namespace: place.namespace });
      return secret.data ?? {};
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  });
}

/**
 * The signer of a certificate that names one: the current version of a generated CA of the
 * instance, or a Secret of the instance's namespace with `tls.crt` and `tls.key`.
 */
async function authorityOf(
  place: SecretPlace,
  spec: GeneratedSecretSpec,
  recorded: readonly GeneratedSecretStatus[],
): Promise<CertificateAuthorityKeys | undefined> {
  if (!spec.ca) return undefined;
  const name =
    'generated' in spec.ca
      ? recorded.find((r) => r.name === (spec.ca as { generated: string }).generated)?.secret
      : spec.ca.secretName;
  if (!name) throw new Error(`the CA of SFSecret ${spec.name} is not generated yet`);
  const data = await readSecretData(place, name);
  const certificate = text(data, 'tls.crt');
  const privateKey = text(data, 'tls.key');
  if (!certificate || !privateKey)
    throw terminal(
      `SFSecret ${spec.name}: its CA, Secret ${place.namespace}/${name}, ${data ? 'has no tls.crt and tls.key' : 'does not exist'}`,
      FAILURE_TYPES.template,
    );
  return { certificate, privateKey };
}

/**
 * Makes the Secret of version `version` of `declared`, unless it exists: an existing version is
 * never changed, so a repeated step keeps what the first one made. Says whether it made it.
 */
export async function createVersion(
  place: SecretPlace,
  declared: DeclaredSecret,
  version: number,
  recorded: readonly GeneratedSecretStatus[],
): Promise<boolean> {
  const { spec } = declared;
  const name = versionedSecretName(spec.secretName, version);
  if (await readSecretData(place, name)) return false;
  const ca = await authorityOf(place, spec, recorded);
  const data = Object.fromEntries(
    Object.entries(await generateSecretData(spec, ca)).map(([k, v]) => [
      k,
      Buffer.from(v).toString('base64'),
    ]),
  );
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: spec.type === 'certificate' ? 'kubernetes.io/tls' : 'Opaque',
    // A version never changes: a new value is a new version.
    immutable: true,
    metadata: {
      name,
      namespace: place.namespace,
      labels: {
        ...declared.labels,
        [LABELS.generatedSecret]: spec.name,
        [LABELS.generatedVersion]: String(version),
      },
      ...(declared.ownerReferences?.length ? { ownerReferences: [...declared.ownerReferences] } : {}),
    },
    data,
  };
  return place.call(`creating Secret ${place.namespace}/${name}`, async () => {
    try {
      await place.cluster.core.createNamespacedSecret({ namespace: place.namespace, body });
      return true;
    } catch (err) {
      if (isAlreadyExists(err)) return false;
      throw err;
    }
  });
}

/**
 * Makes sure every declared secret has the Secret of its current version in `current` (the
 * record's list with the new ones at version 1, recordedAfterGeneration): a new one is generated;
 * one already there is kept as it is. Returns the names of the Secrets it made.
 */
export async function ensureGeneratedSecrets(
  place: SecretPlace,
  declared: readonly DeclaredSecret[],
  current: readonly GeneratedSecretStatus[],
): Promise<string[]> {
  const made: string[] = [];
  for (const d of declared) {
    const version = current.find((r) => r.name === d.spec.name)?.version ?? 1;
    if (await createVersion(place, d, version, current))
      made.push(versionedSecretName(d.spec.secretName, version));
  }
  return made;
}

/** Deletes the Secrets of `versions` of a generated secret; NotFound counts as deleted. */
export async function deleteVersions(
  place: SecretPlace,
  entry: GeneratedSecretStatus,
  versions: readonly number[],
): Promise<string[]> {
  const deleted: string[] = [];
  for (const version of versions) {
    const name = versionedSecretName(entry.secretName, version);
    await place.call(`deleting Secret ${place.namespace}/${name}`, async () => {
      try {
        await place.cluster.core.deleteNamespacedSecret({ name, namespace: place.namespace });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    });
    deleted.push(name);
  }
  return deleted;
}
