import { mean } from 'simple-statistics';
import type { CalibrationDesign, OutputSummary } from '../../storage/studyDesign.ts';

/** A run's time series as its CSV artifact holds it: times and values, in order. */
export interface Series { t: number[]; y: number[] }

/**
 * One number from an output: a number as it is, or a summary of a time series — its final
 * value, its largest, the mean of its points, or the time its largest is first reached.
 * Null when there is nothing to summarise.
 */
export function summarise(summary: Exclude<OutputSummary, 'series'>, value: unknown, series: Series | undefined): number | null {
  if (summary === 'value') return typeof value === 'number' && Number.isFinite(value) ? value : null;
  if (!series || !series.y.length) return null;
  const y = series.y;
  switch (summary) {
    case 'final': return y[y.length - 1]!;
    case 'max': return Math.max(...y);
    case 'mean': return mean(y);
    case 'time_of_max': return series.t[y.indexOf(Math.max(...y))]!;
  }
}

/** The series at time `t`: linear between its points, its end values beyond them. */
export function valueAt(s: Series, t: number): number {
  const { t: ts, y } = s;
  if (t <= ts[0]!) return y[0]!;
  if (t >= ts[ts.length - 1]!) return y[y.length - 1]!;
  let lo = 0;
  let hi = ts.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (ts[mid]! <= t) lo = mid; else hi = mid;
  }
  const f = (t - ts[lo]!) / (ts[hi]! - ts[lo]!);
  return y[lo]! + f * (y[hi]! - y[lo]!);
}

/** How far (relative) a grid's time may lie past a series' end and still be its end: a step's time summed in floating point (9.999999999999998 for 10). */
const END_TOLERANCE = 1e-9;

/**
 * The series at each time of `grid` (linear between its points), null at a time outside
 * it: a series is never extended past what the run gave.
 */
export function seriesAt(s: Series, grid: number[]): Array<number | null> {
  const [first, last] = [s.t[0], s.t[s.t.length - 1]];
  const within = (t: number, end: number) => Math.abs(t - end) <= END_TOLERANCE * Math.max(1, Math.abs(end));
  return grid.map((t) => (first === undefined || (t < first && !within(t, first)) || (t > last! && !within(t, last!)) ? null : valueAt(s, t)));
}

/**
 * A calibration's loss for one run: the run's series at the observation times (`fitted`,
 * every observed output in the design's order) and the loss of their residuals. The sum of
 * squares; or the Gaussian negative log-likelihood, with the design's σ or, without one,
 * σ at its maximum-likelihood value for these residuals (σ² = SSE / n).
 */
export function calibrationLoss(design: Pick<CalibrationDesign, 'observations' | 'loss' | 'noise_sd'>, series: Map<string, Series>): { loss: number; fitted: number[] } | null {
  const fitted: number[] = [];
  let sse = 0;
  for (const o of design.observations) {
    const s = series.get(o.output);
    if (!s || !s.t.length) return null;
    o.t.forEach((t, i) => {
      const f = valueAt(s, t);
      fitted.push(f);
      sse += (f - o.y[i]!) ** 2;
    });
  }
  const n = fitted.length;
  if (design.loss === 'sum_of_squares') return { loss: sse, fitted };
  const variance = design.noise_sd ? design.noise_sd ** 2 : Math.max(sse / n, Number.MIN_VALUE);
  return { loss: (n / 2) * Math.log(2 * Math.PI * variance) + sse / (2 * variance), fitted };
}

/**
 * Whether a calibration has stopped improving: the best loss after the last batch is
 * within `relative_tolerance` of the best `patience_batches` batches before.
 */
export function converged(stop: CalibrationDesign['stop'], bestByBatch: number[]): boolean {
  if (!stop || bestByBatch.length <= stop.patience_batches) return false;
  const now = bestByBatch[bestByBatch.length - 1]!;
  const before = bestByBatch[bestByBatch.length - 1 - stop.patience_batches]!;
  return before - now <= stop.relative_tolerance * Math.abs(before);
}
