import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { call, closeTestDb, errorOf, newAccount, testDb } from '../helpers.ts';
import { setSourceMode, sourceRequests } from '../biologyControl.ts';
import { createObjectStore, blobKey } from '../../storage/objects.ts';
import { passportOf } from '../../sdk/src/index.ts';
import { BIOLOGY_STAGING_PREFIX } from '../../activities/biology/activities.ts';
import { ENTRIES, fasta } from '../fixtures/biology/records.ts';

// The biology sources of the test stack are a fixture server answering in UniProt's,
// RCSB's and NCBI's own formats (test/fixtures/biology/server.ts); each test sets how a
// source misbehaves and puts it back.

type Account = Awaited<ReturnType<typeof newAccount>>;
let owner: Account;
const objects = createObjectStore({
  endpoint: process.env.S3_ENDPOINT!, region: 'us-east-1', accessKeyId: process.env.S3_ACCESS_KEY_ID!, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY!, bucket: process.env.S3_BUCKET ?? 'silico',
});
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const resourcesOf = async (accountId: string) => testDb()('biology_resources').where({ account_id: accountId }).orderBy('created_at');

before(async () => {
  owner = await newAccount({ usd: 5 });
});
afterEach(async () => {
  for (const s of ['uniprot', 'pdb', 'ncbi'] as const) await setSourceMode(s, 'ok');
});
after(async () => {
  await closeTestDb();
});

test('a search across three sources gives normalized hits from each; one failing source gives the rest and a warning naming it', async () => {
  const all = await call('POST', '/biology/search', { key: owner.key, body: { source_ids: ['uniprot', 'pdb', 'ncbi_nucleotide'], query: 'hemoglobin', limit: 5 } });
  assert.equal(all.status, 200, all.text);
  const bySource = (id: string) => all.body.hits.filter((h: any) => h.source_id === id);
  for (const id of ['uniprot', 'pdb', 'ncbi_nucleotide']) assert.ok(bySource(id).length > 0, `hits from ${id}`);
  for (const h of all.body.hits) {
    assert.deepEqual(Object.keys(h).sort(), ['organism', 'record_id', 'source_id', 'title', 'url', 'version']);
    assert.ok(h.title && h.record_id && h.url.startsWith('https://'));
  }
  assert.equal(bySource('uniprot')[0].organism, 'Homo sapiens');
  assert.match(bySource('ncbi_nucleotide')[0].record_id, /^[A-Z]{2}_\d+\.\d+$/, 'NCBI hits are exact accession.versions');
  assert.deepEqual(all.body.warnings, []);

  await setSourceMode('pdb', { kind: 'status', status: 503 });
  const partial = await call('POST', '/biology/search', { key: owner.key, body: { source_ids: ['uniprot', 'pdb', 'ncbi_nucleotide'], query: 'hemoglobin', limit: 5 } });
  assert.equal(partial.status, 200, partial.text);
  assert.equal(partial.body.hits.filter((h: any) => h.source_id === 'pdb').length, 0);
  assert.ok(partial.body.hits.some((h: any) => h.source_id === 'uniprot') && partial.body.hits.some((h: any) => h.source_id === 'ncbi_nucleotide'));
  assert.deepEqual(partial.body.warnings.map((w: any) => [w.code, w.source_id, w.reason]), [['source_failed', 'pdb', 'source_unavailable']]);
  assert.deepEqual(partial.body.sources.find((s: any) => s.source_id === 'pdb'), { source_id: 'pdb', status: 'failed' });
});

test('a source answering 429 with Retry-After is retried after that wait, within the request', async () => {
  await setSourceMode('uniprot', { kind: 'rate_limited', times: 1, retryAfterSeconds: 1 });
  const t0 = Date.now();
  const res = await call('POST', '/biology/search', { key: owner.key, body: { source_ids: ['uniprot'], query: 'insulin' } });
  assert.equal(res.status, 200, res.text);
  assert.ok(res.body.hits.length > 0);
  const asked = (await sourceRequests()).filter((r) => r.at >= t0 && r.path.includes('/uniprotkb/search'));
  assert.equal(asked.length, 2, 'refused once, then asked again');
  assert.ok(asked[1]!.at - asked[0]!.at >= 950, `waited ${asked[1]!.at - asked[0]!.at} ms for Retry-After: 1`);
});

