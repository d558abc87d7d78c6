import { useState } from 'preact/hooks';
import { studyOutputKey, type Experiment, type StudyRun, type StudyRunListParams } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from './ErrorNotice.tsx';
import { Pager } from './Pager.tsx';
import { valueText } from '../format.ts';

const STATUSES = ['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out'] as const;
const PAGE = 20;

/** The columns a study's runs sort by, besides their order: each parameter, then each studied output (or the loss), with how to read each from a run. */
function columnsOf(e: Experiment): Array<{ key: string; label: string; value: (r: StudyRun) => number | null | undefined }> {
  const d = e.design;
  if (!d) return [];
  // A PEtab calibration's runs carry starts or profiles, not one parameter set each: they sort by their loss, the best NLL they reached.
  if (d.kind === 'petab_calibration') return [{ key: 'loss', label: 'best NLL', value: (r: StudyRun) => r.loss }];
  const params = d.parameters.map((p) => ({ key: `params.${p.name}`, label: p.name, value: (r: StudyRun) => r.params?.[p.name] }));
  const told = d.kind === 'sensitivity'
    // A series output is no one number a run: its values stay with the run.
    ? d.outputs.filter((o) => o.summary !== 'series').map((o) => {
      const key = studyOutputKey(o);
      return { key: `outputs.${key}`, label: `${key}${o.units ? ` (${o.units})` : ''}`, value: (r: StudyRun) => r.outputs?.[key] };
    })
    : [{ key: 'loss', label: 'loss', value: (r: StudyRun) => r.loss }];
  return [...params, ...told];
}

/** What one of a PEtab calibration's runs carries, by its batch: batch 0 runs starts, batch 1 the profiles from the best end point. */
const PETAB_TASKS = ['starts', 'profiles'] as const;

/**
 * A study's runs as data, a page at a time: each with the parameter set it was given and
 * what it told the study (its outputs, or its loss; a PEtab calibration's run, whether it
 * carries starts or profiles and the best NLL it reached), sortable by any of those columns,
 * filtered by status; each run links to its own page.
 */
export function StudyRuns({ experiment: e }: { experiment: Experiment }) {
  const { client } = useSession();
  const [sort, setSort] = useState<{ key: string; order: 'asc' | 'desc' }>({ key: 'position', order: 'asc' });
  const [status, setStatus] = useState('');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const runs = useLoad(() => client.experiments.runs(e.id, {
    limit: PAGE, cursor, sort: sort.key, order: sort.order, ...(status ? { status: status as StudyRunListParams['status'] } : {}),
  }), [e.id, sort, status, cursor, e.updated_at]);
  const columns = columnsOf(e);
  const petab = e.design?.kind === 'petab_calibration';
  const sortBy = (key: string) => {
    setSort((s) => ({ key, order: s.key === key && s.order === 'asc' ? 'desc' : 'asc' }));
    setCursors([undefined]);
  };
  const header = (key: string, label: string) => (
    <th scope="col" aria-sort={sort.key === key ? (sort.order === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <button type="button" class="sort" onClick={() => sortBy(key)}>{label}{sort.key === key ? (sort.order === 'asc' ? ' ▲' : ' ▼') : ''}</button>
    </th>
  );
  return (
    <section aria-labelledby="study-runs">
      <h2 id="study-runs">Runs</h2>
      <form class="inline" aria-label="Filter the study's runs" onSubmit={(ev) => ev.preventDefault()}>
        <label for="study-run-status">Status</label>
        <select id="study-run-status" value={status} onChange={(ev) => { setStatus(ev.currentTarget.value); setCursors([undefined]); }}>
          <option value="">any</option>
          {STATUSES.map((s) => <option key={s} value={s}>{s.replace('_', ' ')}</option>)}
        </select>
      </form>
      <ErrorNotice error={runs.error} />
      <div class="table-scroll">
        <table aria-busy={runs.loading} class="study-runs">
          <caption>{e.run_totals.total} runs; sort by a column's heading</caption>
          <thead>
            <tr>
              {header('position', '#')}
              <th scope="col">Run</th>
              {e.kind === 'arms' ? <><th scope="col">Arm</th><th scope="col">Replicate</th></> : null}
              <th scope="col">Status</th>
              {petab ? <th scope="col">Carries</th> : null}
              {columns.map((c) => header(c.key, c.label))}
            </tr>
          </thead>
          <tbody>
            {(runs.data?.items ?? []).map((r) => (
              <tr key={r.run_id}>
                <td>{r.position}</td>
                <td><a href={`/console/runs/${r.run_id}`}><code>{r.run_id.slice(0, 8)}</code></a></td>
                {e.kind === 'arms' ? <><td>{r.arm}</td><td>{r.replicate}</td></> : null}
                <td><span class={`status ${r.status}`}>{r.status.replace('_', ' ')}</span></td>
                {petab ? <td>{r.batch === null ? '—' : PETAB_TASKS[r.batch] ?? `batch ${r.batch}`}</td> : null}
                {columns.map((c) => <td key={c.key} class="number">{valueText(c.value(r))}</td>)}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {runs.data && runs.data.items.length === 0 ? <p>No runs{status ? ' in this status' : ''}.</p> : null}
      <Pager cursors={cursors} next={runs.data?.next_cursor} onPage={setCursors} />
    </section>
  );
}
