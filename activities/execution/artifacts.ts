/** Files a run leaves behind, made from the driver's outputs: CSV and SVG per time series. */
import { chartSvg } from '../../kernel/chart.ts';

export type Point = [number, unknown];

/**
 * A line chart of one numeric series, by the rules every chart of the service follows
 * (kernel/chart.ts: distinct ticks, a narrow range as an offset, the units on its axis).
 * Drawn with d3's scales and line generator, not a charting runtime: every run stores one
 * per series, and Vega-Lite (which draws a study's comparison) costs tens of milliseconds
 * of the worker's CPU per chart.
 */
export function seriesSvg(title: string, units: string | null, points: Point[]): string {
  const t: number[] = [];
  const y: number[] = [];
  for (const [x, v] of points) {
    if (typeof v === 'number' && Number.isFinite(v) && Number.isFinite(x)) {
      t.push(x);
      y.push(v);
    }
  }
  return chartSvg(title, [{ name: title, units, t, y }]);
}
