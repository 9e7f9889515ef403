/**
 * The payload keys of a cluster with a worker of its own: derived from the master keys, chosen by
 * the codec for the payloads marked for that cluster, and good for nothing else. The landscape
 * (master keys) reads everything; the cluster's worker (its derived keys) reads only what was
 * encrypted for its cluster, and what it answers the landscape reads.
 */
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  clusterKeyOf,
  deriveClusterKey,
  EncryptionCodec,
  formatPayloadKeys,
  parsePayloadKeys,
  type PayloadKey,
} from '../../../src/temporal/codec.js';
import { ENCRYPTION_CLUSTER, payloadConverter } from '../../../src/temporal/payload-converter.js';
import { clusterOf, forCluster } from '../../../src/workflows/for-cluster.js';

const k1: PayloadKey = { id: 'k1', key: Buffer.alloc(32, 1) };
const k2: PayloadKey = { id: 'k2', key: Buffer.alloc(32, 2) };
const landscape = new EncryptionCodec([k2, k1]);
const clusterWorker = (clusterId: string) =>
  new EncryptionCodec([deriveClusterKey(k2, clusterId), deriveClusterKey(k1, clusterId)]);

const value = { instanceId: 'i-1', parameters: { password: 'from the request' } };
const keyId = (payload: Payload) => Buffer.from(payload.metadata?.['encryption-key-id'] ?? []).toString();
const plain = (payload: Payload) => payloadConverter.fromPayload(payload);

