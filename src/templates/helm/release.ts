/**
 * The Helm release a `helm` template renders as: the original inter-operator names it after the
 * record (the instance's, or the binding's) and installs it into the instance's namespace.
 */

/** The Adler-32 checksum of a text's UTF-8 bytes (RFC 1950), as Go's hash/adler32 computes it. */
export function adler32(text: string): number {
  const MOD = 65521;
  let a = 1;
  let b = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    a = (a + byte) % MOD;
    b = (b + a) % MOD;
  }
  return (b * 65536 + a) >>> 0;
}

/**
 * `in-` and the Adler-32 checksum of the record's name in decimal, as the original names releases
 * (its `utils.Adler32sum`, and sprig's `adler32sum`, which its documentation tells templates to use).
 */
export const releaseName = (recordName: string): string => `in-${adler32(recordName)}`;

/** What Helm's `.Capabilities` says of the target cluster. */
export interface ClusterCapabilities {
  /** The apiserver's version, as its `/version` gives `gitVersion` (`v1.31.2`). */
  readonly kubeVersion: string;
  /** `major` and `minor` of its `/version`. @default read from `kubeVersion` */
  readonly major?: string;
  readonly minor?: string;
  /** Its group versions (`apps/v1`) and the kinds of each (`apps/v1/Deployment`), as Helm lists them. */
  readonly apiVersions: readonly string[];
}

/** The release of one render. */
export interface HelmRelease {
  readonly name: string;
  readonly namespace: string;
}

const metadataOf = (record: unknown): { name?: unknown; namespace?: unknown } => {
  const metadata = (record as { metadata?: unknown } | null | undefined)?.metadata;
  return metadata !== null && typeof metadata === 'object' ? metadata : {};
};

/**
 * The release for a render's data: named after the binding's record when there is one, else the
 * instance's, in the instance's namespace. Undefined when the data has no such names.
 */
export function releaseOf(data: {
  readonly instance?: unknown;
  readonly binding?: unknown;
}): HelmRelease | undefined {
  const { name } = metadataOf(data.binding ?? data.instance);
  const { namespace } = metadataOf(data.instance);
  if (typeof name !== 'string' || !name || typeof namespace !== 'string' || !namespace) return undefined;
  return { name: releaseName(name), namespace };
}
