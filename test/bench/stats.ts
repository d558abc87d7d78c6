/** The statistics every bench prints, from simple-statistics. */
import { median as medianOf, quantile } from 'simple-statistics';

/** The median of a list of numbers (the mean of the middle two when the count is even). */
export const median = (xs: number[]): number => medianOf(xs);

/** The 95th percentile of a list of numbers (simple-statistics' quantile: the nearest rank, or the mean of two at a whole rank). */
export const p95 = (xs: number[]): number => quantile(xs, 0.95);

/** The 99th percentile, as p95. */
export const p99 = (xs: number[]): number => quantile(xs, 0.99);
