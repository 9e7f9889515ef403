/**
 * The `SFSecret` kind, the rules of generated secrets: an `SFSecret` a plan's provision template
 * renders asks the worker (not the apiserver, which has no such kind) for a value generated once
 * per instance and kept: a password, an RSA or SSH key pair, or a certificate signed by a CA that
 * is itself generated. Each value is a version, kept in the instance's namespace as the Secret
 * `<secretName>-v<N>`; the instance's record says which version is current, and templates see the
 * current Secret's name (never its value) as `.generated.<name>.secretName`. A rotation makes
 * version N+1; version N stays while a binding made with it exists.
 *
 * Pure: the kind, the options' validation and the version bookkeeping. Values are made by the
 * worker (src/activities/secret-values.ts), which alone sees them.
 */
import {
  OSB_API_VERSION,
  type BindingSecretVersion,
  type GeneratedSecretStatus,
  type GeneratedSecretType,
  type KubeObject,
} from './types.js';

export type { BindingSecretVersion, GeneratedSecretStatus, GeneratedSecretType } from './types.js';

/** The kind a plan's template renders to ask for a generated secret. */
export const SFSECRET_KIND = 'SFSecret';

/** What an SFSecret can generate. */
export const GENERATED_SECRET_TYPES = [
  'password',
  'rsa',
  'ssh',
  'certificate',
] as const satisfies readonly GeneratedSecretType[];

/** A password's length when the SFSecret names none. */
export const DEFAULT_PASSWORD_LENGTH = 32;
/** The bounds of a password's length. */
export const PASSWORD_LENGTH = { min: 8, max: 256 } as const;
/** Sizes an RSA or SSH key may have, in bits; the first is the default. */
export const KEY_BITS = [2048, 3072, 4096] as const;
/** How long a certificate is valid when the SFSecret says nothing: a year, ten for a CA. */
export const DEFAULT_VALIDITY_DAYS = { certificate: 365, ca: 3650 } as const;
/** The longest validity a certificate may ask for. */
export const MAX_VALIDITY_DAYS = 36_500;

/**
 * The signer of a generated certificate: another SFSecret of the same instance (`generated`, a
 * certificate with `isCA`), or a Secret in the instance's namespace holding `tls.crt` and `tls.key`
 * (`secretName`).
 */
export type CertificateAuthority = { readonly generated: string } | { readonly secretName: string };

/** What an SFSecret asks for, validated. */
export interface GeneratedSecretSpec {
  /** The SFSecret's name: the key templates read it by (`.generated.<name>`). */
  readonly name: string;
  readonly type: GeneratedSecretType;
  /** The versioned Secrets are `<secretName>-v<N>`. @default the SFSecret's name */
  readonly secretName: string;
  /** A password's length. @default 32 */
  readonly length?: number;
  /** An RSA or SSH key's size in bits. @default 2048 */
  readonly bits?: number;
  /** A certificate's subject common name. */
  readonly commonName?: string;
  /** A certificate's DNS names (or IP addresses) besides its common name. @default none */
  readonly alternativeNames?: readonly string[];
  /** A certificate that signs others. @default false */
  readonly isCA?: boolean;
  /** A certificate's signer. @default self-signed */
  readonly ca?: CertificateAuthority;
  /** How long a certificate is valid. @default 365, 3650 for a CA */
  readonly validityDays?: number;
}

/** What templates see of one generated secret, as `.generated.<name>`. */
export interface GeneratedSecretData {
  /** The name of the current version's Secret. */
  readonly secretName: string;
  readonly version: number;
}

/** The name of a version's Secret. */
export const versionedSecretName = (secretName: string, version: number): string =>
  `${secretName}-v${version}`;

/** Whether a rendered object is an SFSecret, which the worker handles instead of the apiserver. */
export const isGeneratedSecret = (obj: { readonly apiVersion?: unknown; readonly kind?: unknown }): boolean =>
  obj.kind === SFSECRET_KIND && obj.apiVersion === OSB_API_VERSION;

