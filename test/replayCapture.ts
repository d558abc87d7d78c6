import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { MAINTENANCE_SCHEDULE_ID } from '../kernel/workflowNames.ts';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * Saves real histories from a stack's Temporal into `dir`, one per workflow type and
 * ending (`<WorkflowType>.<ending>.json`, as Temporal's CLI exports it: `temporal workflow
 * show --output json`, the format the SDK's replayer reads). The ending is what the
 * workflow returned when that is a word (a run's `completed`, `cancelled`...), else its
 * closing status (`terminated`, `failed`, `cancelled`, `continued_as_new`...), or
 * `execution_<status>` when that word is also one the type returns (a run returns
 * `failed` and `cancelled`; a history that ended failed is another path through the code).
 * A history already in `dir` is never replaced: they are captured from the code as it
 * stood before a change, and the change must replay them. `npm test` calls it after the
 * tests when SILICO_CAPTURE_HISTORIES names the folder, so the committed histories come
 * from the service really running; a workflow test whose workflows close the way the
 * service's seldom do (test/workflow/env.ts) calls it against its own test server, with
 * `maintenance: false` (that server has no housekeeping schedule).
 */
export async function captureHistories(address: string, temporalBin: string, dir: string, opts: { maintenance?: boolean } = {}): Promise<string[]> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    if (opts.maintenance ?? true) {
      // The hourly housekeeping has not come round during the tests: run it once now.
      await client.schedule.getHandle(MAINTENANCE_SCHEDULE_ID).trigger();
      for (let waited = 0; ; waited += 500) {
        const done = [];
        for await (const wf of client.workflow.list({ query: 'WorkflowType = "maintenanceWorkflow" AND ExecutionStatus = "Completed"' })) done.push(wf);
        if (done.length || waited > 60_000) break;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    // Per type and ending, the longest history; `returned` tells a word the workflow
    // returned from a closing status of the same spelling.
    const best = new Map<string, { type: string; ending: string; returned: boolean; workflowId: string; runId: string; length: number }>();
    for await (const wf of client.workflow.list()) {
      if (wf.status.name === 'RUNNING') continue;
      let ending = wf.status.name.toLowerCase();
      const returned = wf.status.name === 'COMPLETED';
      if (returned) {
        const result = await client.workflow.getHandle(wf.workflowId, wf.runId).result().catch(() => null);
        if (typeof result === 'string' && /^[a-z_]+$/.test(result)) ending = result;
      }
      const key = `${wf.type}.${ending}.${returned}`;
      const length = wf.historyLength ?? 0;
      const had = best.get(key);
      if (!had || length > had.length) best.set(key, { type: wf.type, ending, returned, workflowId: wf.workflowId, runId: wf.runId, length });
    }
    await mkdir(dir, { recursive: true });
    const kept = new Set((await readdir(dir)).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length)));
    /** Whether the kept history of that name ended with the workflow returning (its last event). */
    const keptReturned = async (name: string) => {
      const events = (JSON.parse(await readFile(path.join(dir, `${name}.json`), 'utf8')) as { events?: Array<{ eventType?: string }> }).events ?? [];
      return events.at(-1)?.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED';
    };
    const saved: string[] = [];
    for (const wf of best.values()) {
      let key = `${wf.type}.${wf.ending}`;
      if (!wf.returned && (best.has(`${key}.true`) || (kept.has(key) && await keptReturned(key)))) key = `${wf.type}.execution_${wf.ending}`;
      if (kept.has(key)) continue;
      const { stdout } = await promisify(execFile)(temporalBin, ['workflow', 'show', '--address', address, '--workflow-id', wf.workflowId, '--run-id', wf.runId, '--output', 'json'], { maxBuffer: 64 << 20 });
      await writeFile(path.join(dir, `${key}.json`), stdout.endsWith('\n') ? stdout : `${stdout}\n`);
      saved.push(key);
    }
    return saved.sort();
  } finally {
    await connection.close();
  }
}