test('every source failing is 503 with Retry-After, naming each', async () => {
  await setSourceMode('uniprot', { kind: 'status', status: 500 });
  const res = await call('POST', '/biology/search', { key: owner.key, body: { source_ids: ['uniprot'], query: 'insulin' } });
  assert.equal(res.status, 503, res.text);
  assert.equal(errorOf(res).code, 'sources_unavailable');
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
});

test('fetch stores the exact bytes; the same record twice is two resources with one sha256; a wrong expected_sha256 is 409 and stores nothing', async () => {
  const first = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905'] } });
  assert.equal(first.status, 200, first.text);
  const [r1] = first.body.resources;
  assert.match(r1.resource_id, /^res_/);
  assert.equal(r1.media_type, 'text/x-fasta');
  assert.equal(r1.version, 'P69905.2', 'the sequence version its FASTA header states');
  const stored = await objects.getBytes(blobKey(r1.sha256));
  assert.equal(sha256(stored), r1.sha256);
  assert.equal(stored.length, r1.size_bytes);
  assert.ok(stored.toString('utf8').startsWith('>sp|P69905|'), 'the bytes the source served');

  const second = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905'] } });
  const [r2] = second.body.resources;
  assert.notEqual(r2.resource_id, r1.resource_id);
  assert.equal(r2.sha256, r1.sha256);
  assert.notEqual(r2.retrieved_at, r1.retrieved_at);

  const before = (await resourcesOf(owner.account.id)).length;
  const wrong = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905'], expected_sha256: 'a'.repeat(64) } });
  assert.equal(wrong.status, 409, wrong.text);
  assert.equal(errorOf(wrong).code, 'checksum_mismatch');
  assert.equal(errorOf(wrong).param, 'expected_sha256');
  assert.equal((await resourcesOf(owner.account.id)).length, before, 'nothing recorded');
  const right = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905'], expected_sha256: r1.sha256 } });
  assert.equal(right.status, 200, right.text);
});

test('several records from each source, in each format, with the versions they state', async () => {
  const pdb = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'pdb', record_ids: ['4HHB'] } });
  assert.equal(pdb.status, 200, pdb.text);
  assert.equal(pdb.body.resources[0].media_type, 'chemical/x-mmcif');
  assert.ok((await objects.getBytes(blobKey(pdb.body.resources[0].sha256))).toString('utf8').startsWith('data_4HHB'));
  const ncbi = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'ncbi_nucleotide', record_ids: ['NM_000518.5'], format: 'genbank' } });
  assert.equal(ncbi.status, 200, ncbi.text);
  assert.equal(ncbi.body.resources[0].version, 'NM_000518.5');
  assert.equal(ncbi.body.resources[0].media_type, 'text/x-genbank');
  const many = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905', 'P68871'], format: 'json' } });
  assert.equal(many.status, 200, many.text);
  assert.deepEqual(many.body.resources.map((r: any) => r.record_id), ['P69905', 'P68871']);

  const badId = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'pdb', record_ids: ['4HHB', '../etc'] } });
  assert.equal(badId.status, 422);
  assert.deepEqual([errorOf(badId).code, errorOf(badId).param], ['record_id_invalid', 'record_ids[1]']);
  const badFormat = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'pdb', record_ids: ['4HHB'], format: 'fasta' } });
  assert.deepEqual([badFormat.status, errorOf(badFormat).code, errorOf(badFormat).param], [422, 'format_not_supported', 'format']);
  const missing = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['Q99999', 'P69905'] } });
  assert.deepEqual([missing.status, errorOf(missing).code], [404, 'record_not_found']);
});

