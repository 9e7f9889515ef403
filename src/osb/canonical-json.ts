/**
 * JSON that equal values write alike, whatever the order of their keys: what tells a request sent
 * again from a different one, and a context repeated from a changed one. Pure.
 */

/**
 * JSON with the keys of every object sorted (by code unit) and `undefined` members left out: equal
 * values give equal text whatever their key order. `undefined` alone is `null`.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}
