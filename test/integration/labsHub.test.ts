import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { admin, call, errorOf, closeTestDb, newAccount, refusedWithin, testDb, until, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { insertRelease } from '../../storage/db/releases.ts';
import { sha256Hex } from '../../storage/digest.ts';

after(closeTestDb);


test('GET /labs lists owned labs with their workspaces; PATCH and PUT visibility change them, nothing else', async () => {
  const a = await newAccount();
  const b = await newAccount();
  const ws = (await call('POST', '/workspaces', { key: a.key, body: { title: 'Cell cycle oscillator' } })).body;
  const list = await call('GET', '/labs', { key: a.key });
  assert.equal(list.status, 200);
  const lab = list.body.items[0];
  assert.equal(lab.lab_id, ws.lab_id);
  assert.equal(lab.name, 'cell-cycle-oscillator');
  assert.deepEqual(lab.workspace_ids, [ws.workspace_id]);
  assert.deepEqual(lab.releases, []);
  assert.equal(lab.visibility, 'private');
  const patched = await call('PATCH', `/labs/${lab.lab_id}`, { key: a.key, body: { title: 'Cell cycle', description: 'Goldbeter model' } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.title, 'Cell cycle');
  assert.equal(patched.body.name, 'cell-cycle-oscillator', 'the stable name does not change with the title');
  const vis = await call('PUT', `/labs/${lab.lab_id}/visibility`, { key: a.key, body: { visibility: 'public' } });
  assert.equal(vis.body.visibility, 'public');
  assert.equal(vis.body.warnings[0].code, 'hub_listing_unchanged');
  assert.equal((await call('GET', '/labs?visibility=public&query=cycle', { key: a.key })).body.items.length, 1);
  assert.equal((await call('GET', '/labs?visibility=private', { key: a.key })).body.items.length, 0);
  const foreign = await call('PATCH', `/labs/${lab.lab_id}`, { key: b.key, body: { title: 'mine now' } });
  assert.equal(errorOf(foreign).code, 'lab_not_found');
  assert.deepEqual((await call('GET', '/labs', { key: b.key })).body.items, []);
});

test('GET /hub/search: full text and filters over visible releases; private ones of others are absent', async () => {
  const found = await call('GET', '/hub/search?query=epidemic', {});
  assert.equal(found.status, 200);
  assert.equal(found.body.items[0].ref, 'platform/sir-epidemic@1.0.0');
  const byTag = await call('GET', '/hub/search?tags=microbiology', {});
  assert.deepEqual(byTag.body.items.map((i: any) => i.ref), ['platform/microbial-growth@1.0.0']);
  const edu = await call('GET', '/hub/search?intended_use=education&compute_class=cpu&limit=100', {});
  assert.ok(edu.body.items.length >= 1 && edu.body.items.every((i: any) => i.intended_use === 'education' && i.compute_class === 'cpu'));
  const paged = await call('GET', '/hub/search?limit=2', {});
  assert.equal(paged.body.items.length, 2);
  assert.equal(paged.body.has_more, true);
  const next = await call('GET', `/hub/search?limit=2&cursor=${encodeURIComponent(paged.body.next_cursor)}`, {});
  assert.notDeepEqual(next.body.items.map((i: any) => i.ref), paged.body.items.map((i: any) => i.ref));

  const a = await newAccount();
  const b = await newAccount();
  await insertRelease(testDb(), {
    account_id: a.account.id, namespace: a.account.namespace, name: 'zebrafish-somite', version: '1.0.0', title: 'Zebrafish somite clock',
    visibility: 'private', manifest: {}, inputs: [], outputs: [], package_sha256: sha256Hex('z'),
  });
  const mine = await call('GET', '/hub/search?query=zebrafish', { key: a.key });
  assert.deepEqual(mine.body.items.map((i: any) => i.name), ['zebrafish-somite']);
  const theirs = await call('GET', '/hub/search?query=zebrafish', { key: b.key });
  assert.deepEqual(theirs.body.items, []);
  const inspect = await call('GET', `/hub/releases/${encodeURIComponent(`${a.account.namespace}/zebrafish-somite@1.0.0`)}`, { key: b.key });
  assert.equal(errorOf(inspect).code, 'release_not_found');
});

test('GET /hub/releases/{reference} inspects a release without executing it: contract, files with sha256, digest', async () => {
  const res = await call('GET', `/hub/releases/${encodeURIComponent('platform/predator-prey@1.0.0')}`, {});
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.contract.ref, 'platform/predator-prey@1.0.0');
  assert.match(res.body.package_sha256, /^sha256:[0-9a-f]{64}$/);
  const labYaml = res.body.files.find((f: any) => f.path === 'payload/lab.yaml');
  assert.match(labYaml.sha256, /^[0-9a-f]{64}$/);
  assert.ok(res.body.files.some((f: any) => f.path.startsWith('payload/models/plot/')));
  assert.equal(res.body.warnings[0].code, 'untrusted_metadata');
  const bad = await call('GET', '/hub/releases/not-a-reference', {});
  assert.equal(errorOf(bad).param, 'reference');
  const raw = await call('GET', '/hub/releases/platform/predator-prey@1.0.0', {});
  assert.equal(raw.status, 200, `a reference with its / unencoded resolves too: ${raw.text}`);
  assert.equal(raw.body.package_sha256, res.body.package_sha256);
  assert.equal(errorOf(await call('GET', '/hub/releases/platform/no-such-lab@1.0.0', {})).code, 'release_not_found');
});

test('visibility and Hub listing are two settings: team shares with the team\'s members only, and listing changes only when the operator lists', { timeout: 180_000 }, async () => {
  const team = await newAccount({ kind: 'team', usd: 5 });
  const member = await newAccount({ usd: 5 });
  const stranger = await newAccount({ usd: 5 });
  await admin('accounts', 'add-member', '--team', team.account.namespace, '--member', member.account.namespace);
  const ws = await workspaceOfLab(team.key, 'Shared kinetics', path.join(REPO_ROOT, 'labs/enzyme-kinetics'));
  const prep = await call('POST', '/publication-plans', { key: team.key, body: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, version: '1.0.0' } });
  assert.equal((await call('POST', '/publications', { key: team.key, body: { plan_id: prep.body.plan_id, plan_sha256: prep.body.plan_sha256 } })).status, 200);
  const ref = prep.body.reference as string;
  const inspect = async (key: string) => (await call('GET', `/hub/releases/${encodeURIComponent(ref)}`, { key })).status;
  const searched = async (key: string) => ((await call('GET', '/hub/search?query=shared&limit=100', { key })).body.items as any[]).some((i) => i.ref === ref);
  await until(120000, async () => ((await inspect(team.key)) === 200 ? true : undefined));
  const visibility = async (v: string) => call('PUT', `/labs/${ws.lab_id}/visibility`, { key: team.key, body: { visibility: v } });

  assert.deepEqual([await inspect(member.key), await inspect(stranger.key)], [404, 404], 'private: only the owner');
  const toTeam = await visibility('team');
  assert.equal(toTeam.body.hub_listed, false);
  assert.match(toTeam.body.warnings[0].message, /team's members.*not listed/);
  assert.deepEqual([await inspect(member.key), await inspect(stranger.key)], [200, 404], 'team: the members, not a stranger');
  assert.equal((await call('POST', '/run-plans', { key: member.key, body: { capability_ref: ref, inputs: {} } })).status, 200, 'a member can plan a run of it');
  assert.equal(errorOf(await call('POST', '/run-plans', { key: stranger.key, body: { capability_ref: ref, inputs: {} } })).code, 'capability_not_found');
  assert.equal(await searched(member.key), false, 'visible is not listed');

  await visibility('public');
  assert.equal(await inspect(stranger.key), 200);
  const strangerPlans = () => call('POST', '/run-plans', { key: stranger.key, body: { capability_ref: ref, inputs: {} } });
  assert.equal((await strangerPlans()).status, 200, 'public: anyone can plan a run of it');
  assert.equal(await searched(stranger.key), false, 'public does not list it on the Hub');
  assert.equal(await searched(team.key), true, 'the owner always finds its own');
  const listed = await admin('hub', 'list', '--account', team.account.namespace, '--lab', 'shared-kinetics');
  assert.deepEqual([listed.hub_listed, listed.releases], [true, 1]);
  assert.equal(await searched(stranger.key), true, 'listed by the operator: Hub search offers it');

  const madePrivate = Date.now();
  const back = await visibility('private');
  // The api keeps resolved references until a release changes: the change reaches it as a
  // Postgres notice, a moment after it commits.
  await refusedWithin(2000, strangerPlans, (res) => res.status === 404, madePrivate);
  assert.equal(back.body.hub_listed, true, 'still listed: visibility did not change it');
  assert.deepEqual(back.body.warnings.map((w: any) => w.code), ['hub_listing_unchanged', 'listed_not_public']);
  assert.deepEqual([await inspect(stranger.key), await searched(stranger.key), await inspect(member.key)], [404, false, 404]);
});
