import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { RunForm } from '../components/RunForm.tsx';
import { boundsText, type ReleaseView } from '../contract.ts';
import { valueText, when } from '../format.ts';

/** One immutable release: what it is, where it came from, its contract, and the form to run it. */
export function Release({ namespace, name, version }: { namespace: string; name: string; version: string }) {
  const { client } = useSession();
  const reference = `${namespace}/${name}@${version}`;
  const release = useLoad(() => client.hub.inspect(reference) as unknown as Promise<ReleaseView>, [reference]);
  const r = release.data;
  if (!r) return <main id="main"><h1>{reference}</h1>{release.error ? <ErrorNotice error={release.error} /> : <p>Loading…</p>}</main>;
  return (
    <main id="main">
      <h1>{r.title}</h1>
      <p class="ref"><code>{r.ref}</code> · {r.qualification_state.replace('_', ' ')} · {r.compute_class} · {r.visibility}</p>
      <p class="untrusted">{r.description}</p>
      <p class="hint">Titles and descriptions are the author's words, shown as written.</p>
      <dl class="facts">
        <div><dt>Package digest</dt><dd><code data-testid="package-sha256">{r.package_sha256}</code></dd></div>
        <div><dt>Released</dt><dd>{when(r.created_at)}</dd></div>
        <div><dt>Origin</dt><dd>{r.origin ? <>published from tree <code>{r.origin.tree_sha256}</code>{r.origin.approval ? <> ({r.origin.approval} approval)</> : null}, {when(r.origin.published_at)}</> : 'built into the service'}</dd></div>
      </dl>
      <h2>Inputs</h2>
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Units</th><th scope="col">Bounds</th><th scope="col">Default</th><th scope="col">Description</th></tr></thead>
        <tbody>
          {r.contract.inputs.map((i) => (
            <tr key={i.name}><th scope="row">{i.name}{i.required ? ' (required)' : ''}</th><td>{i.value_type}</td><td>{i.units ?? '—'}</td><td>{boundsText(i.schema)}</td><td>{valueText(i.default)}</td><td>{i.description ?? ''}</td></tr>
          ))}
        </tbody>
      </table>
      {r.contract.inputs.length === 0 ? <p>No inputs.</p> : null}
      <h2>Outputs</h2>
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Units</th><th scope="col">Description</th></tr></thead>
        <tbody>{r.contract.outputs.map((o) => <tr key={o.name}><th scope="row">{o.name}</th><td>{o.value_type}</td><td>{o.units ?? '—'}</td><td>{o.description ?? ''}</td></tr>)}</tbody>
      </table>
      <RunForm reference={r.ref} inputs={r.contract.inputs} />
    </main>
  );
}
