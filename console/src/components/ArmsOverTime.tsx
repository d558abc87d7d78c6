/**
 * A study's arms over time: for each output, one chart with one line per arm (its first
 * completed replicate), so arms are compared as curves and not only by their final means.
 */
import type { Experiment } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { runSeries, unitsOf } from '../series.ts';
import { SeriesChart, type Series } from './SeriesChart.tsx';
import { ErrorNotice } from './ErrorNotice.tsx';

export function ArmsOverTime({ experiment }: { experiment: Experiment }) {
  const { client } = useSession();
  const charts = useLoad(async () => {
    const byOutput = new Map<string, Series[]>();
    // Each arm's first completed run, from the study's listing (its answer lists no runs).
    const first = new Map<string, string>();
    for await (const r of client.experiments.runs(experiment.id, { status: 'completed', limit: 100 })) {
      if (!first.has(r.arm)) first.set(r.arm, r.run_id);
      if (first.size === experiment.arms.length) break;
    }
    for (const arm of experiment.arms) {
      const runId = first.get(arm.label);
      if (!runId) continue;
      for (const s of await runSeries(client, runId, await unitsOf(client, arm.resolved_ref))) {
        const group = byOutput.get(s.name) ?? [];
        byOutput.set(s.name, group);
        group.push({ ...s, name: `${s.name} · ${arm.label}` });
      }
    }
    return [...byOutput].map(([output, series]) => ({ output, series }));
  }, [experiment.id, experiment.run_totals.completed]);
  if (charts.error) return <ErrorNotice error={charts.error} />;
  if (!charts.data) return <p>Drawing the arms…</p>;
  if (!charts.data.length) return <p>No arm has a completed run with a time series yet.</p>;
  return <>{charts.data.map((c) => <SeriesChart key={c.output} title={`${c.output} by arm`} series={c.series} />)}</>;
}
