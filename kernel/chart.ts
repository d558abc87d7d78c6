/**
 * How every chart of a time series reads, wherever it is drawn: the console's charts,
 * their SVG and PNG downloads, and the SVG artifacts a run stores. Tick labels are always
 * distinct and as short as their spacing allows; a narrow range is drawn as its offset
 * plus deltas; axes carry the contract's units. Browser-safe (no Node module).
 */
import { format, precisionFixed, precisionRound } from 'd3-format';
import { scaleLinear } from 'd3-scale';
import { line } from 'd3-shape';

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

/** A range this many times narrower than its magnitude is drawn as an offset plus deltas. */
const NARROW = 100;

/**
 * The offset to subtract from a narrow range's values (null when the range reads well
 * as it is): the range's lower end rounded down at the order of its span, so the deltas
 * carry only the digits that change (1.5462–1.5478 is 1.546 + 0.0002…0.0018).
 */
export function axisOffset(min: number, max: number): number | null {
  const span = max - min;
  const magnitude = Math.max(Math.abs(min), Math.abs(max));
  if (!(span > 0) || !Number.isFinite(span) || magnitude / span < NARROW) return null;
  const unit = 10 ** Math.floor(Math.log10(span));
  const offset = Math.floor(min / unit) * unit;
  // Written at the unit's precision, so the offset itself reads as a short number.
  return Number(offset.toFixed(Math.max(0, precisionFixed(unit))));
}

/** An axis's label: its units, and the offset its ticks are counted from when it has one. */
export function axisLabel(units: string | null, offset: number | null): string {
  const shown = units ?? '';
  if (offset === null) return shown;
  const from = `value − ${format(',')(offset)}`;
  return shown ? `${shown}, ${from}` : from;
}

export interface ChartSeries {
  name: string;
  units: string | null;
  t: ArrayLike<number>;
  y: ArrayLike<number | null>;
}

/** The y range of series (finite values only); [0, 1] when there is none. */
export function extent(series: readonly ChartSeries[], of: 't' | 'y'): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of series) {
    for (let i = 0; i < s[of].length; i++) {
      const v = s[of][i];
      if (typeof v === 'number' && Number.isFinite(v)) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
  }
  return lo <= hi ? [lo, hi] : [0, 1];
}

/** Colour-blind-safe (Okabe–Ito); they repeat past eight series. */
export const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** A series' legend entry: its name, and its units when it has them. */
export const legendLabel = (s: Pick<ChartSeries, 'name' | 'units'>) => (s.units ? `${s.name} (${s.units})` : s.name);

/**
 * A line chart of series sharing one y axis as a standalone SVG: d3's scales choose the
 * domains and ticks, tickLabels writes them, a narrow range is an offset plus deltas, the
 * y axis carries the units, and a legend names each series when there are several. Tick
 * labels are `<text class="tick x|y">`, the offset is `data-y-offset`, so a reader (or a
 * test) can read what the chart says.
 */
export function chartSvg(title: string, series: readonly ChartSeries[], size: { width?: number; height?: number } = {}): string {
  const W = size.width ?? 640;
  const legendRows = series.length > 1 ? series.length : 0;
  const H = (size.height ?? 360) + legendRows * 16;
  const L = 76, R = 16, T = 36, B = 48 + legendRows * 16;
  const [xMin, xMax] = extent(series, 't');
  const [yMin, yMax] = extent(series, 'y');
  const offset = axisOffset(yMin, yMax);
  const shift = offset ?? 0;
  const x = scaleLinear().domain(xMin === xMax ? [xMin - 1, xMax + 1] : [xMin, xMax]).range([L, W - R]).nice();
  const y = scaleLinear().domain(yMin === yMax ? [yMin - shift - 1, yMax - shift + 1] : [yMin - shift, yMax - shift]).range([H - B, T]).nice();
  const xt = x.ticks(6);
  const yt = y.ticks(5);
  const [xl, yl] = [tickLabels(xt), tickLabels(yt)];
  const units = series.find((s) => s.units)?.units ?? null;
  const paths = series.map((s, i) => {
    const pts: Array<[number, number]> = [];
    for (let k = 0; k < s.t.length; k++) {
      const v = s.y[k];
      if (typeof v === 'number' && Number.isFinite(v) && Number.isFinite(s.t[k]!)) pts.push([s.t[k]!, v - shift]);
    }
    const d = line<[number, number]>().x((p) => x(p[0])).y((p) => y(p[1])).digits(2)(pts) ?? '';
    return `<path fill="none" stroke="${PALETTE[i % PALETTE.length]}" stroke-width="2" d="${d}"><title>${esc(legendLabel(s))}</title></path>`;
  });
  const legend = legendRows ? series.map((s, i) => {
    const ly = H - legendRows * 16 + i * 16 - 4;
    return `<line x1="${L}" y1="${ly - 4}" x2="${L + 18}" y2="${ly - 4}" stroke="${PALETTE[i % PALETTE.length]}" stroke-width="3"/><text class="legend" x="${L + 24}" y="${ly}">${esc(legendLabel(s))}</text>`;
  }) : [];
  const label = axisLabel(units, offset);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12"${offset === null ? '' : ` data-y-offset="${offset}"`}>
<rect width="100%" height="100%" fill="white"/>
<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>
${yt.map((v, i) => `<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/><text class="tick y" x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${esc(yl[i]!)}</text>`).join('\n')}
<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>
${xt.map((v, i) => `<line x1="${x(v)}" y1="${H - B}" x2="${x(v)}" y2="${H - B + 4}" stroke="#333"/><text class="tick x" x="${x(v)}" y="${H - B + 17}" text-anchor="middle">${esc(xl[i]!)}</text>`).join('\n')}
<text x="${(L + W - R) / 2}" y="${H - B + 34}" text-anchor="middle">t</text>
${label ? `<text class="axis-label y" transform="translate(14 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${esc(label)}</text>` : ''}
${paths.join('\n')}
${legend.join('\n')}
</svg>
`;
}
