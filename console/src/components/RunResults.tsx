/** A finished run's results: charts of its numeric series, scalar outputs, verified downloads, provenance. */
import { useState } from 'preact/hooks';
import type { Run, RunArtifact, RunResults as Results } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { chartsOf, overlaid, runSeries, shortRun, unitsOf } from '../series.ts';
import { SeriesChart } from './SeriesChart.tsx';
import { saveFile } from '../saveFile.ts';
import { ErrorNotice } from './ErrorNotice.tsx';
import { bytes, valueText, when } from '../format.ts';

function isScalar(v: unknown): boolean {
  return v === null || ['number', 'string', 'boolean'].includes(typeof v);
}

function Download({ run, artifact }: { run: Run; artifact: RunArtifact }) {
  const { client } = useSession();
  const [state, setState] = useState<{ busy?: boolean; verified?: string; error?: unknown }>({});
  const download = async () => {
    setState({ busy: true });
    try {
      const file = await client.runs.artifactBytes(run.id, artifact);
      saveFile(new Blob([file.bytes], { type: artifact.content_type }), artifact.file_name.replaceAll('\\', '/').split('/').pop() || artifact.artifact_id);
      setState({ verified: file.sha256 });
    } catch (error) {
      setState({ error });
    }
  };
  return (
    <>
      <button type="button" class="secondary" onClick={download} disabled={state.busy} aria-label={`Download ${artifact.file_name}`}>Download</button>
      {state.verified ? <span class="verified" role="status"> sha256 verified</span> : null}
      {state.error ? <ErrorNotice error={state.error} /> : null}
    </>
  );
}

export function RunResults({ run }: { run: Run }) {
  const { client } = useSession();
  const results = useLoad(() => client.runs.results(run.id) as Promise<Results>, [run.id]);
  // Units come from the release's declared contract (a workspace revision's run has none to look up).
  const units = useLoad(() => unitsOf(client, run.resolved_ref), [run.resolved_ref]);
  // Other completed runs of the same release, any of which can be drawn over this one.
  const others = useLoad(async () => (await client.runs.list({ capability: run.resolved_ref, status: 'completed', limit: 20 })).items.filter((o) => o.id !== run.id), [run.id, run.resolved_ref]);
  const [overlayId, setOverlayId] = useState('');
  const charts = useLoad(async () => {
    if (!results.data || !units.data) return null;
    const own = chartsOf(await runSeries(client, run.id, units.data));
    return overlayId ? overlaid(own, await runSeries(client, overlayId, units.data), overlayId) : own;
  }, [results.data, units.data, overlayId]);
  const r = results.data;
  if (!r) return results.error ? <ErrorNotice error={results.error} /> : <p>Loading results…</p>;
  const scalars = Object.entries(r.outputs).filter(([, v]) => isScalar(v));
  return (
    <section aria-labelledby="results-title">
      <h2 id="results-title">Results</h2>
      <ErrorNotice error={charts.error} />
      {others.data?.length ? (
        <p class="inline">
          <label for="overlay-run">Overlay another run of {run.resolved_ref}</label>{' '}
          <select id="overlay-run" value={overlayId} onChange={(e) => setOverlayId(e.currentTarget.value)}>
            <option value="">none</option>
            {others.data.map((o) => <option key={o.id} value={o.id}>{shortRun(o.id)} · {when(o.finished_at)} · inputs {JSON.stringify(o.inputs)}</option>)}
          </select>
        </p>
      ) : null}
      {charts.data ? charts.data.map((c) => <SeriesChart key={c.title} title={c.title} series={c.series} />) : charts.loading ? <p>Drawing the series…</p> : null}
      {scalars.length ? (
        <table>
          <caption>Scalar outputs</caption>
          <thead><tr><th scope="col">Output</th><th scope="col">Value</th></tr></thead>
          <tbody>{scalars.map(([k, v]) => <tr key={k}><th scope="row">{k}</th><td>{valueText(v)}</td></tr>)}</tbody>
        </table>
      ) : null}
      <table>
        <caption>Artifacts</caption>
        <thead><tr><th scope="col">File</th><th scope="col">Output</th><th scope="col">Size</th><th scope="col">sha256</th><th scope="col"><span class="sr-only">Download</span></th></tr></thead>
        <tbody>
          {r.artifacts.map((a) => (
            <tr key={a.artifact_id} data-artifact={a.file_name}>
              <th scope="row">{a.file_name}</th><td>{a.role}</td><td title={`${a.size_bytes} bytes`}>{bytes(a.size_bytes)}</td>
              <td><code class="digest" data-testid="artifact-sha256">{a.sha256}</code></td>
              <td><Download run={run} artifact={a} /></td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Provenance</h3>
      <dl class="facts">
        <div><dt>Release</dt><dd><code>{r.provenance.resolved_ref}</code></dd></div>
        <div><dt>Package digest</dt><dd><code>{r.provenance.package_sha256}</code></dd></div>
        <div><dt>Inputs digest</dt><dd><code>{r.provenance.inputs_sha256}</code></dd></div>
        <div><dt>Seed</dt><dd>{valueText(r.provenance.seed)}</dd></div>
        <div><dt>Compute profile</dt><dd>{r.provenance.compute_profile}</dd></div>
        {r.provenance.reused_from ? <div><dt>Answered from</dt><dd><a href={`/console/runs/${r.provenance.reused_from}`}><code>{r.provenance.reused_from}</code></a> (the same computation; nothing ran)</dd></div> : null}
        <div><dt>Ran</dt><dd>{when(r.provenance.started_at)} – {when(r.provenance.finished_at)}</dd></div>
      </dl>
    </section>
  );
}
