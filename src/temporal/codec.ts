/**
 * Encrypts every payload Temporal stores (workflow inputs and results, activity inputs and
 * results, memos, failure details) with AES-256-GCM, so request parameters and anything a
 * template renders never sit in workflow history or the Web UI in plain text. Search attributes
 * are not payloads and stay readable, which is why they only ever hold ids.
 *
 * Keys are named, so a key can be rotated: new payloads use the first key, old ones are decoded
 * with whichever key they name.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

const ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

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

/** A fresh key in the `id:base64` form, for the dev stack and tests. */
export const generatePayloadKey = (id = 'k1'): string => `${id}:${randomBytes(32).toString('base64')}`;

const utf8 = (text: string) => new TextEncoder().encode(text);

export class EncryptionCodec implements PayloadCodec {
  private readonly byId: ReadonlyMap<string, Buffer>;

  constructor(private readonly keys: readonly PayloadKey[]) {
    if (keys.length === 0) throw new Error('EncryptionCodec needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys[0]!;
    return payloads.map((payload) => {
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
      if (!encoding || new TextDecoder().decode(encoding) !== ENCODING) return payload;
      const id = new TextDecoder().decode(payload.metadata?.[KEY_ID] ?? new Uint8Array());
      const key = this.byId.get(id);
      if (!key) throw new Error(`payload was encrypted with key "${id}", which is not configured`);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}
