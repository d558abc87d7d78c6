import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BASE_URL, call, closeTestDb, errorOf, newAccount, publishFixtureLab, silicoCli, testDb, until, waitForRun } from '../helpers.ts';
import { operatorView } from '../operatorView.ts';
import { Silico, passportOf } from '../../sdk/src/index.ts';
import { sessionWorkflowId } from '../../kernel/workflowNames.ts';

// Sessions on the real stack: a session's state changes only through its workflow's
// updates (refused synchronously as the caller's 4xx), recorded in Postgres for reads.

type Account = Awaited<ReturnType<typeof newAccount>>;
let owner: Account;
let stranger: Account;
let connection: Connection;
let client: Client;

before(async () => {
  owner = await newAccount({ usd: 5 });
  stranger = await newAccount();
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  client = new Client({ connection });
});
after(async () => {
  await connection?.close();
  await closeTestDb();
});

const post = (p: string, body: unknown, key = owner.key) => call('POST', p, { key, body });

/**
 * Records one progress entry as the contract tells a client to under load: with an
 * Idempotency-Key, retried with the same key while the answer is 503 (the workflow did not
 * answer within the api's deadline), so it is recorded exactly once.
 */
async function progressOnce(sessionId: string) {
  const headers = { 'Idempotency-Key': crypto.randomUUID() };
  for (let attempt = 1; ; attempt++) {
    const res = await call('POST', `/sessions/${sessionId}/progress`, { key: owner.key, body: { step_id: 'loop', status: 'started' }, headers });
    if (res.status !== 503 || attempt === 5) return res;
    await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 1) * 1000));
  }
}