describe('deriving a cluster’s keys', () => {
  test('GIVEN a master key THEN the key of cluster 2 is HKDF-SHA256 of it, with info "interoperator cluster 2", named <id>@2', () => {
    const derived = deriveClusterKey(k1, '2');
    expect(derived.id).toBe('k1@2');
    expect(derived.key.toString('base64')).toBe('ecx4xedKiChVFuzHxUq1EHzfd5IlF4DDYjq8iYdNjoo=');
  });

  test('GIVEN two clusters THEN two keys, neither the master key', () => {
    const [two, three] = [deriveClusterKey(k1, '2').key, deriveClusterKey(k1, '3').key];
    expect(two.equals(three)).toBe(false);
    expect(two.equals(k1.key)).toBe(false);
  });

  test('GIVEN a derived key THEN nothing is derived from it', () => {
    expect(() => deriveClusterKey(deriveClusterKey(k1, '2'), '3')).toThrow(/a cluster's key already/);
  });

  test.each([
    ['k1@2', { masterId: 'k1', clusterId: '2' }],
    ['k1@sister-eu.1', { masterId: 'k1', clusterId: 'sister-eu.1' }],
    ['k1', undefined],
    ['@2', undefined],
    ['k1@', undefined],
  ])('GIVEN the key id %s THEN its master key and cluster: %j', (id, expected) => {
    expect(clusterKeyOf(id)).toEqual(expected);
  });

  test('GIVEN derived keys printed as INTEROP_PAYLOAD_KEYS takes them THEN they read back the same', () => {
    const derived = [deriveClusterKey(k2, '2'), deriveClusterKey(k1, '2')];
    expect(parsePayloadKeys(formatPayloadKeys(derived))).toEqual(derived);
  });
});

describe('a value marked for a cluster', () => {
  test('GIVEN a marked value THEN its payload is the value’s own, with the cluster in the metadata', () => {
    const marked = forCluster('2', value);
    expect(clusterOf(marked)).toBe('2');
    expect(clusterOf(value)).toBeUndefined();
    const payload = payloadConverter.toPayload(marked);
    expect(Buffer.from(payload.metadata![ENCRYPTION_CLUSTER]!).toString()).toBe('2');
    expect(plain(payload)).toEqual(value);
    expect(plain(payloadConverter.toPayload(forCluster('2', undefined)))).toBeUndefined();
  });

  test('GIVEN an unmarked value THEN its payload is the default converter’s', () => {
    expect(payloadConverter.toPayload(value)).toEqual(defaultPayloadConverter.toPayload(value));
  });
});

describe('encrypting with a cluster’s key', () => {
  test('GIVEN a step’s argument marked for cluster 2 WHEN the landscape encrypts it THEN with k2@2, and cluster 2’s worker reads it', async () => {
    const [encrypted] = await landscape.encode([payloadConverter.toPayload(forCluster('2', value))]);
    expect(keyId(encrypted!)).toBe('k2@2');
    expect(plain((await clusterWorker('2').decode([encrypted!]))[0]!)).toEqual(value);
    // the landscape reads it too (the Web UI's codec endpoint, a replay)
    expect(plain((await landscape.decode([encrypted!]))[0]!)).toEqual(value);
  });

  test('GIVEN what cluster 2’s worker answers THEN it is encrypted with its first key, and the landscape reads it', async () => {
    const [answer] = await clusterWorker('2').encode([payloadConverter.toPayload({ ready: true })]);
    expect(keyId(answer!)).toBe('k2@2');
    expect(plain((await landscape.decode([answer!]))[0]!)).toEqual({ ready: true });
  });

  test('GIVEN a payload encrypted with the old master key WHEN the worker rotated to k2 derives k1@2 THEN it still reads it', async () => {
    const [old] = await new EncryptionCodec([k1]).encode([
      payloadConverter.toPayload(forCluster('2', value)),
    ]);
    expect(keyId(old!)).toBe('k1@2');
    expect(plain((await clusterWorker('2').decode([old!]))[0]!)).toEqual(value);
  });

  test('GIVEN a workflow’s own payload (the master key) THEN cluster 2’s worker cannot read it', async () => {
    const [own] = await landscape.encode([payloadConverter.toPayload(value)]);
    expect(keyId(own!)).toBe('k2');
    await expect(clusterWorker('2').decode([own!])).rejects.toThrow(
      /encrypted with key "k2", which is not configured/,
    );
  });

  test('GIVEN a step’s argument for cluster 3 THEN cluster 2’s worker cannot read it', async () => {
    const [forThree] = await landscape.encode([payloadConverter.toPayload(forCluster('3', value))]);
    expect(keyId(forThree!)).toBe('k2@3');
    await expect(clusterWorker('2').decode([forThree!])).rejects.toThrow(/"k2@3", which is not configured/);
  });

  test('GIVEN a payload relabelled with another key id THEN it does not decrypt', async () => {
    const [forThree] = await landscape.encode([payloadConverter.toPayload(forCluster('3', value))]);
    const relabelled = {
      ...forThree!,
      metadata: { ...forThree!.metadata, 'encryption-key-id': Buffer.from('k2@2') },
    };
    await expect(clusterWorker('2').decode([relabelled])).rejects.toThrow();
  });

  test('GIVEN cluster 2’s worker WHEN asked to encrypt for cluster 3 THEN it refuses', async () => {
    await expect(
      clusterWorker('2').encode([payloadConverter.toPayload(forCluster('3', value))]),
    ).rejects.toThrow(/for cluster 3 cannot be encrypted with the key of cluster 2/);
  });
});

describe('payloads from before the clusters’ keys', () => {
  // Encrypted by the codec as it was before clusters had keys of their own: master key k1 (32 bytes of 1).
  const before: Payload = {
    metadata: {
      encoding: Buffer.from('binary/encrypted'),
      'encryption-key-id': Buffer.from('k1'),
    },
    data: Buffer.from(
      'FClXMRL8oKEwWKJdB7yp+YKi6RtySre71kzwnxaKt8aodntTPepefiyen/dvuYWT0CZmOmo1dS9HuhTRCeuDr6WIEEEmkrghBr4vm3+g9Uy3OJVSGbpcFzObEnqUKGBBHSAorWq+sbau9cW88qKXj86tqrpevsk=',
      'base64',
    ),
  };

  test('GIVEN a history’s payload encrypted with a master key id THEN the landscape still reads it', async () => {
    expect(plain((await landscape.decode([before]))[0]!)).toEqual(value);
  });

  test('GIVEN such a payload THEN a cluster’s worker cannot', async () => {
    await expect(clusterWorker('2').decode([before])).rejects.toThrow(/"k1", which is not configured/);
  });
});
