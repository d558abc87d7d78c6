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
    for (const arm of experiment.arms) {
      const run = (arm.runs ?? []).find((r) => r.status === 'completed');
      if (!run) continue;
      for (const s of await runSeries(client, run.run_id, await unitsOf(client, arm.resolved_ref))) {
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
