import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { BASE_URL, call, closeTestDb, newAccount, testDb, testObjects, waitForRun } from '../helpers.ts';
import { sha256Hex } from '../../storage/digest.ts';
import { createObjectSweepActivities } from '../../activities/objectSweep.ts';
import { blobKey } from '../../storage/objects.ts';
import { getFile } from '../../storage/db/files.ts';

after(closeTestDb);

// Each pass is narrowed to this file's keys: other files' writes in flight on the shared
// stack are younger than any grace, but a grace of one second is not theirs to meet.
const sweep = (keys: string[], graceSeconds = 1) => createObjectSweepActivities({ db: testDb(), objects: testObjects() }).sweepUnnamedObjects(graceSeconds, keys);
const aged = () => new Promise((r) => setTimeout(r, 2100));

test('objects no record names are removed once past the grace; every kind of record keeps what it names; young ones stay', async () => {
  const owner = await newAccount({ usd: 5 });
  const objects = testObjects();
  // Bytes a write stored before failing: a blob and an upload whose records were never made.
  const orphanBlob = blobKey(await objects.putBlob(Buffer.from(`orphan ${randomUUID()}`)));
  const orphanUpload = `files/${randomUUID()}`;
  await objects.putObject(orphanUpload, Buffer.from('an upload whose record was never made'));

  // An upload, a workspace revision's file, a change prepared but not applied, and a run's artifact.
  const form = new FormData();
  form.append('file', new Blob([new TextEncoder().encode(`uploaded ${randomUUID()}`)]), 'in.txt');
  const uploaded = await (await fetch(`${BASE_URL}/files`, { method: 'POST', headers: { Authorization: `Bearer ${owner.key}` }, body: form })).json() as { file_id: string };
  const uploadKey = (await getFile(testDb(), uploaded.file_id, owner.account.id))!.object_key;
  const ws = (await call('POST', '/workspaces', { key: owner.key, body: { title: 'Sweep' } })).body;
  const applied = `applied ${randomUUID()}`;
  const plan = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key: owner.key, body: { base_revision_id: ws.head_revision_id, operations: [{ kind: 'file_put', path: 'a.txt', content: applied }] } });
  const revision = await call('POST', '/workspace-revisions', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(revision.status, 200, revision.text);
  const pending = `prepared ${randomUUID()}`;
  const prepared = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key: owner.key, body: { base_revision_id: revision.body.revision_id, operations: [{ kind: 'file_put', path: 'b.txt', content: pending }] } });
  assert.equal(prepared.status, 200, prepared.text);
  const run = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': randomUUID() }, body: { ref: 'platform/sir-epidemic@1.0.0', inputs: {} } });
  assert.equal((await waitForRun(owner.key, run.body.id)).status, 'completed');
  const results = (await call('GET', `/runs/${run.body.id}/results`, { key: owner.key })).body;
  const artifactKeys = results.artifacts.map((a: { sha256: string }) => blobKey(a.sha256));
  const named = [uploadKey, blobKey(sha256Hex(applied)), blobKey(sha256Hex(pending)), ...artifactKeys];

  await aged();
  const young = await sweep([orphanBlob, orphanUpload], 3600);
  assert.deepEqual(young, { removed: 0, kept_young: 2 }, 'nothing younger than the grace is removed');
  const result = await sweep([orphanBlob, orphanUpload, ...named]);
  assert.equal(result.removed, 2, JSON.stringify(result));
  assert.equal(await objects.exists(orphanBlob), false);
  assert.equal(await objects.exists(orphanUpload), false);
  for (const k of named) assert.equal(await objects.exists(k), true, `${k} is named by a record and kept`);
});
