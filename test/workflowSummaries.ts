import { Client, Connection } from '@temporalio/client';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { createDb } from '../storage/db/knex.ts';
import { SUMMARY_KEY } from '../kernel/searchAttributes.ts';

const SECRET = /\bsk_[0-9A-Za-z]{20,}|\bwhsec_[0-9A-Za-z]+|-----BEGIN/;
const EMAIL = /[^\s@()[\]]+@[^\s@()[\]]+\.[a-z]{2,}/i;

/**
 * What every workflow the suite started on its shared stack tells an operator in the
 * Temporal UI (issue 47): each has a one-line summary and details (a run continued as new,
 * which carries none, its current details), and none of them holds a key's secret, a
 * signing secret, an email address, or the words an account wrote (a session's title or
 * goal). `npm test` runs it after the files; returns the problems found, one line each.
 */
export async function checkWorkflowSummaries(temporalAddress: string, databaseUrl: string): Promise<{ checked: number; problems: string[] }> {
  const db = createDb(databaseUrl);
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    // (A workspace's title may become its lab's name, which a run's summary names by design.)
    const words = (await db('sessions').select('title', 'goal')).flatMap((s: { title: string; goal: string | null }) => [s.title, s.goal])
      .filter((w): w is string => typeof w === 'string' && w.length >= 8);
    const client = new Client({ connection });
    const problems: string[] = [];
    const ids: Array<{ workflowId: string; runId: string; type: string }> = [];
    for await (const wf of client.workflow.list()) ids.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type });
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < ids.length) {
        const wf = ids[next++]!;
        const described = await client.workflow.getHandle(wf.workflowId, wf.runId).describe();
        const summary = await described.staticSummary();
        const details = await described.staticDetails();
        const name = `${wf.type} ${wf.workflowId}`;
        let current = '';
        if (!summary?.trim() || !details?.trim()) {
          // A run continued as new carries no metadata of its own (the TypeScript SDK sets
          // none on continue-as-new): it must say where it stands in its current details.
          const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
          const continued = Boolean(history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId);
          current = continued ? (await client.workflow.getHandle(wf.workflowId, wf.runId).query(workflowMetadataQuery)).currentDetails ?? '' : '';
          if (!continued) problems.push(`${name}: ${!summary?.trim() ? 'no summary' : 'no details'}`);
          else if (!current.trim()) problems.push(`${name}: continued as new, and no current details`);
        }
        // The same line as a column of the UI's list.
        const column = described.typedSearchAttributes.get(SUMMARY_KEY);
        if (summary?.trim() && column !== summary) problems.push(`${name}: its SilicoSummary search attribute is ${JSON.stringify(column)}, not its summary`);
        const text = `${summary ?? ''}\n${details ?? ''}\n${current}`;
        if (SECRET.test(text)) problems.push(`${name}: a secret in its metadata`);
        if (EMAIL.test(text)) problems.push(`${name}: an email address in its metadata`);
        const said = words.find((w) => text.includes(w));
        if (said) problems.push(`${name}: an account's own words in its metadata (${JSON.stringify(said.slice(0, 40))})`);
      }
    }));
    return { checked: ids.length, problems };
  } finally {
    await connection.close();
    await db.destroy();
  }
}
