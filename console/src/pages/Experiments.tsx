import { useState } from 'preact/hooks';
import type { ExperimentListParams } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { Pager } from '../components/Pager.tsx';
import { when } from '../format.ts';

/** The account's experiments (multi-arm studies), newest first. */
export function Experiments() {
  const { client } = useSession();
  const [status, setStatus] = useState('');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const list = useLoad(() => client.experiments.list({ limit: 20, cursor, ...(status ? { status: status as ExperimentListParams['status'] } : {}) }), [status, cursor]);
  return (
    <main id="main">
      <h1>Experiments</h1>
      <form class="inline" aria-label="Filter experiments" onSubmit={(e) => e.preventDefault()}>
        <label for="experiment-status">Status</label>
        <select id="experiment-status" value={status} onChange={(e) => { setStatus(e.currentTarget.value); setCursors([undefined]); }}>
          <option value="">any</option><option value="running">running</option><option value="completed">completed</option><option value="closed">closed</option>
        </select>
      </form>
      <ErrorNotice error={list.error} />
      <table aria-busy={list.loading}>
        <thead><tr><th scope="col">Experiment</th><th scope="col">Arms</th><th scope="col">Runs</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead>
        <tbody>
          {(list.data?.items ?? []).map((x) => (
            <tr key={x.id}>
              <td><a href={`/console/experiments/${x.id}`}>{x.name}</a></td>
              <td>{x.arm_labels.join(', ')}</td>
              <td>{x.run_totals.completed}/{x.run_totals.total} completed</td>
              <td>{x.status}</td>
              <td>{when(x.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && list.data.items.length === 0 ? <p>No experiments.</p> : null}
      <Pager cursors={cursors} next={list.data?.next_cursor} onPage={setCursors} />
    </main>
  );
}
