/**
 * Encrypts every payload Temporal stores (workflow inputs and results, activity inputs and
 * results, memos, failure details) with AES-256-GCM, so request parameters and anything a
 * template renders never sit in workflow history or the Web UI in plain text. Search attributes
 * are not payloads and stay readable, which is why they only ever hold ids.
 *
 * Keys are named, so a key can be rotated: new payloads use the first key, old ones are decoded
 * with whichever key they name.
 *
 * A cluster with a worker of its own gets keys of its own, derived from the landscape's keys
 * (the master keys) by HKDF-SHA256 with the info `interoperator cluster <cluster id>`: key `k1`
 * derived for cluster `2` is named `k1@2`. The steps sent to that worker carry their arguments
 * encrypted with the cluster's key (payload-converter.ts marks them), and the worker encrypts
 * what it answers with its first key. The landscape's processes hold the master keys and derive
 * any cluster's key from them; the cluster's worker holds its derived keys only, so it reads its
 * own steps and nothing else of a workflow's history, and nothing of another cluster's steps.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import proto from '@temporalio/proto';
import { ENCRYPTION_CLUSTER } from './payload-converter.js';

const { temporal } = proto;

const ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What joins a master key's id and a cluster's id in the id of the key derived for that cluster. */
const CLUSTER_KEY_SEPARATOR = '@';

export interface PayloadKey {
  readonly id: string;
  /** 32 bytes. */
  readonly key: Buffer;
}

/** Parses `id:base64,id:base64` (the first key encrypts); a single bare base64 key gets id `k1`. */
export function parsePayloadKeys(text: string): PayloadKey[] {
  const keys = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part, i) => {
      const [id, b64] = part.includes(':') ? (part.split(':', 2) as [string, string]) : [`k${i + 1}`, part];
      const key = Buffer.from(b64, 'base64');
      if (key.length !== 32) throw new Error(`payload key "${id}" must be 32 bytes, base64-encoded`);
      return { id, key };
    });
  if (keys.length === 0) throw new Error('no payload encryption key configured');
  // A payload names the key it was encrypted with by id: two keys of one id could not be told apart.
  const twice = keys.find((k, i) => keys.findIndex((other) => other.id === k.id) !== i);
  if (twice) throw new Error(`payload key id "${twice.id}" is given twice: give each key an id of its own`);
  return keys;
}

/** Keys in the form INTEROP_PAYLOAD_KEYS takes: `id:base64[,id:base64]`. */
export const formatPayloadKeys = (keys: readonly PayloadKey[]): string =>
  keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(',');

/** A fresh key in the `id:base64` form, for the dev stack and tests. */
export const generatePayloadKey = (id = 'k1'): string => `${id}:${randomBytes(32).toString('base64')}`;

/** The id of the key derived from master key `masterId` for cluster `clusterId`. */
export const clusterKeyId = (masterId: string, clusterId: string): string =>
  `${masterId}${CLUSTER_KEY_SEPARATOR}${clusterId}`;

/** The master key's id and the cluster's of a derived key's id; undefined for a master key's id. */
export function clusterKeyOf(
  id: string,
): { readonly masterId: string; readonly clusterId: string } | undefined {
  const at = id.lastIndexOf(CLUSTER_KEY_SEPARATOR);
  if (at <= 0 || at === id.length - 1) return undefined;
  return { masterId: id.slice(0, at), clusterId: id.slice(at + 1) };
}

/** The key of cluster `clusterId` derived from a master key: HKDF-SHA256, no salt, info `interoperator cluster <id>`. */
export function deriveClusterKey(master: PayloadKey, clusterId: string): PayloadKey {
  if (clusterKeyOf(master.id))
    throw new Error(`payload key "${master.id}" is a cluster's key already: derive from the master keys`);
  const key = Buffer.from(
    hkdfSync('sha256', master.key, Buffer.alloc(0), `interoperator cluster ${clusterId}`, 32),
  );
  return { id: clusterKeyId(master.id, clusterId), key };
}

/**
 * Why these keys are wrong for the process, or undefined when they are right: a worker of one
 * cluster (`clusterId`) holds only keys derived for it, and the landscape's processes only master
 * keys (a cluster's key would leave the workflows' histories readable to that cluster's worker).
 */
export function payloadKeysRefusal(keys: readonly PayloadKey[], clusterId?: string): string | undefined {
  if (clusterId === undefined) {
    const derived = keys.find((k) => clusterKeyOf(k.id));
    return derived
      ? `key "${derived.id}" is a key derived for cluster ${clusterKeyOf(derived.id)!.clusterId}; the landscape's broker and workers hold the master keys (ids without "${CLUSTER_KEY_SEPARATOR}")`
      : undefined;
  }
  const foreign = keys.find((k) => clusterKeyOf(k.id)?.clusterId !== clusterId);
  return foreign
    ? `key "${foreign.id}" is not derived for cluster ${clusterId}: its worker holds only the keys derived for it, named <id>${CLUSTER_KEY_SEPARATOR}${clusterId} (\`interoperator payload-key derive --cluster ${clusterId}\` prints them from the master keys)`
    : undefined;
}

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | null | undefined) => new TextDecoder().decode(bytes ?? new Uint8Array());

export class EncryptionCodec implements PayloadCodec {
  private readonly byId: ReadonlyMap<string, PayloadKey>;

  constructor(private readonly keys: readonly PayloadKey[]) {
    if (keys.length === 0) throw new Error('EncryptionCodec needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const cluster = payload.metadata?.[ENCRYPTION_CLUSTER];
      const { id, key } = this.encryptingKey(cluster ? text(cluster) : undefined);
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { [METADATA_ENCODING_KEY]: utf8(ENCODING), [KEY_ID]: utf8(id) }, data };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
      if (!encoding || text(encoding) !== ENCODING) return payload;
      const id = text(payload.metadata?.[KEY_ID]);
      const key = this.keyNamed(id);
      if (!key) throw new Error(`payload was encrypted with key "${id}", which is not configured`);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      const decipher = createDecipheriv('aes-256-gcm', key.key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }

  /**
   * The key a payload is encrypted with: the first; for a payload marked for a cluster, that
   * cluster's key derived from the first (a cluster's worker holds it as its first).
   */
  private encryptingKey(clusterId: string | undefined): PayloadKey {
    const first = this.keys[0]!;
    if (clusterId === undefined) return first;
    const derivedFor = clusterKeyOf(first.id)?.clusterId;
    if (derivedFor === clusterId) return first;
    if (derivedFor !== undefined)
      throw new Error(
        `a payload for cluster ${clusterId} cannot be encrypted with the key of cluster ${derivedFor}`,
      );
    return this.keyNamed(clusterKeyId(first.id, clusterId))!;
  }

  /** The key of an id: held, or derived from a master key held. */
  private keyNamed(id: string): PayloadKey | undefined {
    const held = this.byId.get(id);
    if (held) return held;
    const derived = clusterKeyOf(id);
    const master = derived && this.byId.get(derived.masterId);
    if (!master || clusterKeyOf(master.id)) return undefined;
    return deriveClusterKey(master, derived.clusterId);
  }
}
