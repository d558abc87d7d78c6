/** How the console writes numbers a scientist reads: dollars, sizes, times and digests. */
const usdFormat = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 });

export function usd(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : usdFormat.format(value);
}

const SIZE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function bytes(value: number): string {
  let v = value;
  let i = 0;
  while (v >= 1024 && i < SIZE_UNITS.length - 1) { v /= 1024; i++; }
  return `${i === 0 ? v : v.toFixed(1)} ${SIZE_UNITS[i]}`;
}

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '—';
}

export function shortDigest(sha256: string): string {
  const hex = sha256.replace(/^sha256:/, '');
  return `${hex.slice(0, 12)}…`;
}

/** A value of any JSON type as one line. */
export function valueText(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+(e|$)/, '$1');
  return typeof v === 'string' ? v : JSON.stringify(v);
}
