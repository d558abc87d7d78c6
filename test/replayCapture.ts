import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { MAINTENANCE_SCHEDULE_ID } from '../workflows/constants.ts';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * Saves one real history per workflow type from a stack's Temporal into `dir`
 * (`<WorkflowType>.json`, as Temporal's CLI exports it: `temporal workflow show --output
 * json`, the format the SDK's replayer reads): a completed execution when
 * there is one, else the longest other. `npm test` calls it after the tests when
 * SILICO_CAPTURE_HISTORIES names the folder, so the histories committed under
 * test/replay/histories come from the service really running, not from stubs.
 */
export async function captureHistories(address: string, temporalBin: string, dir: string): Promise<string[]> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    // The hourly housekeeping has not come round during the tests: run it once now.
    await client.schedule.getHandle(MAINTENANCE_SCHEDULE_ID).trigger();
    for (let waited = 0; ; waited += 500) {
      const done = [];
      for await (const wf of client.workflow.list({ query: 'WorkflowType = "maintenanceWorkflow" AND ExecutionStatus = "Completed"' })) done.push(wf);
      if (done.length || waited > 60_000) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const best = new Map<string, { workflowId: string; runId: string; completed: boolean; length: number }>();
    for await (const wf of client.workflow.list()) {
      const completed = wf.status.name === 'COMPLETED';
      const length = wf.historyLength ?? 0;
      const had = best.get(wf.type);
      if (!had || (completed && !had.completed) || (completed === had.completed && length > had.length)) {
        best.set(wf.type, { workflowId: wf.workflowId, runId: wf.runId, completed, length });
      }
    }
    await mkdir(dir, { recursive: true });
    for (const [type, wf] of best) {
      const { stdout } = await promisify(execFile)(temporalBin, ['workflow', 'show', '--address', address, '--workflow-id', wf.workflowId, '--run-id', wf.runId, '--output', 'json'], { maxBuffer: 64 << 20 });
      await writeFile(path.join(dir, `${type}.json`), stdout.endsWith('\n') ? stdout : `${stdout}\n`);
    }
    return [...best.keys()].sort();
  } finally {
    await connection.close();
  }
}