async function newSession(title = 'Growth under stress') {
  const res = await post('/sessions', { title, goal: 'Show how the culture grows when the rate halves.' });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Prepares and applies a contract or execution plan on a session. */
async function apply(sessionId: string, kind: 'contract-plans' | 'execution-plans', body: unknown) {
  const plan = await post(`/sessions/${sessionId}/${kind}`, body);
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const applied = await post('/session-changes', { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 });
  assert.equal(applied.status, 200, applied.text);
  return { plan: plan.body, session: applied.body };
}

test('a session from creation through contract, plan, conversations and progress with a completed run as evidence; GET resumes it', { timeout: 120_000 }, async () => {
  const s = await newSession();
  assert.match(s.session_id, /^ses_/);
  assert.equal(s.status, 'open');
  assert.equal(s.version, 0);

  const attached = await post(`/sessions/${s.session_id}/external-sessions`, { provider: 'chat', external_id: 'conv-1', url: 'https://chat.example/c/1' });
  assert.equal(attached.status, 200, attached.text);
  const twice = await post(`/sessions/${s.session_id}/external-sessions`, { provider: 'chat', external_id: 'conv-1' });
  assert.deepEqual([twice.status, errorOf(twice).code], [409, 'external_session_exists']);

  const { plan: contractPlan, session: withContract } = await apply(s.session_id, 'contract-plans', {
    requirements: [{ id: 'R1', text: 'A completed run at half the growth rate.', evidence_kind: 'run' }, { id: 'R2', text: 'A note on what changed.', evidence_kind: 'note' }],
  });
  assert.equal(withContract.version, 1);
  assert.equal(withContract.contract.requirements.length, 2);
  const reused = await post('/session-changes', { plan_id: contractPlan.plan_id, plan_sha256: contractPlan.plan_sha256 });
  assert.deepEqual([reused.status, errorOf(reused).code], [409, 'plan_unavailable']);

  // A plan prepared on an older version of the session cannot apply.
  const stale = (await post(`/sessions/${s.session_id}/execution-plans`, { steps: [{ id: 'x', title: 'x' }] })).body;
  await apply(s.session_id, 'execution-plans', { steps: [{ id: 'run', title: 'Run at half rate' }, { id: 'write', title: 'Write it up', depends_on: ['run'] }] });
  const refused = await post('/session-changes', { plan_id: stale.plan_id, plan_sha256: stale.plan_sha256 });
  assert.deepEqual([refused.status, errorOf(refused).code], [409, 'plan_unavailable']);
  assert.match(errorOf(refused).message, /version 1 .* version 2/);

  const early = await post(`/sessions/${s.session_id}/progress`, { step_id: 'write', status: 'started' });
  assert.deepEqual([early.status, errorOf(early).code, errorOf(early).param], [409, 'step_dependencies_unfinished', 'step_id']);
  const unknown = await post(`/sessions/${s.session_id}/progress`, { step_id: 'nope', status: 'started' });
  assert.deepEqual([unknown.status, errorOf(unknown).code], [422, 'step_not_found']);

  const ref = await publishFixtureLab(owner, 'noisy-growth');
  const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref, inputs: { growth_rate: 0.05 }, max_runtime_seconds: 60 } });
  const run = await waitForRun(owner.key, started.body.id);
  assert.equal(run.status, 'completed');
  assert.equal((await post(`/sessions/${s.session_id}/progress`, { step_id: 'run', status: 'started' })).status, 200);
  const done = await post(`/sessions/${s.session_id}/progress`, { step_id: 'run', status: 'done', note: 'half rate', evidence: [`run:${run.id}`] });
  assert.equal(done.status, 200, done.text);
  assert.equal(done.body.seq, 2);
  // Evidence: progress attached the run; R2 needs a note bound by name. A run of no one is read and refused.
  const first = await post(`/sessions/${s.session_id}/validation`, { evidence: [{ requirement_id: 'R1', ref: `run:${crypto.randomUUID()}` }] });
  assert.equal(first.status, 200, first.text);
  const [r1, r2] = first.body.requirements;
  assert.equal(r1.status, 'satisfied', JSON.stringify(r1));
  assert.deepEqual(r1.evidence.map((e: any) => [e.attached_by, e.status]), [['validation', 'unsatisfied'], ['progress:2', 'satisfied']]);
  assert.match(r1.evidence[1].record.package_sha256, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual([r2.status, r2.reason], ['unsatisfied', 'no evidence is attached']);
  assert.match(first.body.caveat, /not a scientific validation/);
  assert.equal(first.body.next_actions[0].tool, 'session_validate');
  const unknownReq = await post(`/sessions/${s.session_id}/validation`, { evidence: [{ requirement_id: 'R9', ref: 'note:x' }] });
  assert.deepEqual([unknownReq.status, errorOf(unknownReq).code, errorOf(unknownReq).param], [422, 'requirement_not_found', 'evidence[0].requirement_id']);
  const badRef = await post(`/sessions/${s.session_id}/validation`, { evidence: [{ requirement_id: 'R1', ref: 'vibes:1' }] });
  assert.deepEqual([badRef.status, errorOf(badRef).param], [422, 'evidence[0].ref']);
  const second = await post(`/sessions/${s.session_id}/validation`, { evidence: [{ requirement_id: 'R2', ref: 'note:Halving the rate slowed growth.' }] });
  assert.deepEqual(second.body.requirements.map((r: any) => r.status), ['satisfied', 'satisfied']);

  const notYet = await post(`/sessions/${s.session_id}/completion`, {});
  assert.equal(notYet.status, 200, notYet.text);
  assert.equal(notYet.body.complete, false);
  assert.deepEqual(notYet.body.missing.map((m: any) => [m.kind, m.id]), [['step', 'write']]);

  const ws = await post(`/sessions/${s.session_id}/workspace`, { title: 'Growth under stress lab' });
  assert.equal(ws.status, 200, ws.text);
  assert.equal(ws.body.lab_name, 'growth-under-stress-lab');
  const wsAgain = await post(`/sessions/${s.session_id}/workspace`, {});
  assert.equal(wsAgain.body.workspace_id, ws.body.workspace_id, 'created once');
  assert.equal((await call('GET', `/workspaces/${ws.body.workspace_id}`, { key: owner.key })).status, 200);

  assert.equal((await post(`/sessions/${s.session_id}/progress`, { step_id: 'write', status: 'done' })).status, 200);

  const resumed = await call('GET', `/sessions/${s.session_id}`, { key: owner.key });
  assert.equal(resumed.status, 200, resumed.text);
  const r = resumed.body;
  assert.deepEqual(r.execution_plan.steps.map((x: any) => [x.id, x.status]), [['run', 'done'], ['write', 'done']]);
  assert.deepEqual(r.progress.recent.map((p: any) => p.seq), [3, 2, 1]);
  assert.deepEqual(r.progress.recent[1].evidence, [`run:${run.id}`]);
  assert.deepEqual(r.external_sessions.map((e: any) => [e.provider, e.external_id]), [['chat', 'conv-1']]);
  assert.equal(r.contract.requirements[0].evidence_kind, 'run');
  assert.equal(r.version, 2);

  assert.equal(r.workspace_id, ws.body.workspace_id);
  assert.equal(r.validation.summary.satisfied, 2);
  const listed = await call('GET', '/sessions?status=open&limit=5', { key: owner.key });
  assert.ok(listed.body.items.some((x: any) => x.session_id === s.session_id));

  const done2 = await post(`/sessions/${s.session_id}/completion`, {});
  assert.deepEqual([done2.body.complete, done2.body.missing], [true, []]);
  const closed = await post(`/sessions/${s.session_id}/progress`, { step_id: 'write', status: 'started' });
  assert.deepEqual([closed.status, errorOf(closed).code], [409, 'session_completed']);
  const after = (await call('GET', `/sessions/${s.session_id}`, { key: owner.key })).body;
  assert.deepEqual([after.status, after.completion.complete, after.next_actions], ['completed', true, []]);
  assert.ok(after.completed_at);
  const wf = await client.workflow.getHandle(sessionWorkflowId(s.session_id)).describe();
  assert.equal(wf.status.name, 'COMPLETED', 'completing closes the workflow');
  // What an operator reads of it in the Temporal UI: ids and counts, never its title or goal.
  const seen = await operatorView(sessionWorkflowId(s.session_id), { state: true });
  assert.equal(seen.summary, `collaboration session ${s.session_id} for ${owner.account.id}`);
  assert.match(seen.details!, new RegExp(`\\[API\\]\\(${BASE_URL}/sessions/${s.session_id}\\)$`));
  assert.equal(seen.current, '**Completed**: 2 requirements; 2 of 2 steps done, 0 started, 0 blocked.\n\n3 progress entries; 1 conversation attached.');
  assert.deepEqual(seen.state, {
    object: 'session', session_id: s.session_id, status: 'completed', version: 2, requirements: 2,
    steps: [{ id: 'run', status: 'done' }, { id: 'write', status: 'done' }], progress_entries: 3, conversations: 1,
  });
});

