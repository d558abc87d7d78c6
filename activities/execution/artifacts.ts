/** Files a run leaves behind, made from the driver's outputs: CSV and SVG per time series. */
import { scaleLinear } from 'd3-scale';
import { line } from 'd3-shape';

export type Point = [number, unknown];


const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A line chart of one numeric series, readable in any browser: d3's scales choose the
 * domains and their ticks, d3's line generator the path. Vega-Lite, which draws a study's
 * comparison, costs tens of milliseconds of the worker's CPU per chart, and every run
 * has one per series.
 */
export function seriesSvg(title: string, points: Point[]): string {
  const pts = points.filter((p): p is [number, number] => typeof p[1] === 'number' && Number.isFinite(p[1]) && Number.isFinite(p[0]));
  const W = 640, H = 360, L = 64, R = 16, T = 36, B = 44;
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const [xMin, xMax] = xs.length ? [Math.min(...xs), Math.max(...xs)] : [0, 1];
  const [yMin, yMax] = ys.length ? [Math.min(...ys), Math.max(...ys)] : [0, 1];
  const x = scaleLinear().domain(xMin === xMax ? [xMin - 1, xMax + 1] : [xMin, xMax]).range([L, W - R]).nice();
  const y = scaleLinear().domain(yMin === yMax ? [yMin - 1, yMax + 1] : [yMin, yMax]).range([H - B, T]).nice();
  const path = line<[number, number]>().x((p) => x(p[0])).y((p) => y(p[1])).digits(2)(pts) ?? '';
  const [fx, fy] = [x.tickFormat(6), y.tickFormat(5)];
  const yTicks = y.ticks(5).map((v) => `<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${esc(fy(v))}</text>`);
  const xTicks = x.ticks(6).map((v) => `<line x1="${x(v)}" y1="${H - B}" x2="${x(v)}" y2="${H - B + 4}" stroke="#333"/><text x="${x(v)}" y="${H - B + 17}" text-anchor="middle">${esc(fx(v))}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>
${yTicks.join('\n')}
<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>
${xTicks.join('\n')}
<text x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle">t</text>
<path fill="none" stroke="#1d4ed8" stroke-width="2" d="${path}"/>
</svg>
`;
}
