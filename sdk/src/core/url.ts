/**
 * URL building. Path segments are always percent-encoded (a Hub reference such as
 * `platform/sir-epidemic@1.0.0` is one segment), and query values follow the contract's
 * form style: arrays repeat the key, null/undefined are left out, and an object value
 * becomes bracketed keys (`metadata[study]=x`, the run list's metadata filter).
 */

/** A tagged template that percent-encodes every interpolated value: path`/runs/${id}`. */
export function path(strings: TemplateStringsArray, ...values: Array<string | number>): string {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(String(values[i])) : ''), '');
}

export type QueryValue = string | number | boolean | null | undefined | ReadonlyArray<string | number | boolean> | Readonly<Record<string, string | number | boolean>>;
export type QueryInput = Readonly<Record<string, QueryValue>>;

/** `?a=1&b=x` (or '' when nothing is set). */
export function queryString(query: QueryInput | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === null || value === undefined) continue;
    if (Array.isArray(value)) {
      for (const v of value as ReadonlyArray<string | number | boolean>) params.append(key, String(v));
    } else if (typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) params.append(`${key}[${k}]`, String(v));
    } else {
      params.append(key, String(value));
    }
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}