test('evidence of other kinds is read from its record: a file by its digest (a wrong pin or another account\'s file unsatisfied), a passport by its signature', { timeout: 180_000 }, async () => {
  const s = await newSession('Evidence of every kind');
  await apply(s.session_id, 'contract-plans', {
    requirements: [
      { id: 'F', text: 'The measured series, exactly these bytes.', evidence_kind: 'file' },
      { id: 'P', text: 'A passport of the run.', evidence_kind: 'passport' },
    ],
  });
  const bytes = new TextEncoder().encode('t,x\n0,1\n1,2\n');
  const sha = createHash('sha256').update(bytes).digest('hex');
  const file = (await new Silico({ apiKey: owner.key, baseUrl: BASE_URL }).files.upload(bytes, { filename: 'series.csv' }));
  const theirs = (await new Silico({ apiKey: stranger.key, baseUrl: BASE_URL }).files.upload(bytes, { filename: 'series.csv' }));
  const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 60 } });
  assert.equal((await waitForRun(owner.key, started.body.id)).status, 'completed');
  // A build still going answers 503 with Retry-After (its activities may be waiting out a
  // worker another file killed); the contract's answer to that is to ask again.
  const issued = await until(120_000, async () => {
    const res = await call('GET', `/passports?run_id=${started.body.id}`, { key: owner.key });
    return res.status === 503 && res.headers.get('retry-after') ? undefined : res;
  });
  assert.equal(issued.status, 200, issued.text);
  const passportId = passportOf(issued.body).passport_id;

  const check = async (requirement: string, evidence: string) => {
    const res = await post(`/sessions/${s.session_id}/validation`, { evidence: [{ requirement_id: requirement, ref: evidence }] });
    assert.equal(res.status, 200, res.text);
    return res.body.requirements.find((r: any) => r.requirement_id === requirement).evidence.find((e: any) => e.ref === evidence);
  };
  const pinned = await check('F', `file:${file.file_id}@${sha}`);
  assert.deepEqual([pinned.status, pinned.record.sha256], ['satisfied', sha]);
  const wrongPin = await check('F', `file:${file.file_id}@${'0'.repeat(64)}`);
  assert.equal(wrongPin.status, 'unsatisfied');
  assert.match(wrongPin.reason, new RegExp(`is ${sha}, not the pinned 0{64}`));
  const foreign = await check('F', `file:${theirs.file_id}`);
  const nobody = await check('F', `file:${crypto.randomUUID()}`);
  assert.deepEqual([foreign.status, foreign.record], ['unsatisfied', null]);
  assert.equal(foreign.reason.replace(theirs.file_id, 'ID'), nobody.reason.replace(nobody.ref.slice(5), 'ID'), 'another account\'s file reads as a missing one');
  const passport = await check('P', `passport:${passportId}`);
  assert.equal(passport.status, 'satisfied', passport.reason);
  assert.equal(passport.record.signature_valid, true);
  assert.deepEqual(passport.record.subject.run_id, started.body.id);
});

