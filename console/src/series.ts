/**
 * A run's time series from its stored CSV artifacts (`t,<output>` per row), verified
 * against their recorded sha256 by the SDK before they are parsed, and grouped into
 * charts: series whose declared units match share an axis.
 */
import { csvParseRows } from 'd3-dsv';
import type { RunArtifact, Silico } from '@silico/sdk';
import type { Series } from './components/SeriesChart.tsx';

export async function loadSeries(client: Silico, runId: string, artifact: RunArtifact, units: string | null): Promise<Series | null> {
  const { bytes } = await client.runs.artifactBytes(runId, artifact);
  const rows = csvParseRows(new TextDecoder().decode(bytes));
  const body = rows.slice(1);
  const t = new Float64Array(body.length);
  const y: (number | null)[] = new Array<number | null>(body.length);
  let numeric = 0;
  for (let i = 0; i < body.length; i++) {
    const row = body[i]!;
    t[i] = Number(row[0]);
    const v = row[1] === undefined || row[1] === '' ? NaN : Number(row[1]);
    y[i] = Number.isFinite(v) ? v : null;
    if (y[i] !== null) numeric++;
  }
  // A series of vectors or text is a table to download, not a line to draw.
  return numeric === 0 ? null : { name: artifact.role, units, t, y };
}

/** Charts to draw: one per unit shared by several series, one per series without declared units. */
export function chartsOf(series: Series[]): { title: string; series: Series[] }[] {
  const byUnits = new Map<string, Series[]>();
  const charts: { title: string; series: Series[] }[] = [];
  for (const s of series) {
    if (s.units === null) {
      charts.push({ title: s.name, series: [s] });
      continue;
    }
    const group = byUnits.get(s.units) ?? [];
    if (group.length === 0) byUnits.set(s.units, group);
    group.push(s);
  }
  for (const [units, group] of byUnits) charts.push({ title: group.length === 1 ? group[0]!.name : `${group.map((s) => s.name).join(', ')} (${units})`, series: group });
  return charts;
}

/** Each output's declared units, from the release's contract (none for a workspace revision's run). */
export async function unitsOf(client: Silico, resolvedRef: string): Promise<Map<string, string | null>> {
  try {
    const r = await client.hub.inspect(resolvedRef) as unknown as { contract: { outputs: Array<{ name: string; units: string | null }> } };
    return new Map(r.contract.outputs.map((o) => [o.name, o.units]));
  } catch {
    return new Map();
  }
}

/** Every numeric series of a completed run, from its CSV artifacts. */
export async function runSeries(client: Silico, runId: string, units: Map<string, string | null>): Promise<Series[]> {
  const results = await client.runs.results(runId);
  const csv = results.artifacts.filter((a) => a.format === 'csv');
  return (await Promise.all(csv.map((a) => loadSeries(client, runId, a, units.get(a.role) ?? null)))).filter((s): s is Series => s !== null);
}

/** A run named briefly, for a legend. */
export const shortRun = (id: string) => `run ${id.slice(0, 8)}`;

/**
 * Charts with another run's series drawn over them: each chart gains, for each of its
 * series, the other run's series of the same output (named with that run).
 */
export function overlaid(charts: { title: string; series: Series[] }[], other: Series[], otherRunId: string): { title: string; series: Series[] }[] {
  const byName = new Map(other.map((s) => [s.name, s]));
  return charts.map((c) => ({
    title: c.title,
    series: [...c.series, ...c.series.flatMap((s) => {
      const o = byName.get(s.name);
      return o ? [{ ...o, name: `${o.name} · ${shortRun(otherRunId)}` }] : [];
    })],
  }));
}
