/**
 * The values of generated secrets: a password, an RSA or SSH key pair, a certificate. Keys come
 * from Node's crypto; certificates are built and signed with node-forge, since Node can parse and
 * verify X.509 certificates but not create them. Values go straight into the Secret's data and
 * never leave the activity that writes it.
 */
import { createHash, createPublicKey, generateKeyPair, randomBytes, randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import forge from 'node-forge';
import type { GeneratedSecretSpec } from '../resources/sfsecret.js';

/** A signer's certificate and private key, both PEM. */
export interface CertificateAuthorityKeys {
  readonly certificate: string;
  readonly privateKey: string;
}

const PASSWORD_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A password of `length` characters drawn uniformly from letters and digits. */
export function generatePassword(length: number): string {
  let password = '';
  for (let i = 0; i < length; i += 1) password += PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)];
  return password;
}

/**
 * An RSA key pair: the private key PKCS#1 PEM, the public key SPKI PEM. Made off the event loop
 * (a 4096-bit key takes a while), so the worker's other steps go on meanwhile.
 */
function rsaKeyPair(bits: number): Promise<{ privateKey: string; publicKey: string }> {
  return promisify(generateKeyPair)('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
}

/** An SSH wire-format string or mpint: a 4-byte length and the bytes. */
function sshField(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** An unsigned big-endian integer as an SSH mpint (a leading zero when its top bit is set). */
const mpint = (unsigned: Buffer): Buffer =>
  sshField(unsigned[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), unsigned]) : unsigned);

/** The OpenSSH public key line (`ssh-rsa AAAA…`) of an SPKI PEM RSA key, and its SHA256 fingerprint. */
export function openSshPublicKey(publicKeyPem: string): { line: string; fingerprint: string } {
  const jwk = rsaJwk(publicKeyPem);
  const blob = Buffer.concat([
    sshField(Buffer.from('ssh-rsa')),
    mpint(Buffer.from(jwk.e, 'base64url')),
    mpint(Buffer.from(jwk.n, 'base64url')),
  ]);
  const digest = createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
  return { line: `ssh-rsa ${blob.toString('base64')}`, fingerprint: `SHA256:${digest}` };
}

/** The modulus and exponent of an RSA public key, base64url, as its JWK gives them. */
const rsaJwk = (publicKeyPem: string) =>
  createPublicKey(publicKeyPem).export({ format: 'jwk' }) as { n: string; e: string };

/** A positive random serial number, hex. */
const serialNumber = (): string => `01${randomBytes(15).toString('hex')}`;

/** An alternative name as X.509 writes it: an IP address (7) or a DNS name (2). */
const altName = (name: string) =>
  /^[\d.]+$/.test(name) || name.includes(':') ? { type: 7, ip: name } : { type: 2, value: name };

/**
 * A certificate for `spec`, signed by `ca` (self-signed without one): a CA's may sign others; a
 * leaf's serves and authenticates TLS. Returns the certificate, its private key and the CA's
 * certificate (its own when self-signed), all PEM.
 */
export async function generateCertificate(
  spec: GeneratedSecretSpec,
  ca: CertificateAuthorityKeys | undefined,
  now: Date = new Date(),
): Promise<Record<'tls.crt' | 'tls.key' | 'ca.crt', string>> {
  const keys = await rsaKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKey);
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + (spec.validityDays ?? 365) * 86_400_000);
  const subject = [{ name: 'commonName', value: spec.commonName ?? spec.name }];
  cert.setSubject(subject);
  const signer = ca ? forge.pki.certificateFromPem(ca.certificate) : undefined;
  cert.setIssuer(signer ? signer.subject.attributes : subject);
  const names = [
    ...new Set([...(spec.isCA ? [] : [spec.commonName ?? spec.name]), ...(spec.alternativeNames ?? [])]),
  ];
  cert.setExtensions([
    { name: 'basicConstraints', cA: spec.isCA === true, critical: true },
    spec.isCA
      ? { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true }
      : { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    ...(spec.isCA ? [] : [{ name: 'extKeyUsage', serverAuth: true, clientAuth: true }]),
    ...(names.length > 0 ? [{ name: 'subjectAltName', altNames: names.map(altName) }] : []),
    { name: 'subjectKeyIdentifier' },
    ...(signer
      ? [{ name: 'authorityKeyIdentifier', keyIdentifier: signer.generateSubjectKeyIdentifier().getBytes() }]
      : []),
  ]);
  const signingKey = forge.pki.privateKeyFromPem(ca ? ca.privateKey : keys.privateKey);
  cert.sign(signingKey, forge.md.sha256.create());
  const certificate = forge.pki.certificateToPem(cert);
  return { 'tls.crt': certificate, 'tls.key': keys.privateKey, 'ca.crt': ca ? ca.certificate : certificate };
}

/**
 * The data of a new version of a generated secret (plain text by key; the caller encodes it into
 * the Secret). `ca` is the signer of a certificate that names one.
 */
export async function generateSecretData(
  spec: GeneratedSecretSpec,
  ca?: CertificateAuthorityKeys,
): Promise<Record<string, string>> {
  switch (spec.type) {
    case 'password':
      return { password: generatePassword(spec.length ?? 32) };
    case 'rsa': {
      const { privateKey, publicKey } = await rsaKeyPair(spec.bits ?? 2048);
      return { private_key: privateKey, public_key: publicKey };
    }
    case 'ssh': {
      const { privateKey, publicKey } = await rsaKeyPair(spec.bits ?? 2048);
      const { line, fingerprint } = openSshPublicKey(publicKey);
      return { private_key: privateKey, public_key: line, public_key_fingerprint: fingerprint };
    }
    case 'certificate':
      return generateCertificate(spec, ca);
  }
}