test('a progress post retried with its Idempotency-Key is recorded once', async () => {
  const s = await newSession('Retries');
  await apply(s.session_id, 'execution-plans', { steps: [{ id: 'a', title: 'A' }] });
  const key = crypto.randomUUID();
  const once = await call('POST', `/sessions/${s.session_id}/progress`, { key: owner.key, headers: { 'Idempotency-Key': key }, body: { step_id: 'a', status: 'started' } });
  const again = await call('POST', `/sessions/${s.session_id}/progress`, { key: owner.key, headers: { 'Idempotency-Key': key }, body: { step_id: 'a', status: 'started' } });
  assert.deepEqual([once.status, again.status, again.body.seq], [200, 200, once.body.seq]);
  assert.equal((await call('GET', `/sessions/${s.session_id}`, { key: owner.key })).body.progress.count, 1);
});

test('execution plans must be acyclic, name known steps and unique ids (422 naming the item)', async () => {
  const s = await newSession('Plans');
  const cyc = await post(`/sessions/${s.session_id}/execution-plans`, { steps: [{ id: 'a', title: 'A', depends_on: ['b'] }, { id: 'b', title: 'B', depends_on: ['a'] }] });
  assert.deepEqual([cyc.status, errorOf(cyc).code], [422, 'steps_cyclic']);
  const unknownDep = await post(`/sessions/${s.session_id}/execution-plans`, { steps: [{ id: 'a', title: 'A', depends_on: ['z'] }] });
  assert.deepEqual([unknownDep.status, errorOf(unknownDep).code, errorOf(unknownDep).param], [422, 'step_dependency_unknown', 'steps[0].depends_on']);
  const dup = await post(`/sessions/${s.session_id}/contract-plans`, { requirements: [{ id: 'R', text: 't', evidence_kind: 'note' }, { id: 'R', text: 'u', evidence_kind: 'note' }] });
  assert.deepEqual([dup.status, errorOf(dup).code, errorOf(dup).param], [422, 'duplicate_id', 'requirements[1].id']);
  const badKind = await post(`/sessions/${s.session_id}/contract-plans`, { requirements: [{ id: 'R', text: 't', evidence_kind: 'vibes' }] });
  assert.equal(badKind.status, 422);
  const noPlan = await post(`/sessions/${s.session_id}/progress`, { step_id: 'a', status: 'started' });
  assert.deepEqual([noPlan.status, errorOf(noPlan).code], [409, 'execution_plan_missing']);
});