test('a fetch with one record missing leaves nothing at all: no resource, none of the others\' bytes, no staging', async () => {
  const before = (await resourcesOf(owner.account.id)).length;
  // Insulin is fetched by no other test: its bytes are stored only if this fetch stored them.
  const insulin = sha256(Buffer.from(fasta(ENTRIES.find((e) => e.accession === 'P01308')!)));
  const res = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P01308', 'P68871', 'Q99998', 'P69905', 'P04637'] } });
  assert.deepEqual([res.status, errorOf(res).code], [404, 'record_not_found']);
  assert.equal((await resourcesOf(owner.account.id)).length, before);
  assert.equal(await objects.exists(blobKey(insulin)), false, 'a record fetched beside the missing one is not stored');
  assert.deepEqual(await objects.list(BIOLOGY_STAGING_PREFIX), [], 'nothing staged is left');
  // The same record fetched on its own is stored, and its staging removed too.
  const alone = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P01308'] } });
  assert.equal(alone.status, 200, alone.text);
  assert.equal(alone.body.resources[0].sha256, insulin);
  assert.equal(sha256(await objects.getBytes(blobKey(insulin))), insulin);
  assert.deepEqual(await objects.list(BIOLOGY_STAGING_PREFIX), []);
});

test('a redirect to another host, more bytes than the cap: a precise error and nothing stored', async () => {
  const before = (await resourcesOf(owner.account.id)).length;
  await setSourceMode('uniprot', { kind: 'redirect', to: 'http://other-host.invalid/elsewhere' });
  const redirected = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905'] } });
  assert.equal(redirected.status, 502, redirected.text);
  assert.equal(errorOf(redirected).code, 'source_redirect_refused');
  assert.ok(!(await sourceRequests()).some((r) => r.host.startsWith('other-host')), 'the other host was never asked');

  await setSourceMode('uniprot', { kind: 'redirect_same_host' });
  const moved = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905'] } });
  assert.equal(moved.status, 200, 'a redirect within the source is followed');

  await setSourceMode('pdb', { kind: 'oversized', bytes: 3 * 1024 * 1024 });
  const big = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'pdb', record_ids: ['4HHB'] } });
  assert.equal(big.status, 422, big.text);
  assert.deepEqual([errorOf(big).code, errorOf(big).param], ['record_too_large', 'record_ids']);
  assert.equal((await resourcesOf(owner.account.id)).length, before + 1, 'only the followed redirect recorded anything');
});

test('a fetch with an Idempotency-Key runs once: a concurrent duplicate is told to wait, a retry gets the same resources', async () => {
  const key = crypto.randomUUID();
  const body = { source_id: 'ncbi_nucleotide', record_ids: ['NM_000518.5'] };
  const [a, b] = await Promise.all([
    call('POST', '/biology/fetch', { key: owner.key, body, headers: { 'Idempotency-Key': key } }),
    call('POST', '/biology/fetch', { key: owner.key, body, headers: { 'Idempotency-Key': key } }),
  ]);
  const ok = [a, b].find((r) => r.status === 200)!;
  assert.ok(ok, `${a.status} ${b.status}`);
  const other = [a, b].find((r) => r !== ok)!;
  assert.ok(other.status === 200 || (other.status === 409 && errorOf(other).code === 'idempotency_in_progress'), other.text);
  const again = await call('POST', '/biology/fetch', { key: owner.key, body, headers: { 'Idempotency-Key': key } });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body.resources, ok.body.resources);
  const recorded = await testDb()('biology_resources').where({ account_id: owner.account.id, fetch_id: (await testDb()('biology_resources').where({ id: ok.body.resources[0].resource_id }).first()).fetch_id });
  assert.equal(recorded.length, 1);
});

test('a source slower than its timeout is named in the warnings; the others answer', async () => {
  await setSourceMode('pdb', { kind: 'slow', delayMs: 5000 });
  const t0 = Date.now();
  const res = await call('POST', '/biology/search', { key: owner.key, body: { source_ids: ['uniprot', 'pdb'], query: 'hemoglobin' } });
  assert.equal(res.status, 200, res.text);
  assert.ok(res.body.hits.every((h: any) => h.source_id === 'uniprot') && res.body.hits.length > 0);
  assert.deepEqual(res.body.warnings.map((w: any) => [w.source_id, w.reason]), [['pdb', 'source_unavailable']]);
  assert.ok(Date.now() - t0 < 25_000, 'answered within the search deadline');
});

