/**
 * bench:console's baseline: the least a page can do to show a run's series. It reads the
 * run's results and its CSV artifacts with plain fetch, parses them with d3-dsv and draws
 * each with uPlot at the console's size: no router, no SDK, no verification, no account
 * bar, no log. Run id and key come from the page's address fragment and session storage.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { csvParseRows } from 'd3-dsv';

const runId = location.hash.slice(1);
const headers = { Authorization: `Bearer ${sessionStorage.getItem('silico.apiKey') ?? ''}` };
const results = await (await fetch(`/v1/runs/${runId}/results`, { headers })).json() as { artifacts: Array<{ artifact_id: string; role: string; format: string }> };
const main = document.getElementById('charts')!;
await Promise.all(results.artifacts.filter((a) => a.format === 'csv').map(async (a) => {
  const rows = csvParseRows(await (await fetch(`/v1/runs/${runId}/artifacts/${a.artifact_id}`, { headers })).text()).slice(1);
  const box = document.createElement('figure');
  box.className = 'chart';
  box.dataset.points = String(rows.length);
  main.append(box);
  new uPlot({ title: a.role, width: 760, height: 320, scales: { x: { time: false } }, series: [{ label: 't' }, { label: a.role, stroke: '#0072B2' }] },
    [rows.map((r) => Number(r[0])), rows.map((r) => Number(r[1]))], box);
}));
document.body.dataset.drawn = 'true';