test('100 concurrent progress posts are all recorded, in one order that reads the same from Postgres and from the workflow', { timeout: 120_000 }, async () => {
  const s = await newSession('Concurrent');
  await apply(s.session_id, 'execution-plans', { steps: [{ id: 'loop', title: 'Iterate' }] });
  // Each post as a client makes it: with its Idempotency-Key, retried with that key after
  // a 503's Retry-After (100 updates queue in one workflow; on a loaded machine the last
  // may wait past the api's dependency deadline). A retry is answered from the first
  // attempt's update, never recorded twice: the counts below prove it.
  const progress = async (i: number) => {
    const headers = { 'Idempotency-Key': crypto.randomUUID() };
    for (;;) {
      const res = await call('POST', `/sessions/${s.session_id}/progress`, { key: owner.key, headers, body: { step_id: 'loop', status: i % 2 ? 'done' : 'started', note: `n${i}` } });
      if (res.status !== 503) return res;
      assert.ok(Number(res.headers.get('retry-after')) > 0, 'a 503 says when to retry');
      await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after')) * 1000));
    }
  };
  const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => progress(i)));
  for (const a of answers) assert.equal(a.status, 200, a.text);
  const seqs = answers.map((a) => a.body.seq).sort((a, b) => a - b);
  assert.deepEqual(seqs, Array.from({ length: 100 }, (_, i) => i + 1), 'each post got its own place');
  const rows = await testDb()('session_progress').where({ session_id: s.session_id }).orderBy('seq');
  assert.equal(rows.length, 100);
  // The order Postgres holds is the order the workflow gave: each post's answer names its row.
  const bySeq = new Map(answers.map((a, i) => [a.body.seq, `n${i}`]));
  assert.deepEqual(rows.map((r: any) => r.note), rows.map((r: any) => bySeq.get(r.seq)));
  const state = await client.workflow.getHandle(sessionWorkflowId(s.session_id)).query('sessionState') as { seq: number; steps: Array<{ status: string }> };
  assert.equal(state.seq, 100);
  assert.equal(state.steps[0]!.status, rows.at(-1).status, 'the last recorded status is the workflow\'s');
});

test('a session with 10,000 progress entries answers GET with its last 20 entries and the count; its workflow continues as new and keeps its state', { timeout: 300_000 }, async () => {
  const s = await newSession('Long');
  await apply(s.session_id, 'execution-plans', { steps: [{ id: 'loop', title: 'Iterate' }] });
  const handle = client.workflow.getHandle(sessionWorkflowId(s.session_id));
  const firstRun = (await handle.describe()).runId;
  // Through the workflow until its history passes the bound (the tests' stack sets 400 events) and it continues as new.
  let posted = 0;
  while ((await handle.describe()).runId === firstRun && posted < 1000) {
    const batch = await Promise.all(Array.from({ length: 20 }, () => progressOnce(s.session_id)));
    for (const a of batch) assert.equal(a.status, 200, a.text);
    posted += batch.length;
  }
  assert.notEqual((await handle.describe()).runId, firstRun, `continued as new after ${posted} posts`);
  const state = await handle.query('sessionState') as { seq: number; runId: string };
  assert.equal(state.seq, posted, 'the new run carries the count on');
  // The rest of the 10,000 written as the workflow would, then read back bounded.
  const rows = Array.from({ length: 10000 - posted }, (_, i) => ({ session_id: s.session_id, seq: posted + 1 + i, step_id: 'loop', status: 'started', evidence: '[]' }));
  for (let i = 0; i < rows.length; i += 2000) await testDb()('session_progress').insert(rows.slice(i, i + 2000));
  await testDb()('sessions').where({ id: s.session_id }).update({ progress_count: 10000 });
  const got = await call('GET', `/sessions/${s.session_id}`, { key: owner.key });
  assert.equal(got.status, 200);
  assert.equal(got.body.progress.count, 10000);
  assert.equal(got.body.progress.recent.length, 20);
  assert.equal(got.body.progress.recent[0].seq, 10000);
  assert.ok(got.text.length < 32 * 1024, `bounded size: ${got.text.length} bytes`);
});

