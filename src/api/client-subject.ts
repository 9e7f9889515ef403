/**
 * The subject of a client certificate, as an ingress that ends mutual TLS passes it on
 * (`ssl-client-subject-dn`), compared with the subject the broker expects, as Service Fabrik's
 * broker compares them: each a set of relative distinguished names (RDNs), equal when they hold
 * the same RDNs whatever their order. Pure.
 */

/** A subject as a set of RDNs, each `TYPE=value` with the type in capitals and spaces trimmed. */
export type SubjectRdns = ReadonlySet<string>;

/** Splits `text` at each `separator` not escaped with a backslash. */
function splitUnescaped(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      current += c + text[i + 1]!;
      i++;
    } else if (c === separator) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}

/** One RDN in its compared form, or undefined when it is not `type=value`. */
function normalRdn(rdn: string): string | undefined {
  const eq = rdn.indexOf('=');
  if (eq <= 0) return undefined;
  const type = rdn.slice(0, eq).trim().toUpperCase();
  const value = rdn.slice(eq + 1).trim();
  if (!type || !value) return undefined;
  return `${type}=${value}`;
}

/**
 * The RDNs of a subject written as RFC 4514 (`CN=broker,OU=Platform,O=Example,C=DE`, what an
 * ingress passes on) or as OpenSSL's one-line form (`/C=DE/O=Example/OU=Platform/CN=broker`, the
 * form of Service Fabrik's `sm_certificate_subject_pattern`); undefined when it is empty or any
 * part of it is not `type=value`.
 */
export function subjectRdns(subject: string): SubjectRdns | undefined {
  const text = subject.trim();
  if (!text) return undefined;
  const parts = text.startsWith('/') ? splitUnescaped(text.slice(1), '/') : splitUnescaped(text, ',');
  const rdns = new Set<string>();
  for (const part of parts) {
    const rdn = normalRdn(part);
    if (!rdn) return undefined;
    rdns.add(rdn);
  }
  return rdns;
}

/** Whether two subjects hold the same RDNs (order and spaces around `,` and `=` aside). */
export function sameSubject(given: SubjectRdns | undefined, expected: SubjectRdns): boolean {
  if (!given || given.size !== expected.size) return false;
  for (const rdn of expected) if (!given.has(rdn)) return false;
  return true;
}
