/**
 * Spend caps that hold mid-run: an account's and a key's monthly and per-run caps are
 * checked before anything is reserved, and a run allowed to start under a cap lower than
 * its maximum price is stopped when its metered cost reaches the cap. A study is checked
 * whole; the database itself keeps concurrent acceptances from passing a cap together.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { admin, call, closeTestDb, errorOf, newAccount, publishFixtureLab, silicoCli, testDb, until, waitForRun, workspaceOfLab } from '../helpers.ts';
import { getBalances } from '../../storage/ledger.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

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
  // The CLI shows the caps beside the balance.
  const configDir = await mkdtemp(path.join(tmpdir(), 'silico-caps-'));
  try {
    const cli = await silicoCli(['account'], { key: who.key, configDir });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^caps {6}account: \$0\.000005 a month; \$0 spent this month$/m);
    assert.match(cli.stdout, /^ {10}this key: no cap; \$0 spent this month$/m);
  } finally {
    await rm(configDir, { recursive: true, force: true });
  }
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

test('runs approved at once under a monthly cap with room for two: exactly two are accepted, the others 409 plan_unavailable; the database refuses past the cap itself', async () => {
  const who = await newAccount({ usd: 5 });
  const probe = await call('POST', '/run-plans', { key: who.key, body: { capability_ref: 'platform/microbial-growth', inputs: {}, compute_profile_id: 'cpu-small' } });
  const price = Math.round(probe.body.estimated_max_usd * 1e6);
  await admin('caps', 'set', '--account', who.account.namespace, '--monthly-usd', String((2.5 * price) / 1e6));
  const plans = await Promise.all(Array.from({ length: 5 }, () => call('POST', '/run-plans', { key: who.key, body: { capability_ref: 'platform/microbial-growth', inputs: {}, compute_profile_id: 'cpu-small' } })));
  for (const p of plans) assert.equal(p.body.status, 'ready', 'each fits the cap alone');
  const results = await Promise.all(plans.map((p) => call('POST', '/runs', { key: who.key, body: { plan_id: p.body.plan_id, plan_sha256: p.body.plan_sha256 }, headers: idem() })));
  const accepted = results.filter((r) => r.status < 300);
  const refused = results.filter((r) => r.status === 409);
  assert.equal(accepted.length, 2, results.map((r) => `${r.status} ${r.body?.error?.message ?? ''}`).join('\n'));
  assert.equal(refused.length, 3);
  for (const r of refused) {
    assert.equal(errorOf(r).code, 'plan_unavailable');
    assert.match(errorOf(r).message, /monthly cap/);
  }
  assert.equal((await testDb()('runs').where({ account_id: who.account.id }).count('* as n').first().then((r: any) => Number(r.n))), 2, 'no trace of the refused');
  const account = (await call('GET', '/account', { key: who.key })).body;
  assert.ok(account.spend_caps.account.month_spent_usd <= account.spend_caps.account.monthly_usd, 'within the cap');
  // Whatever the timing of the requests, the database refuses a reservation past the cap.
  await assert.rejects(testDb().raw('SELECT silico_check_spend_caps(?, NULL, ?)', [who.account.id, price]), (err: { code?: string; message: string }) => err.code === 'SLCAP' && /monthly cap/.test(err.message));
  for (const r of accepted) assert.equal((await waitForRun(who.key, r.body.id, 60_000)).status, 'completed');
});

test('a study is checked whole: an arm over the per-run cap and a study over the monthly cap are refused before anything is reserved; its runs count against the key', { timeout: 180_000 }, async () => {
  const who = await newAccount({ usd: 5 });
  const ws = await workspaceOfLab(who.key, 'Capped study', path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth'));
  const arm = (label: string, seconds: number) => ({ label, workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: seconds });
  const plan = (arms: unknown[]) => call('POST', '/experiment-plans', { key: who.key, body: { name: 'Capped', arms } });

  // cpu-small is $0.00001/s: a $0.0003 per-run cap pays for 30 s.
  await admin('caps', 'set', '--account', who.account.namespace, '--key', who.keyId, '--per-run-usd', '0.0003');
  const perRun = await plan([arm('short', 20), arm('long', 60)]);
  assert.equal(perRun.body.status, 'blocked');
  const f = perRun.body.findings.filter((x: { code: string }) => x.code === 'spend_cap_reached');
  assert.equal(f.length, 1);
  assert.equal(f[0].path, 'arms[1].max_runtime_seconds');
  assert.match(f[0].message, /at most 30 fits/);

  await admin('caps', 'set', '--account', who.account.namespace, '--key', who.keyId, '--per-run-usd', 'none', '--monthly-usd', '0.001');
  const monthly = await plan([arm('a', 60), arm('b', 60)]);
  assert.equal(monthly.body.status, 'blocked');
  assert.ok(monthly.body.findings.some((x: { code: string; path: string | null; message: string }) => x.code === 'spend_cap_reached' && x.path === null && /key's monthly cap/.test(x.message)));
  const executed = await call('POST', '/experiments', { key: who.key, body: { plan_id: monthly.body.plan_id, plan_sha256: monthly.body.plan_sha256 } });
  assert.equal(executed.status, 409);
  assert.equal(errorOf(executed).code, 'plan_blocked');
  assert.equal(Number((await getBalances(testDb(), who.account.id)).reserved_micros), 0, 'nothing reserved');

  const fits = await plan([arm('a', 40), arm('b', 40)]);
  assert.equal(fits.body.status, 'ready', JSON.stringify(fits.body.findings));
  const study = await call('POST', '/experiments', { key: who.key, body: { plan_id: fits.body.plan_id, plan_sha256: fits.body.plan_sha256 } });
  assert.equal(study.status, 200, study.text);
  const caps = (await call('GET', '/account', { key: who.key })).body.spend_caps;
  assert.ok(caps.key.month_spent_usd > 0 && caps.key.month_spent_usd <= 0.0008, 'the study\'s runs count against the key that opened it');
  assert.equal(caps.key.month_spent_usd, caps.account.month_spent_usd);
  const done = await until(120_000, async () => {
    const e = (await call('GET', `/experiments/${study.body.id}`, { key: who.key })).body;
    return e.completed_at ? e : undefined;
  });
  const after = (await call('GET', '/account', { key: who.key })).body.spend_caps;
  assert.ok(after.key.month_spent_usd > 0 && after.key.month_spent_usd <= 0.0008, `settled: ${after.key.month_spent_usd}`);
  assert.ok(done.completed_at);
});
