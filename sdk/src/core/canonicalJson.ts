/**
 * RFC 8785 (JSON Canonicalization Scheme) text of a JSON value: object members sorted by
 * their names' UTF-16 code units, no whitespace, strings and numbers as ECMAScript's
 * JSON.stringify writes them (which is what RFC 8785 specifies). What a passport's
 * signature covers, computed here so verification needs nothing but Node.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('JSON has no form for a non-finite number');
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`JSON has no form for ${typeof value}`);
    return text;
  }
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const record = value as Record<string, unknown>;
  const names = Object.keys(record).filter((k) => record[k] !== undefined).sort();
  return `{${names.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
}
