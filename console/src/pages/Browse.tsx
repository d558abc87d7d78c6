import { useState } from 'preact/hooks';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { Pager } from '../components/Pager.tsx';
import { shortDigest } from '../format.ts';
import type { CapabilityItem, HubItem } from '../contract.ts';

/** A release's console address: /console/hub/<namespace>/<name>/<version>. */
export function releaseHref(ref: string): string {
  const [nsName = '', version = ''] = ref.split('@');
  return `/console/hub/${nsName.split('/').map(encodeURIComponent).join('/')}/${encodeURIComponent(version)}`;
}

/** Hub search (full text over titles, descriptions, tags and names) and, below it, the capabilities this account can run. */
export function Browse() {
  const { client } = useSession();
  const [draft, setDraft] = useState('');
  const [query, setQuery] = useState('');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const hub = useLoad(async () => {
    const page = await client.hub.search({ query: query || undefined, limit: 10, cursor });
    return { items: page.items as unknown as HubItem[], next_cursor: page.next_cursor };
  }, [query, cursor]);
  const capabilities = useLoad(async () => (await client.capabilities.list({ limit: 100 })).items as unknown as CapabilityItem[], []);
  return (
    <main id="main">
      <h1>Browse labs</h1>
      <form role="search" class="inline" onSubmit={(e) => { e.preventDefault(); setQuery(draft.trim()); setCursors([undefined]); }}>
        <label for="hub-query">Search the Hub</label>
        <input id="hub-query" type="search" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} placeholder="e.g. epidemic, growth, enzyme" />
        <button type="submit">Search</button>
      </form>
      <ErrorNotice error={hub.error} />
      {hub.data ? (
        <>
          <ul class="cards" aria-label="Hub releases" aria-busy={hub.loading}>
            {hub.data.items.map((r) => (
              <li key={r.ref} class="card">
                <h2><a href={releaseHref(r.ref)}>{r.title}</a></h2>
                <p class="ref"><code>{r.ref}</code> · {r.qualification_state.replace('_', ' ')} · {r.compute_class}</p>
                <p>{r.description}</p>
                <p class="hint">Package <code title={r.package_sha256}>{shortDigest(r.package_sha256)}</code>{r.tags.length ? <> · {r.tags.join(', ')}</> : null}</p>
              </li>
            ))}
          </ul>
          {hub.data.items.length === 0 ? <p>No release matches{query ? <> “{query}”</> : null}.</p> : null}
          <Pager cursors={cursors} next={hub.data.next_cursor} onPage={setCursors} />
        </>
      ) : <p>Searching…</p>}
      <h2>Runnable capabilities</h2>
      <ErrorNotice error={capabilities.error} />
      <table>
        <caption class="hint">Every lab version this account may run, with its contract.</caption>
        <thead><tr><th scope="col">Capability</th><th scope="col">Inputs</th><th scope="col">Outputs</th><th scope="col">Package</th></tr></thead>
        <tbody>
          {(capabilities.data ?? []).map((c) => (
            <tr key={c.ref}>
              <td><a href={releaseHref(c.ref)}>{c.title}</a><br /><code>{c.ref}</code></td>
              <td>{c.inputs.map((i) => `${i.name}${i.required ? '*' : ''}: ${i.value_type}`).join(', ') || '—'}</td>
              <td>{c.outputs.map((o) => `${o.name}: ${o.value_type}`).join(', ') || '—'}</td>
              <td><code title={c.package_sha256}>{shortDigest(c.package_sha256)}</code></td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}
