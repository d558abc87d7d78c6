import type { Experiment } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { ComparisonChart } from '../components/ComparisonChart.tsx';
import { ArmsOverTime } from '../components/ArmsOverTime.tsx';
import { StudyAnalysis } from '../components/StudyAnalysis.tsx';
import { StudyRuns } from '../components/StudyRuns.tsx';
import { StudyPictures } from '../components/StudyPictures.tsx';
import { bytes, usd, valueText, when } from '../format.ts';

/** What a comparison of arms found: each output's arms side by side, and the two-arm tests. */
function Comparison({ e }: { e: Experiment }) {
  return (
    <>
      {e.comparison.outputs.length ? e.comparison.outputs.map((o) => <ComparisonChart key={o} comparison={e.comparison} output={o} />) : <p>No numeric output to compare yet.</p>}
      {e.comparison.tests.length ? (
        <table>
          <caption>Welch's t-tests (descriptive)</caption>
          <thead><tr><th scope="col">Output</th><th scope="col">t</th><th scope="col">df</th><th scope="col">p</th></tr></thead>
          <tbody>{e.comparison.tests.map((t) => <tr key={t.output}><th scope="row">{t.output}</th><td>{valueText(t.statistic)}</td><td>{valueText(t.df)}</td><td>{valueText(t.p_value)}</td></tr>)}</tbody>
        </table>
      ) : null}
    </>
  );
}

/** A question study's answer's heading, by its kind. */
const STUDY_HEADING = { sensitivity: 'Sensitivity', calibration: 'Calibration', petab_calibration: 'PEtab calibration' } as const;

/** What a question study's runs are, for the card of the lab it varies. */
function runsText(e: Experiment, runs: number): string {
  const d = e.design;
  if (d?.kind !== 'petab_calibration') return `${runs} runs, one per parameter set`;
  // Its starts are spread `starts_per_run` to a run; the profiles (and the Gauss-Newton view) over `profile_runs` after them.
  const startRuns = d.run_count - d.profile_runs;
  return `${runs} runs: ${startRuns} start run${startRuns === 1 ? '' : 's'} (${d.starts} starts, up to ${d.starts_per_run} a run) and ${d.profile_runs} profile run${d.profile_runs === 1 ? '' : 's'}`;
}

/**
 * A study, its answer first: the indices of a sensitivity study, the fit of a calibration
 * (or of a PEtab calibration: its waterfall, fits, profiles and intervals),
 * the comparison of arms (progress while its runs go on); then what it ran, and its runs
 * as a paged, sortable table; then its files.
 */
export function ExperimentPage({ id }: { id: string }) {
  const { client } = useSession();
  const x = useLoad(() => client.experiments.get(id) as Promise<Experiment>, [id]);
  const e = x.data;
  if (!e) return <main id="main"><h1>Experiment</h1>{x.error ? <ErrorNotice error={x.error} /> : <p>Loading…</p>}</main>;
  const t = e.run_totals;
  const ended = t.completed + t.failed + t.cancelled + t.timed_out;
  // A PEtab calibration varies no input of its lab: it runs the engine on the problem the lab holds.
  const labHeading = e.kind === 'arms' ? 'Arms' : e.kind === 'petab_calibration' ? 'The problem\'s lab' : 'The lab varied';
  return (
    <main id="main">
      <h1>{e.name}</h1>
      {e.goal ? <p>{e.goal}</p> : null}
      <p>{e.status} · {t.completed}/{t.total} runs completed · created {when(e.created_at)}{e.completed_at ? <> · completed {when(e.completed_at)}</> : null} · charged {usd(e.credits_settled)}</p>
      {e.completed_at ? null : <p><label for="study-progress">Runs ended </label><progress id="study-progress" max={t.total} value={ended}>{ended} of {t.total}</progress> {ended} of {t.total}</p>}
      <button type="button" class="secondary" onClick={x.reload}>Refresh</button>
      {e.kind === 'arms' ? (
        <>
          <h2>Comparison</h2>
          <Comparison e={e} />
          <h2>Arms over time</h2>
          <ArmsOverTime experiment={e} />
        </>
      ) : (
        <>
          <h2>{STUDY_HEADING[e.kind]}</h2>
          {e.analysis ? <StudyAnalysis analysis={e.analysis} /> : <p>The analysis is stored when the study's runs have ended ({t.completed} of {t.total} completed so far).</p>}
          <StudyPictures experiment={e} />
        </>
      )}
      <h2>{labHeading}</h2>
      <div class="arms">
        {e.arms.map((a) => (
          <section key={a.label} class="card" aria-label={e.kind === 'arms' ? `Arm ${a.label}` : labHeading}>
            {e.kind === 'arms' ? <h3>{a.label}</h3> : null}
            <p><code>{a.resolved_ref}</code></p>
            {e.kind === 'petab_calibration' ? null : <p>Inputs <code>{JSON.stringify(a.inputs)}</code></p>}
            <p>{e.kind === 'arms' ? `${a.replicates} replicates` : runsText(e, e.run_totals.total)} on {a.compute_profile}</p>
          </section>
        ))}
      </div>
      <StudyRuns experiment={e} />
      {e.artifacts.length ? (
        <>
          <h2>Study files</h2>
          <ul>{e.artifacts.map((f) => <li key={f.file_id}>{f.file_name} · {bytes(f.size_bytes)} · <code>{f.sha256}</code></li>)}</ul>
        </>
      ) : null}
    </main>
  );
}
