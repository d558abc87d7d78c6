import { useState } from 'preact/hooks';
import { NotFoundError, type HostingView } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { Pager } from '../components/Pager.tsx';
import { when } from '../format.ts';

const VISIBILITIES = ['private', 'team', 'public'] as const;
const PAGE = 10;

/**
 * The labs this account owns, filtered by name and visibility, a page at a time; for those
 * it hosts: status, exact release, approval and each deployment check.
 */
export function Hosting() {
  const { client } = useSession();
  const [query, setQuery] = useState('');
  const [visibility, setVisibility] = useState('');
  const [applied, setApplied] = useState<{ query: string; visibility: string }>({ query: '', visibility: '' });
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const labs = useLoad(async () => {
    const page = await client.labs.list({
      limit: PAGE, cursor,
      ...(applied.query ? { query: applied.query } : {}),
      ...(applied.visibility ? { visibility: applied.visibility as typeof VISIBILITIES[number] } : {}),
    });
    const items = await Promise.all(page.items.map(async (lab) => {
      try {
        return { lab, hosting: await client.hosting.get(String(lab.lab_id)) as unknown as HostingView };
      } catch (err) {
        if (err instanceof NotFoundError) return { lab, hosting: null };
        throw err;
      }
    }));
    return { items, next: page.next_cursor };
  }, [applied, cursor]);
  const filtered = Boolean(applied.query || applied.visibility);
  return (
    <main id="main">
      <h1>Hosting</h1>
      <form class="inline" aria-label="Filter labs" onSubmit={(e) => { e.preventDefault(); setApplied({ query: query.trim(), visibility }); setCursors([undefined]); }}>
        <label for="lab-query">Lab</label>
        <input id="lab-query" value={query} onInput={(e) => setQuery(e.currentTarget.value)} placeholder="name or title" />
        <label for="lab-visibility">Visibility</label>
        <select id="lab-visibility" value={visibility} onChange={(e) => setVisibility(e.currentTarget.value)}>
          <option value="">any</option>
          {VISIBILITIES.map((v) => <option key={v} value={v}>{v}</option>)}
        </select>
        <button type="submit">Filter</button>
      </form>
      <ErrorNotice error={labs.error} />
      {labs.data?.items.length === 0 ? <p>{filtered ? 'No lab of this account matches these filters.' : 'This account owns no labs yet.'}</p> : null}
      <div aria-busy={labs.loading}>
        {(labs.data?.items ?? []).map(({ lab, hosting }) => (
          <section key={String(lab.lab_id)} class="card" aria-label={`Lab ${String(lab.name)}`}>
            <h2>{String(lab.title || lab.name)}</h2>
            {hosting ? (
              <>
                <p><span class={`status ${hosting.status}`}>{hosting.status.replaceAll('_', ' ')}</span> · <code>{hosting.release.reference}</code> · revision {hosting.revision}{hosting.pending_action ? <> · {hosting.pending_action} pending</> : null}</p>
                <p class="hint">Package <code>{hosting.release.sha256}</code> · approval {hosting.approval.required ? (hosting.approval.decision ?? 'awaited') : 'not required'}</p>
                <table>
                  <caption>Deployment checks</caption>
                  <thead><tr><th scope="col">Check</th><th scope="col">Result</th><th scope="col">Detail</th><th scope="col">Checked</th></tr></thead>
                  <tbody>{hosting.checks.map((c) => <tr key={c.check}><th scope="row">{c.check}</th><td class={`check ${c.status}`}>{c.status}</td><td>{c.detail}</td><td>{when(c.checked_at)}</td></tr>)}</tbody>
                </table>
              </>
            ) : <p>Not hosted.</p>}
          </section>
        ))}
      </div>
      <Pager cursors={cursors} next={labs.data?.next} onPage={setCursors} />
    </main>
  );
}