/** A name the Secret `<name>-v<N>` can carry: a DNS label with room for the version. */
const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_SECRET_NAME = 240;
/** A DNS name or an IP address, as a certificate's alternative names hold them. */
const ALTERNATIVE_NAME = /^(\*\.)?[A-Za-z0-9]([-A-Za-z0-9.:]*[A-Za-z0-9])?$/;

const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/** Options each type takes, besides `type` and `secretName`. */
const OPTIONS: Record<GeneratedSecretType, readonly string[]> = {
  password: ['length'],
  rsa: ['bits'],
  ssh: ['bits'],
  certificate: ['commonName', 'alternativeNames', 'isCA', 'ca', 'validityDays'],
};

/**
 * The SFSecret `obj` asks for, or why it is not a valid one: an unknown type, an option of another
 * type, a value out of bounds. The problem is a sentence for the operation's description.
 */
export function parseGeneratedSecret(obj: KubeObject): GeneratedSecretSpec | { readonly problem: string } {
  const name = obj.metadata?.name;
  const what = `SFSecret ${typeof name === 'string' && name ? name : '(unnamed)'}`;
  const fail = (problem: string) => ({ problem: `${what}: ${problem}` });
  if (typeof name !== 'string' || !SECRET_NAME.test(name) || name.length > MAX_SECRET_NAME)
    return fail(
      `metadata.name must be lowercase letters, digits and dashes, at most ${MAX_SECRET_NAME} characters`,
    );
  const spec = obj.spec;
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) return fail('it has no spec');
  const s = spec as Record<string, unknown>;
  const type = s.type;
  if (!(GENERATED_SECRET_TYPES as readonly unknown[]).includes(type))
    return fail(`spec.type ${JSON.stringify(type)} is not one of ${GENERATED_SECRET_TYPES.join(', ')}`);
  const t = type as GeneratedSecretType;
  const unknown = Object.keys(s).filter((k) => k !== 'type' && k !== 'secretName' && !OPTIONS[t].includes(k));
  if (unknown.length > 0)
    return fail(
      `spec.${unknown[0]} is no option of a ${t}; a ${t} takes ${['secretName', ...OPTIONS[t]].join(', ')}`,
    );
  const secretName = s.secretName ?? name;
  if (typeof secretName !== 'string' || !SECRET_NAME.test(secretName) || secretName.length > MAX_SECRET_NAME)
    return fail(
      `spec.secretName must be lowercase letters, digits and dashes, at most ${MAX_SECRET_NAME} characters`,
    );
  const base = { name, type: t, secretName };
  switch (t) {
    case 'password': {
      const length = s.length ?? DEFAULT_PASSWORD_LENGTH;
      if (!isInteger(length) || length < PASSWORD_LENGTH.min || length > PASSWORD_LENGTH.max)
        return fail(
          `spec.length must be a whole number from ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max}`,
        );
      return { ...base, length };
    }
    case 'rsa':
    case 'ssh': {
      const bits = s.bits ?? KEY_BITS[0];
      if (!(KEY_BITS as readonly unknown[]).includes(bits))
        return fail(`spec.bits must be one of ${KEY_BITS.join(', ')}`);
      return { ...base, bits: bits as number };
    }
    case 'certificate':
      return parseCertificate(s, base, fail);
  }
}

