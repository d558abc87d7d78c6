/**
 * Time series drawn by uPlot: drag to zoom (double-click resets), the legend shows the
 * values under the cursor. Series sharing one chart share its y axis, so callers group
 * them by units.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { tickLabels } from '../format.ts';

export interface Series {
  name: string;
  units: string | null;
  t: Float64Array | number[];
  y: Float64Array | (number | null)[];
}

/** Colour-blind-safe (Okabe–Ito), enough for a lab's outputs; they repeat past eight. */
const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];

export function SeriesChart({ title, series, width = 760 }: { title: string; series: Series[]; width?: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current || series.length === 0) return;
    // One x for all: uPlot.join aligns series sampled at different times (gaps where one has no point).
    const data: AlignedData = series.length === 1
      ? [series[0]!.t, series[0]!.y] as AlignedData
      : uPlot.join(series.map((s) => [s.t, s.y] as AlignedData));
    const units = series[0]!.units;
    const figure = box.current.parentElement!;
    const shown = (axis: 'x' | 'y', labels: string[]) => {
      figure.dataset[`${axis}Ticks`] = JSON.stringify(labels);
      return labels;
    };
    const opts: Options = {
      title,
      width,
      height: 320,
      scales: { x: { time: false } },
      // Tick labels as precise as their spacing; the ones drawn are kept on the figure
      // (data-x-ticks, data-y-ticks) since the canvas holds no text to read.
      axes: [
        { label: 't', values: (_u, splits) => shown('x', tickLabels(splits)) },
        { label: units ?? undefined, size: 70, values: (_u, splits) => shown('y', tickLabels(splits)) },
      ],
      series: [{ label: 't' }, ...series.map((s, i) => ({ label: s.units ? `${s.name} (${s.units})` : s.name, stroke: PALETTE[i % PALETTE.length], width: 1.5 }))],
      cursor: { drag: { x: true, y: false } },
    };
    const plot = new uPlot(opts, data, box.current);
    return () => plot.destroy();
  }, [series, title, width]);
  const points = series[0]?.t.length ?? 0;
  return (
    <figure class="chart" data-series={series.map((s) => s.name).join(',')} data-points={points}>
      <div ref={box} role="img" aria-label={`${title}: ${series.map((s) => s.name).join(', ')} against t, ${points} points each`} />
      <figcaption class="hint">Drag across the chart to zoom, double-click to reset; the legend shows the values under the cursor.</figcaption>
    </figure>
  );
}
