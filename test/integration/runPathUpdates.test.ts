import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeTestDb, newAccount, newRunRow, testDb } from '../helpers.ts';
import { appendEvents, insertAcceptedRun } from '../../storage/db/runs.ts';
import { acquireRunSlot, finishRun } from '../../storage/runLifecycle.ts';

// A run's transitions each write one version of its row (migration 061): its slot with its
// `running` event, its progress with its progress event, its ending with its two events.
// Real Postgres; what is read back is the row, its events in order and their numbers.

after(closeTestDb);

test('a run\'s slot, progress and ending each move its event counter with it, its events numbered without a gap', { timeout: 60_000 }, async () => {
  const db = testDb();
  const owner = await newAccount({ usd: 10 });
  const { id } = await insertAcceptedRun(db, newRunRow(owner.account.id, { experiment_id: null }));
  const row = () => db('runs').where({ id }).first('status', 'event_seq', 'progress', 'settled_micros');
  const events = () => db('run_events').where({ run_id: id }).orderBy('seq').select('seq', 'type', 'message', 'data');
  const before = (await row()).event_seq as number;

  assert.equal(await acquireRunSlot(db, id, 10), 'running');
  assert.deepEqual(await row(), { status: 'running', event_seq: before + 1, progress: 0, settled_micros: null });
  assert.deepEqual((await events()).at(-1), { seq: before + 1, type: 'state_changed', message: 'Run is running.', data: { status: 'running' } });

  await appendEvents(db, id, [
    { type: 'log', message: 'started', data: {} },
    { type: 'progress', message: '40%', data: { fraction: 0.4, t: 4 } },
    { type: 'progress', message: '70%', data: { fraction: 0.7, t: 7 } },
  ]);
  assert.equal((await row()).progress, 0.7, 'the newest progress event\'s fraction');
  await appendEvents(db, id, [{ type: 'progress', message: 'Building the lab\'s environment.', data: { phase: 'environment', status: 'building' } }]);
  assert.equal((await row()).progress, 0.7, 'a progress event without a fraction leaves it');
  await appendEvents(db, id, [{ type: 'progress', message: 'past the end', data: { fraction: 1.5 } }]);
  assert.equal((await row()).progress, 1, 'bounded to 1');

  assert.equal(await finishRun(db, { runId: id, status: 'failed', error: { code: 'lab_error', message: 'it broke' }, computeSeconds: 0 }), 'failed');
  const ended = await row();
  assert.equal(ended.status, 'failed');
  assert.equal(ended.event_seq, before + 8);
  const all = await events();
  assert.deepEqual(all.map((e) => e.seq), Array.from({ length: all.length }, (_, i) => all[0]!.seq + i), 'numbered without a gap');
  const reserved = Number((await db('runs').where({ id }).first('reserved_micros')).reserved_micros);
  assert.deepEqual(all.slice(-2).map((e) => [e.seq, e.type, e.message, e.data]), [
    [before + 7, 'charge_settled', `Charged 0 micro-dollars of ${reserved} reserved.`, { charged_micros: 0, released_micros: reserved }],
    [before + 8, 'state_changed', 'Run failed.', { status: 'failed', error: { code: 'lab_error', message: 'it broke' } }],
  ]);

  // Ended: what arrives late is dropped, and a second ending changes nothing.
  await appendEvents(db, id, [{ type: 'log', message: 'a late line', data: {} }]);
  assert.equal(await finishRun(db, { runId: id, status: 'completed', computeSeconds: 1 }), 'failed');
  assert.equal((await row()).event_seq, before + 8);
  assert.equal((await events()).length, all.length);
});
