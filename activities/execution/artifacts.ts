/** Files a run leaves behind, made from the driver's outputs: CSV and SVG per time series. */

export type Point = [number, unknown];

/** One CSV cell: a number as written, anything else as its JSON text, quoted. */
export function csvCell(v: unknown): string {
  return typeof v === 'number' ? String(v) : JSON.stringify(JSON.stringify(v ?? null));
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** A plain line chart of one numeric series, readable in any browser. */
export function seriesSvg(title: string, points: Point[]): string {
  const pts = points.filter((p): p is [number, number] => typeof p[1] === 'number' && Number.isFinite(p[1]));
  const W = 640, H = 360, L = 64, R = 16, T = 36, B = 40;
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const [x0, x1] = [Math.min(...xs, 0), Math.max(...xs, 1)];
  const y0 = Math.min(...ys, 0);
  const y1 = Math.max(...ys, 0) === y0 ? y0 + 1 : Math.max(...ys, 0);
  const sx = (x: number) => L + ((x - x0) / (x1 - x0 || 1)) * (W - L - R);
  const sy = (y: number) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  const line = pts.map(([x, y]) => `${sx(x).toFixed(2)},${sy(y).toFixed(2)}`).join(' ');
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => y0 + f * (y1 - y0));
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>
<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>
${ticks.map((v) => `<text x="${L - 6}" y="${sy(v) + 4}" text-anchor="end">${Number(v.toPrecision(3))}</text><line x1="${L}" y1="${sy(v)}" x2="${W - R}" y2="${sy(v)}" stroke="#eee"/>`).join('\n')}
<text x="${L}" y="${H - B + 16}" text-anchor="middle">${Number(x0.toPrecision(3))}</text><text x="${W - R}" y="${H - B + 16}" text-anchor="middle">${Number(x1.toPrecision(3))}</text>
<text x="${(L + W - R) / 2}" y="${H - 8}" text-anchor="middle">t</text>
<polyline fill="none" stroke="#1d4ed8" stroke-width="2" points="${line}"/>
</svg>
`;
}
