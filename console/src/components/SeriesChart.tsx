/**
 * Time series drawn by uPlot: drag to zoom (double-click resets), the legend shows the
 * values under the cursor. Series sharing one chart share its y axis, so callers group
 * them by units. The axes follow the rules of every chart of the service (kernel/chart.ts):
 * distinct tick labels, a narrow range drawn as an offset plus deltas, units on the axis;
 * the chart downloads as SVG (drawn by the same rules) and as PNG (that SVG, rasterised).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { saveFile } from '../saveFile.ts';
import { axisLabel, axisOffset, chartSvg, extent, legendLabel, PALETTE, tickLabels, type ChartSeries } from '../../../kernel/chart.ts';

export type Series = ChartSeries & { t: Float64Array | number[]; y: Float64Array | (number | null)[] };

/** A file name from a chart's title. */
const fileName = (title: string, ext: string) => `${title.replace(/[^\w.-]+/g, '_').replace(/^_+|_+$/g, '') || 'chart'}.${ext}`;

/** The chart's SVG drawn onto a canvas at twice its size, as PNG. */
async function pngOf(svg: string): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth * 2;
    canvas.height = img.naturalHeight * 2;
    const ctx = canvas.getContext('2d')!;
    ctx.scale(2, 2);
    ctx.drawImage(img, 0, 0);
    return await new Promise<Blob>((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('the chart could not be drawn as PNG'))), 'image/png'));
  } finally {
    URL.revokeObjectURL(url);
  }
}

export function SeriesChart({ title, series, width = 760 }: { title: string; series: Series[]; width?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const units = series[0]?.units ?? null;
  const [yMin, yMax] = extent(series, 'y');
  const offset = axisOffset(yMin, yMax);
  useEffect(() => {
    if (!box.current || series.length === 0) return;
    // One x for all: uPlot.join aligns series sampled at different times (gaps where one has no point).
    const data: AlignedData = series.length === 1
      ? [series[0]!.t, series[0]!.y] as AlignedData
      : uPlot.join(series.map((s) => [s.t, s.y] as AlignedData));
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
      // Tick labels as precise as their spacing (counted from the offset on a narrow
      // range); the ones drawn are kept on the figure (data-x-ticks, data-y-ticks) since
      // the canvas holds no text to read.
      axes: [
        { label: 't', values: (_u, splits) => shown('x', tickLabels(splits)) },
        { label: axisLabel(units, offset) || undefined, size: 70, values: (_u, splits) => shown('y', tickLabels(offset === null ? splits : splits.map((v) => v - offset))) },
      ],
      series: [{ label: 't' }, ...series.map((s, i) => ({ label: legendLabel(s), stroke: PALETTE[i % PALETTE.length], width: 1.5 }))],
      cursor: { drag: { x: true, y: false } },
    };
    const plot = new uPlot(opts, data, box.current);
    return () => plot.destroy();
  }, [series, title, width, offset, units]);
  const svg = () => chartSvg(title, series);
  const download = async (kind: 'svg' | 'png') => {
    setFailed(null);
    try {
      saveFile(kind === 'svg' ? new Blob([svg()], { type: 'image/svg+xml' }) : await pngOf(svg()), fileName(title, kind));
    } catch (err) {
      setFailed((err as Error).message);
    }
  };
  const points = series[0]?.t.length ?? 0;
  return (
    <figure class="chart" data-series={series.map((s) => s.name).join(',')} data-points={points} data-y-offset={offset ?? undefined}>
      <div ref={box} role="img" aria-label={`${title}: ${series.map((s) => s.name).join(', ')} against t, ${points} points each${offset === null ? '' : `, drawn as value − ${offset}`}`} />
      <figcaption class="hint">
        Drag across the chart to zoom, double-click to reset; the legend shows the values under the cursor.{' '}
        <button type="button" class="link" onClick={() => void download('svg')} aria-label={`Download ${title} as SVG`}>SVG</button>{' '}
        <button type="button" class="link" onClick={() => void download('png')} aria-label={`Download ${title} as PNG`}>PNG</button>
        {failed ? <span role="alert"> {failed}</span> : null}
      </figcaption>
    </figure>
  );
}
