import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { acceptAndStart, type Acceptance } from '../../api/acceptAndStart.ts';
import type { TemporalGateway } from '../../api/temporal.ts';
import { DependencyUnavailable } from '../../storage/dependencies.ts';

// The orchestration of an acceptance: record, start its workflow, undo when Temporal
// cannot take it, and complete what an earlier attempt recorded but never started.

async function testWorkflow() {}
type Row = { id: string };

/** A gateway whose startWorkflow answers as told, recording the ids it was asked to start. */
function gateway(answer: (id: string) => 'started' | 'already' | 'down') {
  const asked: string[] = [];
  const temporal = {
    async startWorkflow(_w: unknown, options: { workflowId: string }) {
      asked.push(options.workflowId);
      const a = answer(options.workflowId);
      if (a === 'already') throw new WorkflowExecutionAlreadyStartedError('started', options.workflowId, 'testWorkflow');
      if (a === 'down') throw new DependencyUnavailable('temporal', 'down');
    },
  } as unknown as TemporalGateway;
  return { temporal, asked };
}

function acceptance(over: Partial<Acceptance<Row, typeof testWorkflow>> = {}) {
  const undone: string[] = [];
  const a: Acceptance<Row, typeof testWorkflow> = {
    record: async () => ({ id: 'new' }),
    refusal: () => null,
    workflow: testWorkflow,
    start: (row) => ({ taskQueue: 'q', workflowId: `w-${row.id}` }),
    undo: async (row) => { undone.push(row.id); },
    ...over,
  };
  return { a, undone };
}

const planUsed = new Error('plan used');

test('a plan used by an earlier attempt whose workflow never started: that record is started and answered', async () => {
  const { temporal, asked } = gateway(() => 'started');
  const { a } = acceptance({ record: async () => { throw new Error('consumed'); }, refusal: () => planUsed, earlier: async () => ({ id: 'earlier' }) });
  assert.deepEqual(await acceptAndStart(temporal, a), { id: 'earlier' });
  assert.deepEqual(asked, ['w-earlier']);
});

test('a plan used by an attempt whose workflow runs: refused as used; with no earlier record, too', async () => {
  const { temporal } = gateway(() => 'already');
  const { a } = acceptance({ record: async () => { throw new Error('consumed'); }, refusal: () => planUsed, earlier: async () => ({ id: 'earlier' }) });
  await assert.rejects(acceptAndStart(temporal, a), planUsed);
  const none = acceptance({ record: async () => { throw new Error('consumed'); }, refusal: () => planUsed, earlier: async () => null });
  await assert.rejects(acceptAndStart(gateway(() => 'started').temporal, none.a), planUsed);
});

test('a workflow already started for the new record (by a retry) is this attempt\'s own: answered, not undone', async () => {
  const { temporal } = gateway(() => 'already');
  const { a, undone } = acceptance();
  assert.deepEqual(await acceptAndStart(temporal, a), { id: 'new' });
  assert.deepEqual(undone, []);
});

test('Temporal down: the record is undone and the answer is the dependency\'s', async () => {
  const { temporal } = gateway(() => 'down');
  const { a, undone } = acceptance();
  await assert.rejects(acceptAndStart(temporal, a), DependencyUnavailable);
  assert.deepEqual(undone, ['new']);
});
