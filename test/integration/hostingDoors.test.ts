import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BASE_URL, call, closeTestDb, hostedLabOwner, retireHosting, silicoCli, type CliResult } from '../helpers.ts';
import { ConflictError, HostingEnded, Silico } from '../../sdk/src/index.ts';
import { setSourceMode } from '../biologyControl.ts';

// The other doors to hosting and biology sources: the SDK's `hosting` resource (request,
// waitFor, pause, resume, retire) and `silico host ...` / `silico bio ...`, on the real stack.

const configDir = mkdtempSync(path.join(os.tmpdir(), 'silico-cli-'));
const hosted: Array<{ key: string; labId: string }> = [];

function silico(args: string[], key: string): Promise<CliResult> {
  return silicoCli(args, { key, configDir });
}

after(async () => {
  // Warm instances are sandboxed processes: none outlives this file.
  for (const h of hosted) await retireHosting(h.key, h.labId);
  await closeTestDb();
});

test('SDK: request → waitFor ready → pause → resume → retire; a stale revision is a ConflictError; waiting past an ending is HostingEnded', { timeout: 240_000 }, async () => {
  const lab = await hostedLabOwner();
  hosted.push({ key: lab.owner.key, labId: lab.labId });
  const sdk = new Silico({ apiKey: lab.owner.key, baseUrl: BASE_URL });
  const requested = await sdk.hosting.request(lab.labId, { release: { reference: lab.reference, sha256: lab.sha256 }, min_instances: 1, max_instances: 1 } as never);
  assert.ok(['requested', 'checking'].includes(requested.status), requested.status);
  const ready = await sdk.hosting.waitFor(lab.labId, ['ready'], { timeoutMs: 120_000 });
  assert.ok(ready.checks.every((c) => c.status === 'passed'));

  await assert.rejects(sdk.hosting.pause(lab.labId, { revision: ready.revision - 1 }), (e: unknown) => e instanceof ConflictError && (e as ConflictError).code === 'revision_conflict');
  const pausing = await sdk.hosting.pause(lab.labId);
  assert.equal(pausing.revision, ready.revision + 1);
  assert.ok(pausing.pending_action === 'pause' || pausing.status === 'paused', 'recorded, applied shortly');
  await sdk.hosting.waitFor(lab.labId, ['paused'], { timeoutMs: 60_000 });
  await sdk.hosting.resume(lab.labId);
  await sdk.hosting.waitFor(lab.labId, ['ready'], { timeoutMs: 60_000 });
  await sdk.hosting.retire(lab.labId);
  await assert.rejects(sdk.hosting.waitFor(lab.labId, ['ready'], { timeoutMs: 60_000 }), (e: unknown) => e instanceof HostingEnded && (e as HostingEnded).hosting?.status === 'retired');
});

test('CLI: silico host plan | request --wait | status | pause --wait | retire --wait, as JSON', { timeout: 240_000 }, async () => {
  const lab = await hostedLabOwner();
  hosted.push({ key: lab.owner.key, labId: lab.labId });
  const key = lab.owner.key;
  const plan = await silico(['--json', 'host', 'plan', lab.labId, '--release', lab.reference, '--min', '1', '--max', '1'], key);
  assert.equal(plan.code, 0, plan.stderr);
  const planned = JSON.parse(plan.stdout);
  assert.equal(planned.release.sha256, lab.sha256, 'the digest bound from the Hub');
  assert.match(planned.cost.caveat, /per hour/);
  assert.equal((await call('GET', `/labs/${lab.labId}/hosting`, { key })).status, 404, 'a plan starts nothing');

  const requested = await silico(['--json', 'host', 'request', lab.labId, '--release', lab.reference, '--min', '1', '--max', '1', '--wait', '--timeout-ms', '120000'], key);
  assert.equal(requested.code, 0, requested.stderr);
  assert.equal(JSON.parse(requested.stdout).status, 'ready');
  const status = await silico(['host', 'status', lab.labId], key);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /ready\s+revision 1/);
  assert.match(status.stdout, /smoke_run\s+passed/);
  const paused = await silico(['--json', 'host', 'pause', lab.labId, '--wait'], key);
  assert.equal(JSON.parse(paused.stdout).status, 'paused', paused.stderr);
  const stale = await silico(['--json', 'host', 'resume', lab.labId, '--revision', '1'], key);
  assert.equal(stale.code, 3);
  assert.equal(JSON.parse(stale.stdout).error.code, 'revision_conflict');
  const retired = await silico(['--json', 'host', 'retire', lab.labId, '--wait'], key);
  assert.equal(retired.code, 0, retired.stderr);
  assert.equal(JSON.parse(retired.stdout).status, 'retired');
});

test('CLI and SDK: silico bio search (a failing source is a warning) and silico bio fetch', async () => {
  const { owner } = await hostedLabOwner();
  const search = await silico(['bio', 'search', 'hemoglobin', '--source', 'uniprot', '--source', 'pdb', '--limit', '2'], owner.key);
  assert.equal(search.code, 0, search.stderr);
  assert.match(search.stdout, /P69905/);
  assert.match(search.stdout, /1A3N/);
  await setSourceMode('pdb', { kind: 'status', status: 503 });
  try {
    const partial = await silico(['bio', 'search', 'hemoglobin', '--source', 'uniprot', '--source', 'pdb'], owner.key);
    assert.equal(partial.code, 0, partial.stderr);
    assert.match(partial.stderr, /warning: pdb gave no results/);
    assert.match(partial.stdout, /P69905/);
  } finally {
    await setSourceMode('pdb', 'ok');
  }
  const fetched = await silico(['--json', 'bio', 'fetch', 'uniprot', 'P69905', '--format', 'json'], owner.key);
  assert.equal(fetched.code, 0, fetched.stderr);
  const [resource] = JSON.parse(fetched.stdout).resources;
  assert.match(resource.resource_id, /^res_/);
  assert.equal(resource.media_type, 'application/json');
  const sdk = new Silico({ apiKey: owner.key, baseUrl: BASE_URL });
  const again = await sdk.biology.fetch({ source_id: 'uniprot', record_ids: ['P69905'], format: 'json' } as never) as unknown as { resources: Array<{ sha256: string }> };
  assert.equal(again.resources[0]!.sha256, resource.sha256);
  const wrong = await silico(['--json', 'bio', 'fetch', 'uniprot', 'P69905', '--sha256', '0'.repeat(64)], owner.key);
  assert.equal(wrong.code, 3);
  assert.equal(JSON.parse(wrong.stdout).error.code, 'checksum_mismatch');
});