function parseCertificate(
  s: Record<string, unknown>,
  base: { readonly name: string; readonly type: GeneratedSecretType; readonly secretName: string },
  fail: (problem: string) => { readonly problem: string },
): GeneratedSecretSpec | { readonly problem: string } {
  const { commonName, alternativeNames = [], isCA = false, ca, validityDays } = s;
  if (typeof commonName !== 'string' || commonName.length === 0 || commonName.length > 64)
    return fail('spec.commonName must be a text of 1 to 64 characters');
  if (
    !Array.isArray(alternativeNames) ||
    alternativeNames.some((n) => typeof n !== 'string' || !ALTERNATIVE_NAME.test(n))
  )
    return fail('spec.alternativeNames must be a list of DNS names or IP addresses');
  if (typeof isCA !== 'boolean') return fail('spec.isCA must be true or false');
  const days = validityDays ?? (isCA ? DEFAULT_VALIDITY_DAYS.ca : DEFAULT_VALIDITY_DAYS.certificate);
  if (!isInteger(days) || days < 1 || days > MAX_VALIDITY_DAYS)
    return fail(`spec.validityDays must be a whole number from 1 to ${MAX_VALIDITY_DAYS}`);
  let authority: CertificateAuthority | undefined;
  if (ca !== undefined) {
    const c = ca as Record<string, unknown>;
    const keys = ca && typeof ca === 'object' && !Array.isArray(ca) ? Object.keys(c) : [];
    const valid =
      keys.length === 1 &&
      (keys[0] === 'generated' || keys[0] === 'secretName') &&
      typeof c[keys[0]] === 'string' &&
      SECRET_NAME.test(c[keys[0]] as string);
    if (!valid)
      return fail(
        'spec.ca must be {generated: <an SFSecret of the instance>} or {secretName: <a Secret with tls.crt and tls.key>}',
      );
    authority =
      keys[0] === 'generated' ? { generated: c.generated as string } : { secretName: c.secretName as string };
    if ('generated' in authority && authority.generated === base.name)
      return fail('spec.ca names the SFSecret itself');
  }
  return {
    ...base,
    commonName,
    alternativeNames: alternativeNames as string[],
    isCA,
    validityDays: days,
    ...(authority ? { ca: authority } : {}),
  };
}

/**
 * The SFSecrets of one render, in the order they must be generated (a CA before the certificates
 * it signs), or why they cannot be: a name used twice, a `ca` that names no generated CA.
 */
export function generationOrder(
  specs: readonly GeneratedSecretSpec[],
): readonly GeneratedSecretSpec[] | { readonly problem: string } {
  const byName = new Map<string, GeneratedSecretSpec>();
  const secretNames = new Set<string>();
  for (const spec of specs) {
    if (byName.has(spec.name)) return { problem: `SFSecret ${spec.name} is rendered twice` };
    if (secretNames.has(spec.secretName))
      return { problem: `two SFSecrets use the secretName ${spec.secretName}` };
    byName.set(spec.name, spec);
    secretNames.add(spec.secretName);
  }
  for (const spec of specs) {
    if (!spec.ca || !('generated' in spec.ca)) continue;
    const signer = byName.get(spec.ca.generated);
    if (!signer)
      return {
        problem: `SFSecret ${spec.name}: spec.ca names ${spec.ca.generated}, which the template does not render`,
      };
    if (signer.type !== 'certificate' || !signer.isCA)
      return {
        problem: `SFSecret ${spec.name}: spec.ca names ${signer.name}, which is no certificate with isCA: true`,
      };
  }
  const ordered: GeneratedSecretSpec[] = [];
  const placed = new Set<string>();
  const visiting = new Set<string>();
  const visit = (spec: GeneratedSecretSpec): string | undefined => {
    if (placed.has(spec.name)) return undefined;
    if (visiting.has(spec.name)) return `SFSecret ${spec.name} is signed, through its CAs, by itself`;
    visiting.add(spec.name);
    if (spec.ca && 'generated' in spec.ca) {
      const problem = visit(byName.get(spec.ca.generated)!);
      if (problem) return problem;
    }
    visiting.delete(spec.name);
    placed.add(spec.name);
    ordered.push(spec);
    return undefined;
  };
  for (const spec of specs) {
    const problem = visit(spec);
    if (problem) return { problem };
  }
  return ordered;
}

/**
 * What templates see as `.generated`: the current version of each secret the record keeps, and
 * version 1 of each one `declared` that it does not keep yet (it is generated before anything that
 * names it is applied).
 */
