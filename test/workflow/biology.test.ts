import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { biologyFetchWorkflow, biologySearchWorkflow } from '../../workflows/biology.ts';
import { biologyFetchWorkflowId, biologySearchWorkflowId, CONTROL_TASK_QUEUE } from '../../kernel/workflowNames.ts';
import type { BiologyActivities, FetchedRecord } from '../../activities/biology/activities.ts';

// The biology workflows with their activities stubbed: a search keeps the hits of the
// sources that answered and names the others, retrying what may pass; a fetch records
// all its records at once or nothing. Their histories replay.
const testEnv = useWorkflowEnvironment();

type Stubs = Partial<Record<keyof BiologyActivities, (...args: any[]) => Promise<unknown>>>;

async function run<T>(workflowId: string, start: (client: ReturnType<typeof testEnv>['client']) => Promise<T>, activities: Stubs) {
  const env = testEnv();
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath, activities });
  const outcome = await worker.runUntil(start(env.client).catch((err: unknown) => err));
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
  return { outcome, history };
}

const hit = (source_id: string, record_id: string) => ({ source_id, record_id, title: record_id, organism: null, version: null, url: `https://example.org/${record_id}` });

test('a search keeps the answering sources\' hits, retries a busy one, and names the one that failed; its history replays', async () => {
  const tries: Record<string, number> = {};
  const workflowId = biologySearchWorkflowId(crypto.randomUUID());
  const { outcome } = await run(workflowId, (c) => c.workflow.execute(biologySearchWorkflow, {
    taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ sourceIds: ['uniprot', 'pdb', 'ncbi_nucleotide'], query: 'hemoglobin', limit: 3 }],
  }), {
    async biologySearchSource(a: { sourceId: string }) {
      tries[a.sourceId] = (tries[a.sourceId] ?? 0) + 1;
      if (a.sourceId === 'pdb') throw ApplicationFailure.create({ type: 'source_refused', message: 'refused (400)', nonRetryable: true });
      if (a.sourceId === 'uniprot' && tries.uniprot === 1) throw ApplicationFailure.create({ type: 'source_rate_limited', message: 'slow down', nextRetryDelay: 200 });
      return [hit(a.sourceId, `${a.sourceId}-1`)];
    },
  });
  const result = outcome as Awaited<ReturnType<typeof biologySearchWorkflow>>;
  assert.deepEqual(result.hits.map((h) => h.source_id).sort(), ['ncbi_nucleotide', 'uniprot']);
  assert.deepEqual(result.failures, [{ source_id: 'pdb', code: 'source_refused', message: 'refused (400)' }]);
  assert.deepEqual(tries, { uniprot: 2, pdb: 1, ncbi_nucleotide: 1 }, 'the rate-limited source was asked again; the refusing one was not');
});

test('a fetch records every record at once; a record that fails ends it with its reason, records nothing and discards what it staged; histories replay', async () => {
  const fetched = (recordId: string): FetchedRecord => ({ record_id: recordId, url: `https://example.org/${recordId}`, sha256: 'a'.repeat(64), size_bytes: 10, media_type: 'text/x-fasta', version: null, retrieved_at: new Date().toISOString() });
  const recorded: string[][] = [];
  const discarded: string[] = [];
  const staged: string[] = [];
  const stubs = (fail?: string): Stubs => ({
    async biologyFetchRecord(a: { fetchId: string; recordId: string }) {
      if (a.recordId === fail) throw ApplicationFailure.create({ type: 'record_not_found', message: `no ${a.recordId}`, nonRetryable: true });
      // The failing record's batch-mates finish (and stage) after it failed: the discard comes after them.
      if (fail) await new Promise((r) => setTimeout(r, 200));
      staged.push(`${a.fetchId}:${a.recordId}`);
      return fetched(a.recordId);
    },
    async discardBiologyFetch(a: { fetchId: string }) {
      discarded.push(`${a.fetchId} after ${staged.filter((s) => s.startsWith(a.fetchId)).length} staged`);
      return 0;
    },
    async recordBiologyResources(a: { records: FetchedRecord[] }) {
      recorded.push(a.records.map((r) => r.record_id));
      return a.records.map((_, i) => `res_${i}`);
    },
  });
  const ids = Array.from({ length: 9 }, (_, i) => `P0000${i}`);
  const args = (fetchId: string) => ({ fetchId, accountId: 'acct_test', sourceId: 'uniprot' as const, recordIds: ids, format: 'fasta', expectedSha256: null });

  const okId = crypto.randomUUID();
  const ok = await run(biologyFetchWorkflowId(okId), (c) => c.workflow.execute(biologyFetchWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId: biologyFetchWorkflowId(okId), args: [args(okId)] }), stubs());
  assert.equal((ok.outcome as { resourceIds: string[] }).resourceIds.length, 9);
  assert.deepEqual(recorded, [ids], 'recorded once, all together, in order');
  assert.deepEqual(discarded, [], 'a recorded fetch discards nothing (recording removes its staging)');
  const largest = Math.max(...ok.history.events!.map((e) => JSON.stringify(e).length));
  assert.ok(largest < 8192, `no record bytes travel through the workflow (largest event ${largest} bytes)`);

  const failId = crypto.randomUUID();
  const failed = await run(biologyFetchWorkflowId(failId), (c) => c.workflow.execute(biologyFetchWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId: biologyFetchWorkflowId(failId), args: [args(failId)] }), stubs('P00005'));
  assert.ok(failed.outcome instanceof WorkflowFailedError);
  const cause = failed.outcome.cause as ApplicationFailure;
  assert.equal(cause.type, 'record_not_found');
  assert.match(cause.message, /P00005/);
  assert.equal(recorded.length, 1, 'nothing more recorded');
  // P00005 is in the second batch of four: the first batch and its three batch-mates were staged, then all discarded.
  assert.deepEqual(discarded, [`${failId} after 7 staged`]);
});
