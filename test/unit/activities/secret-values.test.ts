/**
 * The values of generated secrets: passwords of the asked length and alphabet, RSA keys Node reads,
 * SSH public keys in OpenSSH's format, and certificates that verify against the CA that signed them.
 */
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import {
  generateCertificate,
  generatePassword,
  generateSecretData,
  openSshPublicKey,
} from '../../../src/activities/secret-values.js';
import type { GeneratedSecretSpec } from '../../../src/resources/sfsecret.js';

const cert = (name: string, extra: Partial<GeneratedSecretSpec> = {}): GeneratedSecretSpec => ({
  name,
  type: 'certificate',
  secretName: name,
  commonName: name,
  alternativeNames: [],
  validityDays: 30,
  ...extra,
});

test('GIVEN a length THEN the password has that many letters and digits, and two differ', () => {
  const a = generatePassword(40);
  expect(a).toMatch(/^[A-Za-z0-9]{40}$/);
  expect(generatePassword(40)).not.toBe(a);
});

test('GIVEN an rsa SFSecret THEN the keys are PEM that Node reads, of the asked size', async () => {
  const data = await generateSecretData({ name: 'k', type: 'rsa', secretName: 'k', bits: 2048 });
  expect(Object.keys(data).sort()).toEqual(['private_key', 'public_key']);
  expect(createPrivateKey(data.private_key!).asymmetricKeyDetails?.modulusLength).toBe(2048);
  expect(createPublicKey(data.public_key!).asymmetricKeyType).toBe('rsa');
});

test('GIVEN an ssh SFSecret THEN the public key is an OpenSSH line of the private key, with its fingerprint', async () => {
  const data = await generateSecretData({ name: 'k', type: 'ssh', secretName: 'k', bits: 2048 });
  expect(data.public_key).toMatch(/^ssh-rsa AAAAB3NzaC1yc2E[A-Za-z0-9+/]+=*$/);
  expect(data.public_key_fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  const pub = createPublicKey(createPrivateKey(data.private_key!)).export({ type: 'spki', format: 'pem' });
  expect(openSshPublicKey(String(pub)).line).toBe(data.public_key);
});

test('GIVEN a known key THEN its OpenSSH line encodes the exponent and modulus as mpints', () => {
  const { line } = openSshPublicKey(
    String(
      createPublicKey({
        key: { kty: 'RSA', e: 'AQAB', n: `_${'A'.repeat(340)}w` },
        format: 'jwk',
      }).export({ type: 'spki', format: 'pem' }),
    ),
  );
  const blob = Buffer.from(line.split(' ')[1]!, 'base64');
  expect(blob.readUInt32BE(0)).toBe(7);
  expect(blob.subarray(4, 11).toString()).toBe('ssh-rsa');
  expect(blob.readUInt32BE(11)).toBe(3);
  expect([...blob.subarray(15, 18)]).toEqual([1, 0, 1]);
  // The modulus starts with a set top bit (0xfc…): its mpint carries a leading zero.
  expect(blob.readUInt32BE(18)).toBe(257);
  expect(blob[22]).toBe(0);
});

describe('certificates', () => {
  let ca: Record<string, string>;
  let caKeys: { certificate: string; privateKey: string };
  beforeAll(async () => {
    ca = await generateCertificate(cert('root CA', { isCA: true }), undefined);
    caKeys = { certificate: ca['tls.crt']!, privateKey: ca['tls.key']! };
  });

  test('GIVEN no CA THEN the certificate is self-signed and a CA when asked', () => {
    const x = new X509Certificate(ca['tls.crt']!);
    expect(x.ca).toBe(true);
    expect(x.subject).toBe('CN=root CA');
    expect(x.verify(x.publicKey)).toBe(true);
    expect(ca['ca.crt']).toBe(ca['tls.crt']);
    expect(createPrivateKey(ca['tls.key']!).asymmetricKeyType).toBe('rsa');
  });

  test('GIVEN a CA THEN the certificate verifies against it, names its alternative names and lasts as asked', async () => {
    const leaf = await generateCertificate(
      cert('db', { alternativeNames: ['db.ns.svc', '10.1.2.3'], ca: { generated: 'root' } }),
      caKeys,
      new Date('2026-01-01T00:00:00Z'),
    );
    const x = new X509Certificate(leaf['tls.crt']);
    const root = new X509Certificate(ca['tls.crt']!);
    expect(x.ca).toBe(false);
    expect(x.verify(root.publicKey)).toBe(true);
    expect(x.checkIssued(root)).toBe(true);
    expect(x.subjectAltName).toBe('DNS:db, DNS:db.ns.svc, IP Address:10.1.2.3');
    expect(x.validTo).toBe('Jan 31 00:00:00 2026 GMT');
    expect(leaf['ca.crt']).toBe(ca['tls.crt']);
    expect(x.checkPrivateKey(createPrivateKey(leaf['tls.key']))).toBe(true);
    expect(x.verify(x.publicKey)).toBe(false);
  });
});
