/**
 * A series output's sensitivity indices over time, answer first: who dominates when and
 * where control changes hands, in words; then each index with an interval (S1(t), ST(t),
 * μ*(t), δ(t)…, or the ranking index when the method states none; kernel/
 * sensitivityMethods.ts) as a line a
 * parameter with its 95% band, drawn by uPlot; then every value in a table, the curves'
 * text alternative. A time where no index is defined is a gap, and said why.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { SensitivityAnalysis } from '@silico/sdk';
import { PALETTE, tickLabels } from '../../../kernel/chart.ts';
import { drawnIndices, fieldLabel } from '../../../kernel/sensitivityMethods.ts';
import { valueText } from '../format.ts';

type Output = SensitivityAnalysis['outputs'][number];
type OverTime = NonNullable<Output['over_time']>;
type Values = Array<number | null>;
/** A parameter's fields by name, whichever method stated them. */
const field = (r: OverTime['indices'][number], f: string): Values | undefined => (r as unknown as Record<string, Values | undefined>)[f];

const at = (time: number) => `t = ${valueText(time)}`;
const span = (from: number, to: number) => (from === to ? `at ${at(from)}` : `from ${at(from)} to ${valueText(to)}`);

/** Who dominates when, and each handover, in words. */
export function leadersText(t: OverTime): string {
  if (!t.leaders.length) return `No index is defined at any time.`;
  const who = t.leaders.map((l) => `${l.parameter} ${span(l.from, l.to)}`).join('; ');
  const handovers = t.leaders.slice(1).flatMap((l, i) => {
    const before = t.leaders[i]!;
    return before.parameter !== l.parameter ? [`from ${before.parameter} to ${l.parameter} at ${at(l.from)}`] : [];
  });
  return `Largest ${fieldLabel(t.rank)}: ${who}.${handovers.length ? ` Control passes ${handovers.join(', then ')}.` : ''}`;
}

function Curves({ title, times, rows, index, conf }: { title: string; times: number[]; rows: OverTime['indices']; index: string; conf: string | null }) {
  const box = useRef<HTMLDivElement>(null);
  const banded = conf !== null;
  useEffect(() => {
    if (!box.current) return;
    // Per parameter its line, then its band's high and low (drawn as a fill between them, no stroke).
    const data: Values[] = [];
    const series: Options['series'] = [{ label: 't' }];
    const bands: NonNullable<Options['bands']> = [];
    rows.forEach((r, i) => {
      const values = field(r, index)!;
      const widths = conf ? field(r, conf) : undefined;
      const colour = PALETTE[i % PALETTE.length]!;
      data.push(values);
      series.push({ label: r.parameter, stroke: colour, width: 2 });
      if (widths) {
        const line = series.length - 1;
        data.push(values.map((v, j) => (v === null || widths[j] === null ? null : v + widths[j]!)), values.map((v, j) => (v === null || widths[j] === null ? null : v - widths[j]!)));
        series.push({ label: `${r.parameter} 95% high`, stroke: 'transparent', width: 0, points: { show: false } }, { label: `${r.parameter} 95% low`, stroke: 'transparent', width: 0, points: { show: false } });
        bands.push({ series: [line + 1, line + 2], fill: `${colour}33` });
      }
    });
    const figure = box.current.parentElement!;
    const shown = (axis: 'x' | 'y', labels: string[]) => {
      figure.dataset[`${axis}Ticks`] = JSON.stringify(labels);
      return labels;
    };
    const plot = new uPlot({
      title, width: 760, height: 300, series, bands,
      scales: { x: { time: false } },
      axes: [
        { label: 't', values: (_u, splits) => shown('x', tickLabels(splits)) },
        { label: fieldLabel(index), size: 60, values: (_u, splits) => shown('y', tickLabels(splits)) },
      ],
      cursor: { drag: { x: true, y: false } },
    }, [times, ...data] as AlignedData, box.current);
    return () => plot.destroy();
  }, [title, times, rows, index, conf]);
  return (
    <figure class="chart" data-chart={title}>
      <div ref={box} role="img" aria-label={`${title}: ${rows.map((r) => r.parameter).join(', ')} against t at ${times.length} times, with 95% bands where stated; the table below lists each value`} />
      <figcaption class="hint">Each parameter's {fieldLabel(index)} at each time{banded ? ', its 95% interval shaded' : ''}. Drag across the chart to zoom, double-click to reset.</figcaption>
    </figure>
  );
}

export function IndicesOverTime({ o, method, fields }: { o: Output; method: SensitivityAnalysis['method']; fields: string[] }) {
  const t = o.over_time!;
  const drawn = drawnIndices(method);
  const reasons = [...new Set(t.undefined.map((u) => u.message))];
  return (
    <section aria-label={`Indices of ${o.output} over time`}>
      <h3>{o.output}{o.units ? ` (${o.units})` : ''} over time</h3>
      <p data-testid="leaders">{leadersText(t)}</p>
      {t.undefined.length ? (
        <p class="hint">No index at {t.undefined.length} time{t.undefined.length === 1 ? '' : 's'} ({t.undefined.slice(0, 5).map((u) => valueText(u.time)).join(', ')}{t.undefined.length > 5 ? ', …' : ''}): {reasons.join(' ')}</p>
      ) : null}
      {drawn.map(({ index, conf }) => <Curves key={index} title={`${o.output}: ${fieldLabel(index)} over time`} times={t.times} rows={t.indices} index={index} conf={conf} />)}
      <details>
        <summary>Every index at each time (table)</summary>
        <div class="table-scroll">
        <table>
          <caption>Indices of {o.output} at each time</caption>
          <thead><tr><th scope="col">t</th>{t.indices.flatMap((r) => fields.map((f) => <th key={`${r.parameter} ${f}`} scope="col">{r.parameter} {fieldLabel(f)}</th>))}</tr></thead>
          <tbody>{t.times.map((time, j) => (
            <tr key={time}><th scope="row">{valueText(time)}</th>{t.indices.flatMap((r) => fields.map((f) => <td key={`${r.parameter} ${f}`}>{valueText(field(r, f)![j])}</td>))}</tr>
          ))}</tbody>
        </table>
        </div>
      </details>
    </section>
  );
}
