/**
 * Spend caps that hold mid-run: an account's and a key's monthly and per-run caps are
 * checked before anything is reserved, and a run allowed to start under a cap lower than
 * its maximum price is stopped when its metered cost reaches the cap.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, call, closeTestDb, errorOf, newAccount, publishFixtureLab, testDb, waitForRun } from '../helpers.ts';
import { getBalances } from '../../storage/ledger.ts';

const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
let owner: Awaited<ReturnType<typeof newAccount>>;
let slowLab: string;

before(async () => {
  owner = await newAccount({ usd: 5 });
  slowLab = await publishFixtureLab(owner, 'slow-lab');
});
after(closeTestDb);

test('a run whose per-run cap is reached mid-run ends cancelled with spend_cap_reached within 5 s of the crossing, charged at most the cap; the ledger balances', async () => {
  // cpu-small costs $0.00001/s here: a $0.00003 cap is 3 s of compute.
  const set = await admin('caps', 'set', '--account', owner.account.namespace, '--key', owner.keyId, '--per-run-usd', '0.00003');
  assert.equal(set.key_caps.per_run_usd, 0.00003);
  const plan = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: slowLab, inputs: { seconds_per_window: 0.5 } } });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready');
  assert.equal(plan.body.estimated_max_usd, 0.00003, 'the reservation is the cap, not the run\'s maximum');
  assert.ok(plan.body.findings.some((f: { code: string }) => f.code === 'spend_cap_applies'));
  const before = await getBalances(testDb(), owner.account.id);
  const res = await call('POST', '/runs', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 }, headers: idem() });
  assert.ok(res.status < 300, res.text);
  assert.equal(res.body.credits_reserved, 0.00003);
  const run = await waitForRun(owner.key, res.body.id, 60_000);
  assert.equal(run.status, 'cancelled');
  assert.equal(run.error?.code, 'spend_cap_reached');
  const ran = (Date.parse(run.finished_at) - Date.parse(run.started_at)) / 1000;
  assert.ok(ran >= 3 && ran <= 3 + 5, `stopped ${ran.toFixed(1)} s after it started: the cap is crossed at 3 s`);
  assert.ok(run.credits_settled > 0 && run.credits_settled <= 0.00003, `charged ${run.credits_settled}, at most the cap`);
  const after = await getBalances(testDb(), owner.account.id);
  assert.equal(before.available_micros - after.available_micros, Math.round(run.credits_settled * 1e6), 'available went down by exactly the charge');
  assert.equal(after.reserved_micros, before.reserved_micros, 'nothing stays reserved');
  assert.equal(after.spent_micros - before.spent_micros, Math.round(run.credits_settled * 1e6));

  const account = (await call('GET', '/account', { key: owner.key })).body;
  assert.deepEqual(account.spend_caps.key.per_run_usd, 0.00003);
  assert.equal(account.spend_caps.account.per_run_usd, null);
  assert.ok(account.spend_caps.key.month_spent_usd >= run.credits_settled, 'this month\'s spend counts the run');
  await admin('caps', 'set', '--account', owner.account.namespace, '--key', owner.keyId, '--per-run-usd', 'none');
});

test('a run over a cap that is already reached is refused before anything is reserved, with a precise code', async () => {
  const who = await newAccount({ usd: 5 });
  await admin('caps', 'set', '--account', who.account.namespace, '--monthly-usd', '0.000005');
  const before = await getBalances(testDb(), who.account.id);
  const plan = await call('POST', '/run-plans', { key: who.key, body: { capability_ref: 'platform/microbial-growth', inputs: {} } });
  assert.equal(plan.body.status, 'blocked');
  const finding = plan.body.findings.find((f: { code: string }) => f.code === 'spend_cap_reached');
  assert.match(finding.message, /monthly cap/);
  const direct = await call('POST', '/runs', { key: who.key, body: { ref: 'platform/microbial-growth', inputs: {} }, headers: idem() });
  assert.equal(direct.status, 422);
  assert.equal(errorOf(direct).code, 'spend_cap_reached');
  assert.deepEqual(await getBalances(testDb(), who.account.id), before, 'nothing reserved');
  assert.equal((await call('GET', '/runs', { key: who.key })).body.items.length, 0, 'no run recorded');
  const account = (await call('GET', '/account', { key: who.key })).body;
  assert.equal(account.spend_caps.account.monthly_usd, 0.000005);
});

test('an approved plan whose cap was lowered afterwards is no longer executable: 409 plan_unavailable, nothing reserved', async () => {
  const who = await newAccount({ usd: 5 });
  const plan = await call('POST', '/run-plans', { key: who.key, body: { capability_ref: 'platform/microbial-growth', inputs: {} } });
  assert.equal(plan.body.status, 'ready');
  await admin('caps', 'set', '--account', who.account.namespace, '--per-run-usd', '0.0001');
  const res = await call('POST', '/runs', { key: who.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 }, headers: idem() });
  assert.equal(res.status, 409, res.text);
  assert.equal(errorOf(res).code, 'plan_unavailable');
  assert.match(errorOf(res).message, /spend cap/);
  const again = await call('POST', '/run-plans', { key: who.key, body: { capability_ref: 'platform/microbial-growth', inputs: {} } });
  assert.equal(again.body.estimated_max_usd, 0.0001, 'prepared again, it runs under the new cap');
});
