/**
 * The Helm release a `helm` template renders as: the original inter-operator names it after the
 * record (the instance's, or the binding's) and installs it into the instance's namespace.
 */
import { ANNOTATIONS } from '../../resources/names.js';

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
 * `in-` and the Adler-32 checksum of the record's name: in lower-case hex for the records this
 * broker made, in decimal for those adopted from Service Fabrik, whose interoperator names its
 * releases so (its `utils.Adler32sum`, as sprig's `adler32sum`). A release keeps its name for the
 * life of its record: a new name would install the chart's objects afresh beside the old ones.
 */
export const releaseName = (recordName: string, adopted = false): string =>
  `in-${adler32(recordName).toString(adopted ? 10 : 16)}`;

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

const metadataOf = (record: unknown): { name?: unknown; namespace?: unknown; annotations?: unknown } => {
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
  const { name, annotations } = metadataOf(data.binding ?? data.instance);
  const { namespace } = metadataOf(data.instance);
  if (typeof name !== 'string' || !name || typeof namespace !== 'string' || !namespace) return undefined;
  const adopted =
    annotations !== null &&
    typeof annotations === 'object' &&
    ANNOTATIONS.adoptedFromServiceFabrik in annotations;
  return { name: releaseName(name, adopted), namespace };
}
