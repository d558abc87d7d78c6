import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { admin, call, closeTestDb, errorOf, newAccount, testDb, waitForRun } from '../helpers.ts';
import { runWorkflowId, sessionWorkflowId } from '../../kernel/workflowNames.ts';
import { serviceArgs } from '../../deploy/local/serviceProcess.ts';
import { sha256Hex } from '../../storage/digest.ts';

after(closeTestDb);


test('operator CLI: account, key shown once and stored as a hash, grant, gateway, feature flags', async () => {
  const ns = `adm-${Date.now().toString(36)}`;
  const acct = await admin('accounts', 'create', '--namespace', ns, '--kind', 'team');
  assert.equal(acct.namespace, ns);
  assert.equal(acct.kind, 'team');
  assert.equal(acct.gateway_enabled, false);

  const key = await admin('keys', 'create', '--account', ns, '--scopes', 'runs:read,hub:read', '--expires-in', '30');
  assert.match(key.api_key, /^sk_[0-9A-Za-z]{40,}$/);
  assert.deepEqual(key.scopes, ['runs:read', 'hub:read']);
  const row = await testDb()('api_keys').where({ id: key.key_id }).first();
  assert.equal(row.key_sha256, sha256Hex(key.api_key), 'only the hash is stored');
  assert.ok(!JSON.stringify(row).includes(key.api_key));
  const listed = await admin('keys', 'list', '--account', ns);
  assert.equal(listed.length, 1);
  assert.ok(!JSON.stringify(listed).includes(key.api_key), 'never shown again');

  const grant = await admin('compute', 'grant', '--account', ns, '--usd', '25.5', '--ref', `grant-${ns}`);
  assert.equal(grant.available_usd, 25.5);
  const again = await admin('compute', 'grant', '--account', ns, '--usd', '25.5', '--ref', `grant-${ns}`);
  assert.equal(again.already_recorded, true);
  assert.equal(again.available_usd, 25.5, 'a grant is recorded once per ref');
  const me = await call('GET', '/account', { key: key.api_key });
  assert.equal(me.body.holdings.compute.available_usd, 25.5);

  const gated = await call('POST', '/runs', { key: key.api_key, body: { ref: 'x/y' }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  assert.equal(gated.status, 403);
  assert.equal((await admin('gateway', 'on', '--account', ns)).gateway_enabled, true);
  assert.equal((await admin('features', 'set', '--account', ns, '--flag', 'archive_member_imports', '--on')).features.archive_member_imports, true);

  const rotated = await admin('keys', 'rotate', key.key_id);
  assert.notEqual(rotated.api_key, key.api_key);
  assert.equal(rotated.client_id, key.client_id, 'rotation keeps the OAuth client id');
  assert.equal(errorOf(await call('GET', '/account', { key: key.api_key })).code, 'api_key_revoked');
  assert.equal((await call('GET', '/account', { key: rotated.api_key })).status, 200);
  await admin('keys', 'revoke', rotated.key_id);
  assert.equal(errorOf(await call('GET', '/account', { key: rotated.api_key })).code, 'api_key_revoked');
});

test('operator CLI refuses bad input with a usage error and exit code 2', async () => {
  const run = promisify(execFile)(process.execPath, [...serviceArgs('deploy/admin.ts'), 'keys', 'create', '--account', 'nobody-here', '--json'], { env: process.env });
  await assert.rejects(run, (err: { code: number; stderr: string }) => err.code === 2 && /no account with namespace/.test(err.stderr));
});

test('operator CLI links both ways: `<kind> show ID` prints the record, the workflow that owns it and its Temporal UI page', async () => {
  const owner = await newAccount({ usd: 5 });
  const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth', inputs: {} } });
  assert.equal(started.status, 200, started.text);
  const run = await waitForRun(owner.key, started.body.id);
  const shown = await admin('runs', 'show', run.id);
  assert.deepEqual([shown.run_id, shown.account_id, shown.status, shown.workflow_id], [run.id, owner.account.id, 'completed', runWorkflowId(run.id)]);
  assert.equal(shown.temporal_ui, `${process.env.TEMPORAL_UI_URL}/namespaces/default/workflows/${runWorkflowId(run.id)}`);
  // The link opens that workflow's page in the UI (it redirects to its latest run).
  assert.equal((await fetch(shown.temporal_ui)).status, 200);

  const session = await call('POST', '/sessions', { key: owner.key, body: { title: 'An operator should not read this title' } });
  const s = await admin('sessions', 'show', session.body.session_id);
  assert.deepEqual([s.session_id, s.account_id, s.status, s.workflow_id], [session.body.session_id, owner.account.id, 'open', sessionWorkflowId(session.body.session_id)]);
  assert.ok(!JSON.stringify(s).includes('should not read'), 'counts and states, not the account\'s words');

  // Another kind's id, or none at all, is refused plainly.
  const missing = promisify(execFile)(process.execPath, [...serviceArgs('deploy/admin.ts'), 'studies', 'show', run.id, '--json'], { env: process.env });
  await assert.rejects(missing, (err: { code: number; stderr: string }) => err.code === 1 && stderrHas(err.stderr, `no study ${run.id}`));
  const bare = promisify(execFile)(process.execPath, [...serviceArgs('deploy/admin.ts'), 'purchases', 'show', '--json'], { env: process.env });
  await assert.rejects(bare, (err: { code: number; stderr: string }) => err.code === 2 && stderrHas(err.stderr, 'purchases show needs the purchase\'s id'));
});

const stderrHas = (stderr: string, text: string) => JSON.parse(stderr).error.message === text;
