import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { call, closeTestDb, newAccount, newRunRow, testDb, testObjects, waitForRun } from '../helpers.ts';
import { insertAcceptedRun, recordArtifact } from '../../storage/db/runs.ts';
import { finishRun } from '../../storage/runLifecycle.ts';
import { newId } from '../../storage/ids.ts';
import { mcpClients, mcpRefusal as refusal } from '../mcpClients.ts';

// MCP resources with the official TypeScript SDK as the client, over its real transport:
// a run's results and public artifacts are resources an agent lists and reads by URI,
// under the same scopes and ownership as the REST reads.

after(closeTestDb);
const { http: client } = mcpClients();

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let owner: Awaited<ReturnType<typeof newAccount>>;
let runId = '';
before(async () => {
  owner = await newAccount({ usd: 2 });
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/sir-epidemic@1.0.0', inputs: {}, max_runtime_seconds: 60 } });
  assert.equal(res.status, 200, res.text);
  runId = (await waitForRun(owner.key, res.body.id)).id;
});

test('the resource templates are offered, and a run\'s results list each public artifact\'s resource_uri', async () => {
  const c = await client(owner.key);
  assert.ok(c.getServerCapabilities()?.resources, 'the server declares resources');
  const templates = (await c.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  assert.deepEqual(templates, ['silico://runs/{run_id}/results', 'silico://runs/{run_id}/artifacts/{artifact_id}', 'silico://hub/releases/{reference}', 'silico://passports/{passport_id}']);
  const results = (await call('GET', `/runs/${runId}/results`, { key: owner.key })).body;
  assert.ok(results.artifacts.length > 0);
  for (const a of results.artifacts) assert.equal(a.resource_uri, `silico://runs/${runId}/artifacts/${a.id}`);
});

test('resources/list lists a run\'s results and its artifacts; resources/read returns bytes whose sha256 is the artifact\'s (text for CSV and JSON), and results equal REST\'s', async () => {
  const c = await client(owner.key);
  const listed = (await c.listResources()).resources;
  const results = (await call('GET', `/runs/${runId}/results`, { key: owner.key })).body;
  assert.deepEqual(listed.map((r) => r.uri), [`silico://runs/${runId}/results`, ...results.artifacts.map((a: any) => a.resource_uri)]);
  for (const a of results.artifacts) {
    const [content] = (await c.readResource({ uri: a.resource_uri })).contents;
    assert.equal(content!.uri, a.resource_uri);
    assert.equal(content!.mimeType, a.content_type);
    const bytes = 'text' in content! ? Buffer.from(content.text as string, 'utf8') : Buffer.from(content!.blob as string, 'base64');
    assert.equal(sha256(bytes), a.sha256, `${a.file_name} read whole and unchanged`);
    if (/csv|json/.test(a.content_type)) assert.ok('text' in content!, `${a.file_name} (${a.content_type}) is text`);
  }
  const [read] = (await c.readResource({ uri: `silico://runs/${runId}/results` })).contents;
  const body = JSON.parse((read as { text: string }).text);
  assert.deepEqual({ ...body, request_id: null }, { ...results, request_id: null });
});

test('another account\'s run, an unknown artifact and a URI no template matches are the same resource-not-found; a key without runs:read is refused its scope', async () => {
  const stranger = await client((await newAccount()).key);
  const theirs = await refusal(stranger.readResource({ uri: `silico://runs/${runId}/results` }));
  assert.equal(theirs.code, -32002);
  assert.equal((theirs.data as any).error.code, 'run_not_found');
  const mine = await client(owner.key);
  const missing = await refusal(mine.readResource({ uri: `silico://runs/${runId}/artifacts/art_${'0'.repeat(26)}` }));
  assert.equal(missing.code, -32002);
  assert.equal((await refusal(mine.readResource({ uri: 'silico://elsewhere/1' }))).code, -32002);
  const narrow = await client((await newAccount({ scopes: ['hub:read'] })).key);
  const scoped = await refusal(narrow.readResource({ uri: `silico://runs/${runId}/results` }));
  assert.equal((scoped.data as any).error.code, 'insufficient_scope');
});

test('a release is a resource as GET /hub/releases/{reference} answers it', async () => {
  const c = await client(owner.key);
  const [read] = (await c.readResource({ uri: `silico://hub/releases/${encodeURIComponent('platform/sir-epidemic@1.0.0')}` })).contents;
  const rest = (await call('GET', `/hub/releases/${encodeURIComponent('platform/sir-epidemic@1.0.0')}`, { key: owner.key })).body;
  assert.deepEqual({ ...JSON.parse((read as { text: string }).text), request_id: null }, { ...rest, request_id: null });
});

test('an artifact over 16 MiB is refused by resources/read, naming its REST download', async () => {
  const { account } = owner;
  const run = await insertAcceptedRun(testDb(), newRunRow(account.id));
  await finishRun(testDb(), { runId: run.id, status: 'completed', computeSeconds: 0 });
  const big = randomBytes(16 * 1024 * 1024 + 1);
  const sha = await testObjects().putBlob(big);
  const { id } = await recordArtifact(testDb(), run.id, newId('art'), { role: 'trajectory', file_name: 'big.bin', content_type: 'application/octet-stream', format: 'binary', size_bytes: big.length, sha256: sha, public: true });
  const c = await client(owner.key);
  const err = await refusal(c.readResource({ uri: `silico://runs/${run.id}/artifacts/${id}` }));
  assert.match(err.message, new RegExp(`GET /v1/runs/${run.id}/artifacts/${id}`));
  assert.equal((err.data as any).download_path, `/v1/runs/${run.id}/artifacts/${id}`);
});
