import { mkdir, readdir, writeFile } from 'node:fs/promises';
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
 * closing status (`terminated`...). A history already in `dir` is never replaced: they
 * are captured from the code as it stood before a change, and the change must replay them.
 * `npm test` calls it after the tests when SILICO_CAPTURE_HISTORIES names the folder, so
 * the committed histories come from the service really running, not from stubs.
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
    const best = new Map<string, { workflowId: string; runId: string; length: number }>();
    for await (const wf of client.workflow.list()) {
      if (wf.status.name === 'RUNNING') continue;
      let ending = wf.status.name.toLowerCase();
      if (wf.status.name === 'COMPLETED') {
        const result = await client.workflow.getHandle(wf.workflowId, wf.runId).result().catch(() => null);
        if (typeof result === 'string' && /^[a-z_]+$/.test(result)) ending = result;
      }
      const key = `${wf.type}.${ending}`;
      const length = wf.historyLength ?? 0;
      const had = best.get(key);
      if (!had || length > had.length) best.set(key, { workflowId: wf.workflowId, runId: wf.runId, length });
    }
    await mkdir(dir, { recursive: true });
    const kept = new Set((await readdir(dir)).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length)));
    const saved: string[] = [];
    for (const [key, wf] of best) {
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
