import { Client, Connection } from '@temporalio/client';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { createDb } from '../storage/db/knex.ts';
import { SUMMARY_KEY } from '../kernel/searchAttributes.ts';
import type * as workflows from '../workflows/index.ts';
import { MAINTENANCE_SCHEDULE_ID, RUN_SWEEP_SCHEDULE_ID } from '../kernel/workflowNames.ts';

const SECRET = /\bsk_[0-9A-Za-z]{20,}|\bwhsec_[0-9A-Za-z]+|-----BEGIN/;
const EMAIL = /[^\s@()[\]]+@[^\s@()[\]]+\.[a-z]{2,}/i;

const ACCOUNT = 'acct_[0-9a-z]+';
const REF = '[\\w.-]+/[\\w.-]+@[\\w.+-]+';
const RESERVED = `for ${ACCOUNT}, \\$\\d+(\\.\\d+)? reserved`;
const shape = (...parts: string[]) => new RegExp(`^${parts.join('')}$`);

/** Each workflow type's summary, as its starter writes it (what, of what, on what, whose, what it reserved). */
export const SUMMARY_SHAPES: Record<keyof typeof workflows, RegExp> = {
  runWorkflow: shape(`run of ${REF} on [\\w-]+ `, RESERVED),
  experimentWorkflow: shape(`comparison of \\d+ arms \\(\\d+ runs\\) of ${REF} on [\\w-]+ `, RESERVED),
  studyWorkflow: shape(`(sensitivity|calibration|petab calibration) study \\([\\w-]+, \\d+ runs\\) of ${REF} on [\\w-]+ `, RESERVED),
  publicationWorkflow: shape(`publication of ${REF} for ${ACCOUNT}`),
  datasetRegistrationWorkflow: shape(`registration of dataset \\S+ v\\d+ \\(\\d+ members\\) for ${ACCOUNT}`),
  passportWorkflow: shape(`passport of (run [0-9a-f-]{36}|experiment exp_[0-9a-z]+|revision \\S+) \\(${REF}\\) for ${ACCOUNT}`),
  hostingLifecycleWorkflow: shape(`hosting of ${REF} on [\\w-]+ \\(\\d+–\\d+ instances, (private|team|public)\\) for ${ACCOUNT}`),
  invocationWorkflow: shape(`hosted invocation of ${REF} `, RESERVED),
  biologySearchWorkflow: shape(`biology search of [\\w-]+(, [\\w-]+)* for ${ACCOUNT}`),
  biologyFetchWorkflow: shape(`biology fetch of \\d+ records? from [\\w-]+ for ${ACCOUNT}`),
  sessionWorkflow: shape(`collaboration session ses_[0-9a-z]+ for ${ACCOUNT}`),
  webhookDeliveryWorkflow: shape(`webhook delivery of [\\w.]+ to endpoint whe_[0-9a-z]+ for ${ACCOUNT}( \\(replay \\d+\\))?`),
  petabInspectWorkflow: shape(`PEtab inspection of \\d+ files for ${ACCOUNT}`),
  purchaseWorkflow: shape(`purchase of \\$\\d+(\\.\\d+)? of compute for ${ACCOUNT}`),
  maintenanceWorkflow: shape('hourly maintenance: .+'),
  runSweepWorkflow: shape('run sweep: .+'),
};

/**
 * What every workflow the suite started on its shared stack tells an operator in the
 * Temporal UI (issue 47): each has a one-line summary and details (a run continued as new,
 * which carries none, its current details), and none of them holds a key's secret, a
 * signing secret, an email address, or the words an account wrote (a session's title or
 * goal). Each summary has its type's shape (SUMMARY_SHAPES), and with `everyType` (the
 * whole suite ran) every type was seen. `npm test` runs it after the files; returns the
 * problems found, one line each.
 */
export async function checkWorkflowSummaries(temporalAddress: string, databaseUrl: string, everyType: boolean): Promise<{ checked: number; problems: string[] }> {
  const db = createDb(databaseUrl);
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    // (A workspace's title may become its lab's name, which a run's summary names by design.)
    const words = (await db('sessions').select('title', 'goal')).flatMap((s: { title: string; goal: string | null }) => [s.title, s.goal])
      .filter((w): w is string => typeof w === 'string' && w.length >= 8);
    const client = new Client({ connection });
    const problems: string[] = [];
    // The schedules' workflows too, whether or not their hour came while the suite ran.
    if (everyType) {
      for (const [schedule, type] of [[MAINTENANCE_SCHEDULE_ID, 'maintenanceWorkflow'], [RUN_SWEEP_SCHEDULE_ID, 'runSweepWorkflow']] as const) {
        await client.schedule.getHandle(schedule).trigger();
        for (let waited = 0; waited < 30_000; waited += 250) {
          const started = await client.workflow.count(`WorkflowType = "${type}"`);
          if (started.count > 0) break;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    }
    const ids: Array<{ workflowId: string; runId: string; type: string }> = [];
    for await (const wf of client.workflow.list()) ids.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type });
    const seen = new Set(ids.map((w) => w.type));
    if (everyType) for (const type of Object.keys(SUMMARY_SHAPES)) if (!seen.has(type)) problems.push(`${type}: the suite started none, so its summary went unchecked`);
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
        const expected = SUMMARY_SHAPES[wf.type as keyof typeof SUMMARY_SHAPES];
        if (!expected) problems.push(`${name}: a workflow type whose summary has no shape here (SUMMARY_SHAPES)`);
        else if (summary?.trim() && !expected.test(summary)) problems.push(`${name}: its summary ${JSON.stringify(summary)} is not its type's shape ${expected}`);
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
