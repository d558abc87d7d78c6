import { NotFoundError, type HostingView } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { when } from '../format.ts';

/** Every lab this account owns, and for those it hosts: status, exact release, approval and each deployment check. */
export function Hosting() {
  const { client } = useSession();
  const labs = useLoad(async () => {
    const page = await client.labs.list({ limit: 100 });
    return Promise.all(page.items.map(async (lab) => {
      try {
        return { lab, hosting: await client.hosting.get(String(lab.lab_id)) as unknown as HostingView };
      } catch (err) {
        if (err instanceof NotFoundError) return { lab, hosting: null };
        throw err;
      }
    }));
  }, []);
  return (
    <main id="main">
      <h1>Hosting</h1>
      <ErrorNotice error={labs.error} />
      {labs.data?.length === 0 ? <p>This account owns no labs yet.</p> : null}
      {(labs.data ?? []).map(({ lab, hosting }) => (
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
    </main>
  );
}
