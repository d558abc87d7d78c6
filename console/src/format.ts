/** How the console writes numbers a scientist reads: dollars, sizes, times and digests. */
import { format, precisionFixed, precisionRound } from 'd3-format';

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

/**
 * Labels of an axis's ticks with as many decimals as their spacing needs, so ticks over a
 * narrow range (1.5460, 1.5465, 1.5470) stay distinct: d3-format's precision for the
 * smallest step between them, with thousands grouped.
 */
export function tickLabels(splits: readonly number[]): string[] {
  let step = Infinity;
  for (let i = 1; i < splits.length; i++) step = Math.min(step, Math.abs(splits[i]! - splits[i - 1]!));
  if (!Number.isFinite(step) || step === 0) return splits.map((v) => format(',')(v));
  const fixed = format(`,.${precisionFixed(step)}f`);
  // Past a handful of digits a fixed form is unreadable: exponent form with the digits the step needs.
  const largest = Math.max(...splits.map(Math.abs));
  if (largest >= 1e9 || step < 1e-6) return splits.map(format(`.${precisionRound(step, largest)}~e`));
  // A tick a rounding error away from zero is zero (never "−0.0000").
  return splits.map((v) => fixed(Math.abs(v) < step * 1e-6 ? 0 : v));
}