export function generatedTemplateData(
  recorded: readonly GeneratedSecretStatus[] | undefined,
  declared: readonly { readonly name: string; readonly secretName: string }[] = [],
): Record<string, GeneratedSecretData> {
  const data: Record<string, GeneratedSecretData> = {};
  for (const d of declared) data[d.name] = { secretName: versionedSecretName(d.secretName, 1), version: 1 };
  for (const r of recorded ?? []) data[r.name] = { secretName: r.secret, version: r.version };
  return data;
}

/** The declared secrets the record does not keep yet: those a render must name by their version 1. */
export const unrecorded = (
  recorded: readonly GeneratedSecretStatus[] | undefined,
  declared: readonly GeneratedSecretSpec[],
): GeneratedSecretSpec[] => declared.filter((d) => !(recorded ?? []).some((r) => r.name === d.name));

/**
 * The record's list once the declared secrets exist: what it kept, unchanged (a re-render never
 * changes a version), and version 1 of each new one, made `now`.
 */
export function recordedAfterGeneration(
  recorded: readonly GeneratedSecretStatus[] | undefined,
  declared: readonly GeneratedSecretSpec[],
  now: string,
): GeneratedSecretStatus[] {
  const kept = [...(recorded ?? [])];
  for (const d of unrecorded(recorded, declared))
    kept.push({
      name: d.name,
      type: d.type,
      secretName: d.secretName,
      version: 1,
      secret: versionedSecretName(d.secretName, 1),
      versions: [1],
      createdAt: now,
    });
  return kept;
}

/**
 * The entry once the rotation `runId` made version N+1, `now`: the current one, and version N kept
 * until unused. An entry that run already rotated stays as it is.
 */
export function rotated(entry: GeneratedSecretStatus, now: string, runId: string): GeneratedSecretStatus {
  if (entry.rotatedBy === runId) return entry;
  const version = entry.version + 1;
  return {
    ...entry,
    rotatedBy: runId,
    version,
    secret: versionedSecretName(entry.secretName, version),
    versions: [...new Set([...entry.versions, version])].sort((a, b) => a - b),
    createdAt: now,
  };
}

/**
 * The versions of an entry no longer used: older than the current one, and made before every
 * binding that still exists was (none names it in its `status.generatedSecrets`).
 */
export function unusedVersions(
  entry: GeneratedSecretStatus,
  bindings: readonly (readonly BindingSecretVersion[] | undefined)[],
): number[] {
  const used = new Set(
    bindings.flatMap((b) => (b ?? []).filter((v) => v.name === entry.name).map((v) => v.version)),
  );
  return entry.versions.filter((v) => v < entry.version && !used.has(v));
}

/** The versions a binding is made with: the current one of each generated secret. */
export const bindingVersions = (
  recorded: readonly GeneratedSecretStatus[] | undefined,
): BindingSecretVersion[] => (recorded ?? []).map(({ name, version, secret }) => ({ name, version, secret }));

/** Units of a `rotateAfter` duration, in seconds. */
const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * Seconds of a duration as plans write it: a whole number and a unit, `s`, `m`, `h` or `d`,
 * possibly several (`90d`, `12h`, `1h30m`); undefined when it is no such duration.
 */
export function parseDuration(text: unknown): number | undefined {
  if (typeof text !== 'string' || !/^(\d+[smhd])+$/.test(text)) return undefined;
  let seconds = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)([smhd])/g)) seconds += Number(n) * UNITS[unit!]!;
  return seconds > 0 ? seconds : undefined;
}

/** The generated secrets of a record whose current version is older than `rotateAfterSeconds` at `now` (ms). */
export function dueForRotation(
  recorded: readonly GeneratedSecretStatus[] | undefined,
  rotateAfterSeconds: number,
  now: number,
): GeneratedSecretStatus[] {
  return (recorded ?? []).filter((r) => Date.parse(r.createdAt) + rotateAfterSeconds * 1000 <= now);
}
