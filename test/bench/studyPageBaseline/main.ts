/**
 * bench:study-page's baseline: the least a page can do to show a finished sensitivity
 * study's answer and the first page of its runs. It reads the study and one page of its
 * runs with plain fetch, draws each output's indices with Observable Plot at the console's
 * size and the runs as a plain table: no router, no SDK, no account bar, no pictures of
 * the runs. Study id and key come from the page's address fragment and session storage.
 */
import * as Plot from '@observablehq/plot';

const id = location.hash.slice(1);
const headers = { Authorization: `Bearer ${sessionStorage.getItem('silico.apiKey') ?? ''}` };
const [study, runs] = await Promise.all([
  fetch(`/v1/experiments/${id}`, { headers }).then((r) => r.json()),
  fetch(`/v1/experiments/${id}/runs?limit=20`, { headers }).then((r) => r.json()),
]) as [any, { items: Array<{ position: number; run_id: string; status: string; params: Record<string, number>; outputs: Record<string, number | null> }> }];
const main = document.getElementById('study')!;
for (const o of study.analysis.outputs) {
  const rows = o.indices.flatMap((r: any) => [['S1', r.S1, r.S1_conf], ['ST', r.ST, r.ST_conf]].map(([index, v, c]) => ({ parameter: r.parameter, index, value: v, lo: v - c, hi: v + c })));
  const figure = document.createElement('figure');
  figure.className = 'chart';
  figure.append(Plot.plot({
    marginLeft: 60, width: 640, height: 80 + 50 * o.indices.length, color: { legend: true },
    marks: [
      Plot.barX(rows, { y: 'index', x: 'value', fy: 'parameter', fill: 'index' }),
      Plot.ruleY(rows, { y: 'index', x1: 'lo', x2: 'hi', fy: 'parameter', stroke: '#333' }),
    ],
  }));
  main.append(figure);
}
const table = document.createElement('table');
const names = Object.keys(runs.items[0]?.params ?? {});
const outputs = Object.keys(runs.items[0]?.outputs ?? {});
table.innerHTML = `<thead><tr>${['#', 'run', 'status', ...names, ...outputs].map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${runs.items.map((r) => `<tr>${[
  r.position, r.run_id.slice(0, 8), r.status, ...names.map((n) => r.params[n]), ...outputs.map((k) => r.outputs[k]),
].map((v) => `<td>${v}</td>`).join('')}</tr>`).join('')}</tbody>`;
main.append(table);
document.body.dataset.drawn = 'true';
