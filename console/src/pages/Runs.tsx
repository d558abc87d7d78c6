import { useState } from 'preact/hooks';
import type { RunListParams } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { Pager } from '../components/Pager.tsx';
import { usd, when } from '../format.ts';

const STATUSES = ['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out'] as const;

/** The account's runs, newest first, filtered by status and capability, a page at a time. */
export function Runs() {
  const { client } = useSession();
  const [status, setStatus] = useState('');
  const [capability, setCapability] = useState('');
  const [applied, setApplied] = useState<{ status: string; capability: string }>({ status: '', capability: '' });
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const runs = useLoad(() => client.runs.list({
    limit: 20, cursor,
    ...(applied.status ? { status: applied.status as RunListParams['status'] } : {}),
    ...(applied.capability ? { capability: applied.capability } : {}),
  }), [applied, cursor]);
  return (
    <main id="main">
      <h1>Runs</h1>
      <form class="inline" aria-label="Filter runs" onSubmit={(e) => { e.preventDefault(); setApplied({ status, capability: capability.trim() }); setCursors([undefined]); }}>
        <label for="run-status">Status</label>
        <select id="run-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="">any</option>
          {STATUSES.map((s) => <option key={s} value={s}>{s.replace('_', ' ')}</option>)}
        </select>
        <label for="run-capability">Capability</label>
        <input id="run-capability" value={capability} onInput={(e) => setCapability(e.currentTarget.value)} placeholder="namespace/name" />
        <button type="submit">Filter</button>
      </form>
      <ErrorNotice error={runs.error} />
      <table aria-busy={runs.loading}>
        <thead><tr><th scope="col">Run</th><th scope="col">Lab</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Charged</th></tr></thead>
        <tbody>
          {(runs.data?.items ?? []).map((r) => (
            <tr key={r.id}>
              <td><a href={`/console/runs/${r.id}`}><code>{r.id.slice(0, 8)}</code></a></td>
              <td><code>{r.resolved_ref}</code></td>
              <td><span class={`status ${r.status}`}>{r.status.replace('_', ' ')}</span></td>
              <td>{when(r.created_at)}</td>
              <td>{r.credits_settled === null ? `${usd(r.credits_reserved)} reserved` : usd(r.credits_settled)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {runs.data && runs.data.items.length === 0 ? <p>No runs{applied.status || applied.capability ? ' match these filters' : ' yet'}.</p> : null}
      <Pager cursors={cursors} next={runs.data?.next_cursor} onPage={setCursors} />
    </main>
  );
}
