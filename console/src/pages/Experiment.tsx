import type { Experiment } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { ComparisonChart } from '../components/ComparisonChart.tsx';
import { ArmsOverTime } from '../components/ArmsOverTime.tsx';
import { StudyAnalysis } from '../components/StudyAnalysis.tsx';
import { bytes, usd, valueText, when } from '../format.ts';

/** An experiment's arms side by side, their runs, and the comparison of every output once runs completed. */
export function ExperimentPage({ id }: { id: string }) {
  const { client } = useSession();
  const x = useLoad(() => client.experiments.get(id) as Promise<Experiment>, [id]);
  const e = x.data;
  if (!e) return <main id="main"><h1>Experiment</h1>{x.error ? <ErrorNotice error={x.error} /> : <p>Loading…</p>}</main>;
  return (
    <main id="main">
      <h1>{e.name}</h1>
      {e.goal ? <p>{e.goal}</p> : null}
      <p>{e.status} · {e.run_totals.completed}/{e.run_totals.total} runs completed · created {when(e.created_at)}{e.completed_at ? <> · completed {when(e.completed_at)}</> : null} · charged {usd(e.credits_settled)}</p>
      <button type="button" class="secondary" onClick={x.reload}>Refresh</button>
      <h2>{e.kind === 'arms' ? 'Arms' : 'Runs'}</h2>
      <div class="arms">
        {e.arms.map((a) => (
          <section key={a.label} class="card" aria-label={e.kind === 'arms' ? `Arm ${a.label}` : 'The lab varied'}>
            <h3>{e.kind === 'arms' ? a.label : 'The lab varied'}</h3>
            <p><code>{a.resolved_ref}</code></p>
            <p>Inputs <code>{JSON.stringify(a.inputs)}</code></p>
            <p>{e.kind === 'arms' ? `${a.replicates} replicates` : `${a.runs.length} runs, one per parameter set`} on {a.compute_profile}</p>
            <ul class="runs">
              {a.runs.map((r) => <li key={r.run_id}><a href={`/console/runs/${r.run_id}`}>{e.kind === 'arms' ? 'replicate' : 'run'} {r.replicate}</a> · seed {r.seed} · <span class={`status ${r.status}`}>{r.status}</span></li>)}
            </ul>
          </section>
        ))}
      </div>
      {e.kind !== 'arms' ? (
        <>
          <h2>{e.kind === 'sensitivity' ? 'Sensitivity' : 'Calibration'}</h2>
          {e.analysis ? <StudyAnalysis analysis={e.analysis} /> : <p>The analysis is stored when the study's runs have ended ({e.run_totals.completed} of {e.run_totals.total} completed so far).</p>}
        </>
      ) : null}
      {e.kind === 'arms' ? <><h2>Arms over time</h2><ArmsOverTime experiment={e} /></> : null}
      <h2>Comparison</h2>
      {e.comparison.outputs.length ? e.comparison.outputs.map((o) => <ComparisonChart key={o} comparison={e.comparison} output={o} />) : <p>No numeric output to compare yet.</p>}
      {e.comparison.tests.length ? (
        <table>
          <caption>Welch's t-tests (descriptive)</caption>
          <thead><tr><th scope="col">Output</th><th scope="col">t</th><th scope="col">df</th><th scope="col">p</th></tr></thead>
          <tbody>{e.comparison.tests.map((t) => <tr key={t.output}><th scope="row">{t.output}</th><td>{valueText(t.statistic)}</td><td>{valueText(t.df)}</td><td>{valueText(t.p_value)}</td></tr>)}</tbody>
        </table>
      ) : null}
      {e.artifacts.length ? (
        <>
          <h2>Study files</h2>
          <ul>{e.artifacts.map((f) => <li key={f.file_id}>{f.file_name} · {bytes(f.size_bytes)} · <code>{f.sha256}</code></li>)}</ul>
        </>
      ) : null}
    </main>
  );
}