test('a source\'s request rate holds across concurrent requests (NCBI: 3 a second)', async () => {
  const t0 = Date.now();
  const ids = ['NM_000518.5', 'NM_000558.5', 'NM_000207.3'];
  const answers = await Promise.all([0, 1, 2].map(() => call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'ncbi_nucleotide', record_ids: ids } })));
  for (const a of answers) assert.equal(a.status, 200, a.text);
  const asked = (await sourceRequests()).filter((r) => r.at >= t0 && r.path.includes('/efetch.fcgi')).map((r) => r.at).sort((a, b) => a - b);
  assert.equal(asked.length, 9);
  // Fixed one-second windows of 3: nine requests span at least two window changes.
  assert.ok(asked.at(-1)! - asked[0]! >= 1900, `9 requests in ${asked.at(-1)! - asked[0]!} ms`);
});

test('without managed operations: 403 gateway_not_enabled; another account cannot pin my resource', async () => {
  const plain = await newAccount({ gateway: false });
  const res = await call('POST', '/biology/search', { key: plain.key, body: { source_ids: ['uniprot'], query: 'x' } });
  assert.equal(res.status, 403);
  assert.equal(errorOf(res).code, 'gateway_not_enabled');
  const fetchRes = await call('POST', '/biology/fetch', { key: plain.key, body: { source_id: 'uniprot', record_ids: ['P69905'] } });
  assert.equal(errorOf(fetchRes).code, 'gateway_not_enabled');
});

test('a fetched resource pinned into a workspace revision (file_put by resource_id) is in its evidence and in a passport\'s provenance', async () => {
  const fetched = await call('POST', '/biology/fetch', { key: owner.key, body: { source_id: 'uniprot', record_ids: ['P69905'] } });
  const resource = fetched.body.resources[0];
  const ws = await call('POST', '/workspaces', { key: owner.key, body: { title: 'pinned evidence' } });
  assert.equal(ws.status, 200, ws.text);
  const prepare = (key: string, resourceId: string) => call('POST', `/workspaces/${ws.body.workspace_id}/change-plans`, {
    key, body: { base_revision_id: ws.body.revision.revision_id, operations: [{ kind: 'file_put', path: 'data/hba.fasta', resource_id: resourceId }] },
  });
  const stranger = await newAccount();
  const theirs = await call('POST', '/workspaces', { key: stranger.key, body: { title: 'not yours' } });
  const refused = await call('POST', `/workspaces/${theirs.body.workspace_id}/change-plans`, {
    key: stranger.key, body: { base_revision_id: theirs.body.revision.revision_id, operations: [{ kind: 'file_put', path: 'x.fasta', resource_id: resource.resource_id }] },
  });
  assert.deepEqual([refused.status, errorOf(refused).code, errorOf(refused).param], [404, 'resource_not_found', 'operations[0].resource_id']);

  const plan = await prepare(owner.key, resource.resource_id);
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.operations[0].resource_id, resource.resource_id);
  assert.equal(plan.body.operations[0].sha256, resource.sha256);
  const applied = await call('POST', '/workspace-revisions', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.ok([200, 201].includes(applied.status), applied.text);
  const read = await call('GET', `/workspaces/${ws.body.workspace_id}`, { key: owner.key });
  const pinned = read.body.evidence.filter((e: any) => e.kind === 'resource');
  assert.equal(pinned.length, 1);
  assert.deepEqual([pinned[0].resource_id, pinned[0].path, pinned[0].sha256, pinned[0].source_id, pinned[0].record_id], [resource.resource_id, 'data/hba.fasta', resource.sha256, 'uniprot', 'P69905']);
  assert.equal(read.body.revision.files.find((f: any) => f.path === 'data/hba.fasta').sha256, resource.sha256);

  const res = await call('GET', `/passports?workspace_id=${ws.body.workspace_id}&revision_id=${applied.body.revision_id}`, { key: owner.key });
  assert.equal(res.status, 200, res.text);
  const chain = (passportOf(res.body) as any).checks.find((c: any) => c.check === 'provenance_chain');
  const link = chain.evidence.links.find((l: any) => l.link === 'pinned_resource');
  assert.deepEqual([link.resource_id, link.path, link.resource_sha256, link.record_id, link.verified], [resource.resource_id, 'data/hba.fasta', resource.sha256, 'P69905', true]);
});
