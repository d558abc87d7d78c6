import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TASK_KINDS } from '../../api/mcp/tasks/kinds.ts';
import { RUN_STATUSES } from '../../api/runs/schemas.ts';
import { INVOCATION_STATUSES } from '../../api/invocations/schemas.ts';
import { HOSTING_STATUSES } from '../../api/hosting/schemas.ts';
import { PUBLICATION_STATUSES } from '../../api/publications/schemas.ts';

// Every status a record can be in maps to a task status: the work's end to completed,
// failed or cancelled, anything else to working. A status added to a domain fails here
// until its task mapping is decided.

const EXPECTED: Record<string, Record<string, string>> = {
  run_create: { queued: 'working', running: 'working', cancelling: 'working', completed: 'completed', failed: 'failed', timed_out: 'failed', cancelled: 'cancelled' },
  hosted_invocation_execute: { queued: 'working', running: 'working', completed: 'completed', failed: 'failed', expired: 'failed', cancelled: 'cancelled' },
  hosting_execute: {
    requested: 'working', checking: 'working', awaiting_review: 'working', ready: 'completed', paused: 'completed',
    failed: 'failed', rejected: 'failed', retiring: 'cancelled', retired: 'cancelled',
  },
  publish_execute: { publishing: 'working', published: 'completed', failed: 'failed' },
};
const STATUSES: Record<string, readonly string[]> = {
  run_create: RUN_STATUSES, hosted_invocation_execute: INVOCATION_STATUSES, hosting_execute: HOSTING_STATUSES, publish_execute: PUBLICATION_STATUSES,
};

test('each status of a run, an invocation, a hosting and a publication maps to the task status it means', () => {
  for (const [tool, statuses] of Object.entries(STATUSES)) {
    assert.deepEqual([...statuses].sort(), Object.keys(EXPECTED[tool]!).sort(), `${tool}: every status is mapped`);
    for (const status of statuses) {
      const body = { id: 'x', lab_id: 'lab_x', publication_id: 'pub_x', reference: 'a/b@1.0.0', status, progress: 0.5, error: status === 'failed' ? { code: 'lab_error', message: 'it broke' } : null };
      const state = TASK_KINDS[tool]!.state({ status: 200, body })!;
      assert.equal(state.status, EXPECTED[tool]![status], `${tool} ${status}`);
      assert.ok(state.message.length > 0);
    }
  }
  assert.match(TASK_KINDS.run_create!.state({ status: 200, body: { id: 'r', status: 'running', progress: 0.42 } })!.message, /running \(42%\)/);
  assert.equal(TASK_KINDS.run_create!.state({ status: 200, body: { id: 'r', status: 'failed', error: { code: 'lab_error', message: 'it broke' } } })!.message, 'lab_error: it broke');
  assert.equal(TASK_KINDS.run_create!.state({ status: 404, body: { error: { code: 'run_not_found' } } }), null, 'a refusal is not a state');
});

test('a study is working until every run has ended; completed then, or cancelled when it was closed', () => {
  const totals = (t: Partial<Record<string, number>>) => ({ queued: 0, running: 0, cancelling: 0, completed: 0, failed: 0, cancelled: 0, timed_out: 0, total: 2, ...t });
  const state = (body: Record<string, unknown>) => TASK_KINDS.experiment_create!.state({ status: 200, body })!;
  assert.deepEqual(state({ status: 'running', completed_at: null, run_totals: totals({ running: 1, completed: 1 }) }), { status: 'working', message: '1 of 2 runs ended (1 running, 0 queued).' });
  assert.equal(state({ status: 'completed', completed_at: 'x', run_totals: totals({ completed: 2 }) }).status, 'completed');
  assert.equal(state({ status: 'closed', completed_at: null, run_totals: totals({ running: 1, cancelled: 1 }) }).status, 'working', 'closed, but a run still running');
  assert.equal(state({ status: 'closed', completed_at: 'x', run_totals: totals({ cancelled: 2 }) }).status, 'cancelled');
});

test('a biology fetch is working while the same call says it is in progress, completed when it answers, failed when it ends refused; a dependency down is no state', () => {
  const state = TASK_KINDS.biology_fetch!.state;
  assert.equal(state({ status: 503, body: { error: { code: 'fetch_in_progress' } } })!.status, 'working');
  assert.equal(state({ status: 409, body: { error: { code: 'idempotency_in_progress' } } })!.status, 'working', 'another read is joining it');
  assert.equal(state({ status: 200, body: { resources: [{}, {}] } })!.message, '2 record(s) fetched and stored.');
  assert.deepEqual(state({ status: 404, body: { error: { code: 'record_not_found', message: 'No such record.' } } }), { status: 'failed', message: 'record_not_found: No such record.' });
  assert.equal(state({ status: 502, body: { error: { code: 'source_refused', message: 'x' } } })!.status, 'failed');
  assert.equal(state({ status: 503, body: { error: { code: 'temporal_unavailable' } } }), null);
  assert.deepEqual(TASK_KINDS.biology_fetch!.detached!.args({ source_id: 'uniprot' }, 't1'), { source_id: 'uniprot', idempotency_key: 'mcp-task-t1' });
  assert.equal(TASK_KINDS.biology_fetch!.detached!.args({ idempotency_key: 'mine' }, 't1').idempotency_key, 'mine', 'the caller\'s key names the fetch');
});