test('another account\'s session answers exactly like a missing one', async () => {
  const s = await newSession('Private');
  const missing = await call('GET', '/sessions/ses_01jxxxxxxxxxxxxxxxxxxxxxxx', { key: stranger.key });
  for (const [method, p, body] of [['GET', `/sessions/${s.session_id}`, undefined], ['POST', `/sessions/${s.session_id}/progress`, { step_id: 'a', status: 'started' }], ['POST', `/sessions/${s.session_id}/external-sessions`, { provider: 'p', external_id: 'e' }]] as const) {
    const res = await call(method, p, { key: stranger.key, body });
    assert.equal(res.status, 404, `${method} ${p}`);
    assert.equal(errorOf(res).code, 'session_not_found');
  }
  assert.equal(missing.status, 404);
  const theirs = await call('GET', '/sessions', { key: stranger.key });
  assert.ok(!theirs.body.items.some((x: any) => x.session_id === s.session_id));
});

test('the SDK and `silico session new|show|progress|validate|complete` walk a session to completion', { timeout: 120_000 }, async () => {
  const configDir = mkdtempSync(path.join(os.tmpdir(), 'silico-session-cli-'));
  const cli = (...args: string[]) => silicoCli(args, { key: owner.key, configDir });
  const made = await cli('session', 'new', 'From the terminal', '--goal', 'Try the doors', '--json');
  assert.equal(made.code, 0, made.stderr);
  const id = JSON.parse(made.stdout).session_id as string;

  const client = new Silico({ apiKey: owner.key, baseUrl: BASE_URL });
  const approve = async (prepared: object) => {
    const plan = prepared as { plan_id: string; plan_sha256: string };
    return client.sessions.applyChange({ plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 });
  };
  await approve(await client.sessions.prepareContract(id, { requirements: [{ id: 'N', text: 'A note of what was seen', evidence_kind: 'note' }] }));
  await approve(await client.sessions.prepareExecution(id, { steps: [{ id: 'look', title: 'Look' }] }));

  assert.equal((await cli('session', 'progress', id, 'look', 'started')).code, 0);
  const early = await cli('session', 'complete', id);
  assert.equal(early.code, 1, 'something is missing');
  assert.match(early.stdout, /Not complete[\s\S]*requirement[\s\S]*N[\s\S]*step[\s\S]*look/);
  const done = await cli('session', 'progress', id, 'look', 'done', '--note', 'saw it', '-e', 'note:the culture plateaued');
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, /recorded #2: look done/);
  const validated = await cli('session', 'validate', id);
  assert.equal(validated.code, 0, validated.stderr);
  assert.match(validated.stdout, /N\s+note\s+satisfied/);
  assert.match(validated.stdout, /not a scientific validation/);
  const bad = await cli('session', 'validate', id, '-e', 'no-equals-sign');
  assert.equal(bad.code, 2);
  const shown = await cli('session', 'show', id);
  assert.match(shown.stdout, /look\s+done/);
  assert.match(shown.stdout, /Validation: 1 satisfied/);
  const complete = await cli('session', 'complete', id);
  assert.equal(complete.code, 0, complete.stdout + complete.stderr);
  assert.equal((await client.sessions.get(id)).status, 'completed');
  const after = await cli('session', 'progress', id, 'look', 'started');
  assert.equal(after.code, 3);
  assert.match(after.stderr, /session_completed/);
});
