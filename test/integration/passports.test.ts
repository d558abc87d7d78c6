import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { admin, call, closeTestDb, downloadArtifact, errorOf, newAccount, publishFixtureLab, silicoCli, testObjects, waitForRun, workspaceOfLab, type CliResult } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { blobKey } from '../../storage/objects.ts';
import { CHECKS } from '../../storage/passportDocument.ts';
import { verifyPassport, passportOf } from '../../sdk/src/index.ts';

// Passports on the real stack: evidence re-derived from stored bytes (artifacts re-hashed
// by streaming in a Temporal activity), signed with Ed25519 over RFC 8785 canonical JSON,
// verifiable offline by the SDK and by openssl, before and after a key rotation.

after(closeTestDb);
const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth');
const INPUTS = { growth_rate: 0.3, noise: 0.2 };
const SEED = 4242;

let owner: Awaited<ReturnType<typeof newAccount>>;
let stranger: Awaited<ReturnType<typeof newAccount>>;
let ref = '';
let first: any;
let second: any;
/** The first passport of the second run, kept to show a stored one never changes. */
let kept: any;

async function loneRun(): Promise<any> {
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref, inputs: INPUTS, seed: SEED, max_runtime_seconds: 120 } });
  assert.equal(res.status, 200, res.text);
  const run = await waitForRun(owner.key, res.body.id, 180000);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  return run;
}

async function passport(query: string, key = owner.key) {
  return call('GET', `/passports?${query}`, { key });
}

const checkOf = (p: any, name: string) => p.checks.find((c: any) => c.check === name);
const keys = async () => (await call('GET', '/passports/keys', { key: owner.key })).body;

/** `silico ...` as a child process; the key comes from the environment when given. */
function silico(args: string[], key?: string): Promise<CliResult> {
  return silicoCli(args, { key, configDir: mkdtempSync(path.join(os.tmpdir(), 'silico-pp-cfg-')) });
}

/** The passports guide's openssl recipe, run as written in `dir`: true when openssl says the signature verifies. */
async function opensslVerifies(dir: string): Promise<boolean> {
  const guide = readFileSync(path.join(REPO_ROOT, 'docs/guides/passports.md'), 'utf8');
  const line = /^openssl pkeyutl -verify .*$/m.exec(guide)?.[0];
  assert.ok(line, 'the passports guide documents the openssl command');
  assert.equal(line, 'openssl pkeyutl -verify -pubin -inkey key.pem -rawin -in passport.canonical.json -sigfile passport.sig');
  const res = await promisify(execFile)('sh', ['-c', line], { cwd: dir }).then((r) => ({ code: 0, out: r.stdout }), (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }));
  assert.equal(res.code === 0, /Signature Verified Successfully/.test(res.out), `openssl's exit code and words agree: ${res.out}`);
  return res.code === 0;
}

before(async () => {
  owner = await newAccount({ usd: 20 });
  stranger = await newAccount({ usd: 1 });
  ref = await publishFixtureLab(owner, 'noisy-growth');
  first = await loneRun();
  second = await loneRun();
});

test('two lone runs with one seed, inputs and profile leave byte-identical artifacts, and the passport\'s reproducibility check passes with the hashes', async () => {
  const artifactsOf = async (run: any) => (await call('GET', `/runs/${run.id}/results`, { key: owner.key })).body.artifacts as any[];
  const [a, b] = [await artifactsOf(first), await artifactsOf(second)];
  assert.deepEqual(a.map((x) => [x.file_name, x.sha256]), b.map((x) => [x.file_name, x.sha256]), 'the same files with the same hashes');
  const csv = a.find((x) => x.file_name === 'size.csv');
  assert.ok(csv, 'the series is stored');
  assert.deepEqual(await downloadArtifact(owner.key, first.id, csv.artifact_id), await downloadArtifact(owner.key, second.id, b.find((x) => x.file_name === 'size.csv').artifact_id));

  const res = await passport(`run_id=${second.id}`);
  assert.equal(res.status, 200, res.text);
  kept = passportOf(res.body);
  assert.equal(kept.object, 'passport');
  assert.match(kept.passport_id, /^pp_[0-9a-z]{26}$/);
  assert.deepEqual(kept.subject, { kind: 'run', run_id: second.id, resolved_ref: ref, package_sha256: second.package_sha256 });
  assert.deepEqual(kept.checks.map((c: any) => c.check), [...CHECKS], 'seven checks, in order');
  for (const c of kept.checks) {
    assert.ok(['passed', 'failed', 'not_applicable', 'unknown'].includes(c.status));
    assert.ok(!Number.isNaN(Date.parse(c.checked_at)));
  }
  assert.ok(!/score/i.test(JSON.stringify(Object.keys(kept))) && !kept.checks.some((c: any) => 'score' in c), 'no aggregate score');
  assert.equal(res.body.warnings[0].code, 'not_validation');

  const repro = checkOf(kept, 'reproducibility');
  assert.equal(repro.status, 'passed', JSON.stringify(repro.evidence));
  assert.deepEqual(repro.evidence.hashes, b.map((x) => ({ file_name: x.file_name, sha256: x.sha256 })).sort((x, y) => (x.file_name < y.file_name ? -1 : 1)));
  assert.deepEqual(repro.evidence.replicates, [{ run_id: first.id, equal: true, differing: [] }]);
  assert.equal(repro.evidence.criteria.seed, SEED);

  const hashes = checkOf(kept, 'artifact_hashes');
  assert.equal(hashes.status, 'passed');
  assert.equal(hashes.evidence.artifacts.length, b.length);
  for (const x of hashes.evidence.artifacts) assert.equal(x.computed_sha256, x.recorded_sha256);
  for (const name of ['package_integrity', 'input_contract', 'execution_completed', 'output_contract']) {
    assert.equal(checkOf(kept, name).status, 'passed', `${name}: ${JSON.stringify(checkOf(kept, name).evidence)}`);
  }
  assert.equal(checkOf(kept, 'package_integrity').evidence.archive.computed_sha256, checkOf(kept, 'package_integrity').evidence.archive.recorded_sha256);
  const chain = checkOf(kept, 'provenance_chain');
  assert.ok(chain.evidence.links.some((l: any) => l.link === 'run_release' && l.verified === true), JSON.stringify(chain.evidence));
});

test('a tampered stored artifact fails artifact_hashes in a new passport, naming it; the stored passport is returned unchanged', async () => {
  const target = checkOf(kept, 'artifact_hashes').evidence.artifacts.find((x: any) => x.file_name === 'size.csv');
  const key = blobKey(target.recorded_sha256);
  const original = await testObjects().getBytes(key);
  try {
    const tampered = Buffer.from(original);
    tampered.writeUInt8(tampered.readUInt8(tampered.length - 2) ^ 1, tampered.length - 2);
    await testObjects().putObject(key, tampered, 'text/csv');
    const res = await passport(`run_id=${second.id}`);
    assert.equal(res.status, 200, res.text);
    const fresh = passportOf(res.body);
    assert.notEqual(fresh.passport_id, kept.passport_id, 'a new passport');
    const check = checkOf(fresh, 'artifact_hashes');
    assert.equal(check.status, 'failed');
    assert.deepEqual(check.evidence.mismatched, [target.artifact_id]);
    const row = check.evidence.artifacts.find((x: any) => x.artifact_id === target.artifact_id);
    assert.equal(row.recorded_sha256, target.recorded_sha256);
    assert.notEqual(row.computed_sha256, target.recorded_sha256);
    assert.equal(verifyPassport(fresh, await keys()).valid, true, 'a failing check is signed like any other');
  } finally {
    await testObjects().putObject(key, original, 'text/csv');
  }
  const again = await passport(`passport_id=${kept.passport_id}`);
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(passportOf(again.body), kept, 'the stored passport, exactly as signed');
});

test('the passport verifies with verifyPassport() and with the passports guide\'s openssl command; one changed byte breaks both', async () => {
  assert.deepEqual(verifyPassport(kept, await keys()), { valid: true, key_id: kept.key_id, reason: null });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'passport-openssl-'));
  const got = await silico(['passport', 'get', '--id', kept.passport_id, '--openssl-dir', dir, '--out', path.join(dir, 'saved.json')], owner.key);
  assert.equal(got.code, 0, got.stderr);
  assert.match(got.stdout, /reproducibility\s+passed/);
  assert.deepEqual(JSON.parse(readFileSync(path.join(dir, 'saved.json'), 'utf8')), kept);
  assert.equal(await opensslVerifies(dir), true);

  const canonical = readFileSync(path.join(dir, 'passport.canonical.json'));
  const changed = Buffer.from(canonical);
  const at = changed.indexOf('"passed"') + 2;
  changed[at] = 'P'.charCodeAt(0);
  writeFileSync(path.join(dir, 'passport.canonical.json'), changed);
  assert.equal(await opensslVerifies(dir), false, 'openssl refuses one changed byte');
  assert.equal(verifyPassport(JSON.parse(changed.toString()) as never, await keys()).valid, false, 'so does verifyPassport (same changed byte)');
  const forged = JSON.parse(canonical.toString());
  forged.signature = kept.signature;
  assert.equal(verifyPassport(forged, await keys()).valid, true, 'the canonical text is exactly what was signed');
  forged.checks[0].status = 'failed';
  assert.equal(verifyPassport(forged, await keys()).valid, false);

  const file = path.join(dir, 'forged.json');
  writeFileSync(file, JSON.stringify(forged));
  const keysFile = path.join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify(await keys()));
  const offline = await silico(['passport', 'verify', path.join(dir, 'saved.json'), '--keys', keysFile]);
  assert.equal(offline.code, 0, `offline, no API key: ${offline.stdout}${offline.stderr}`);
  assert.match(offline.stdout, /verified/);
  const bad = await silico(['passport', 'verify', file, '--keys', keysFile]);
  assert.equal(bad.code, 1, bad.stdout);
  assert.match(bad.stdout, /NOT verified/);
});

test('after `passport-keys rotate` a passport signed before still verifies (SDK, CLI, openssl), and new ones carry the new key id', async () => {
  const before = kept.key_id;
  const rotated = await admin('passport-keys', 'rotate');
  assert.notEqual(rotated.key_id, before);
  const listed = (await keys()).items;
  assert.ok(listed.find((k: any) => k.key_id === before).retired_at, 'the old key is retired');
  assert.equal(listed.find((k: any) => k.key_id === rotated.key_id).retired_at, null);
  assert.equal(listed.filter((k: any) => k.retired_at === null).length, 1, 'one key signs');

  const fresh = passportOf((await passport(`run_id=${first.id}`)).body);
  assert.equal(fresh.key_id, rotated.key_id);
  assert.equal(fresh.signature.key_id, rotated.key_id);
  assert.equal(verifyPassport(fresh, await keys()).valid, true);
  assert.equal(verifyPassport(kept, await keys()).valid, true, 'signed before the rotation, still verifiable');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'passport-rotated-'));
  assert.equal((await silico(['passport', 'get', '--id', kept.passport_id, '--openssl-dir', dir], owner.key)).code, 0);
  assert.equal(readFileSync(path.join(dir, 'key.pem'), 'utf8'), listed.find((k: any) => k.key_id === before).public_key_pem, 'the retired key');
  assert.equal(await opensslVerifies(dir), true);
  const cli = await silico(['passport', 'verify', path.join(dir, 'passport.json')], owner.key);
  assert.equal(cli.code, 0, cli.stdout + cli.stderr);
});

test('another account\'s run, study, revision and passport are 404 exactly like missing ones; parameter combinations other than the four are 422 naming them', async () => {
  const same = async (theirs: string, missing: string) => {
    const [a, b] = [await passport(theirs, stranger.key), await passport(missing, stranger.key)];
    assert.equal(a.status, 404, a.text);
    const [ea, eb] = [errorOf(a), errorOf(b)];
    assert.deepEqual({ ...ea, request_id: null }, { ...eb, request_id: null });
    return ea;
  };
  assert.equal((await same(`run_id=${second.id}`, `run_id=${crypto.randomUUID()}`)).code, 'run_not_found');
  assert.equal((await same(`passport_id=${kept.passport_id}`, 'passport_id=pp_01jzzzzzzzzzzzzzzzzzzzzzzz')).code, 'passport_not_found');
  assert.equal((await same('experiment_id=exp_01jzzzzzzzzzzzzzzzzzzzzzzz', 'experiment_id=exp_missing')).code, 'experiment_not_found');
  const ws = await workspaceOfLab(owner.key, 'Passport 404', LAB);
  assert.equal((await same(`workspace_id=${ws.workspace_id}&revision_id=${ws.revision_id}`, `workspace_id=${crypto.randomUUID()}&revision_id=${ws.revision_id}`)).code, 'workspace_not_found');
  assert.equal(errorOf(await passport(`workspace_id=${ws.workspace_id}&revision_id=${crypto.randomUUID()}`)).code, 'revision_not_found');

  for (const [query, param] of [
    ['', null], [`run_id=${second.id}&passport_id=${kept.passport_id}`, 'run_id,passport_id'], [`workspace_id=${ws.workspace_id}`, 'workspace_id'],
    [`revision_id=${ws.revision_id}`, 'revision_id'], [`run_id=${second.id}&workspace_id=${ws.workspace_id}&revision_id=${ws.revision_id}`, 'run_id,workspace_id,revision_id'],
    [`run_id=${second.id}&experiment_id=exp_x`, 'run_id,experiment_id'],
  ] as const) {
    const res = await passport(query);
    assert.equal(res.status, 422, `${query}: ${res.text}`);
    const e = errorOf(res);
    assert.equal(e.type, 'validation_error');
    assert.equal(e.code, 'parameter_invalid_combination');
    assert.equal(e.param, param);
    assert.deepEqual(e.details.given, param ? param.split(',') : []);
    assert.deepEqual(e.details.accepted, [['run_id'], ['experiment_id'], ['workspace_id', 'revision_id'], ['passport_id']]);
  }
});

test('a workspace revision gets a passport: its tree re-hashed, its lineage and run-only checks not applicable; signed and verifiable', async () => {
  const ws = await workspaceOfLab(owner.key, 'Passport revision', LAB);
  const res = await passport(`workspace_id=${ws.workspace_id}&revision_id=${ws.revision_id}`);
  assert.equal(res.status, 200, res.text);
  const p: any = passportOf(res.body);
  assert.equal(p.subject.kind, 'workspace_revision');
  assert.equal(p.subject.revision_id, ws.revision_id);
  const pkg = checkOf(p, 'package_integrity');
  assert.equal(pkg.status, 'passed', JSON.stringify(pkg.evidence));
  assert.equal(pkg.evidence.computed_tree_sha256, p.subject.tree_sha256);
  assert.ok(pkg.evidence.files_checked >= 3);
  const chain = checkOf(p, 'provenance_chain');
  assert.equal(chain.status, 'passed');
  assert.deepEqual(chain.evidence.links[0].revisions.map((r: any) => r.number), [2, 1]);
  for (const name of ['input_contract', 'execution_completed', 'artifact_hashes', 'output_contract', 'reproducibility']) {
    assert.equal(checkOf(p, name).status, 'not_applicable', name);
  }
  assert.equal(verifyPassport(p, await keys()).valid, true);
});

test('a run answered from an identical completed run (reuse: true) claims neither an execution nor a replicate: its passport names the source, whose own passport keeps that evidence', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref, inputs: INPUTS, seed: SEED, max_runtime_seconds: 120, reuse: true } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'completed', 'answered within its POST /runs: nothing ran');
  const reused = res.body.id;
  const source = (await call('GET', `/runs/${reused}/results`, { key: owner.key })).body.provenance.reused_from;
  assert.ok([first.id, second.id].includes(source), `answered from one of the two lone runs, got ${source}`);
  const other = source === first.id ? second.id : first.id;

  const got = await passport(`run_id=${reused}`);
  assert.equal(got.status, 200, got.text);
  const p: any = passportOf(got.body);
  assert.equal(verifyPassport(p, await keys()).valid, true);
  const execution = checkOf(p, 'execution_completed');
  assert.equal(execution.status, 'not_applicable', `no execution is claimed: ${JSON.stringify(execution.evidence)}`);
  assert.equal(execution.evidence.reused_from, source);
  assert.ok(execution.evidence.reason.includes(source), execution.evidence.reason);
  const repro = checkOf(p, 'reproducibility');
  assert.equal(repro.status, 'not_applicable', `a copy is not a replicate: ${JSON.stringify(repro.evidence)}`);
  assert.equal(repro.evidence.reused_from, source);
  assert.ok(repro.evidence.reason.includes(source), repro.evidence.reason);
  assert.equal(repro.evidence.replicates, undefined, 'nothing compared');
  const link = checkOf(p, 'provenance_chain').evidence.links.find((l: any) => l.link === 'run_reused_from');
  assert.ok(link, 'provenance names the run it was answered from');
  assert.equal(link.run_id, reused);
  assert.equal(link.source_run_id, source);
  assert.equal(link.verified, true, JSON.stringify(link));
  assert.equal(checkOf(p, 'provenance_chain').status, 'passed');
  assert.equal(checkOf(p, 'artifact_hashes').status, 'passed', 'the bytes it lists (the source\'s) still re-hash');

  // The source's own passport is where its execution is evidenced, and the copy does not count as its replicate.
  const s: any = passportOf((await passport(`run_id=${source}`)).body);
  assert.equal(checkOf(s, 'execution_completed').status, 'passed');
  const sourceRepro = checkOf(s, 'reproducibility');
  assert.equal(sourceRepro.status, 'passed', JSON.stringify(sourceRepro.evidence));
  assert.deepEqual(sourceRepro.evidence.replicates.map((r: any) => r.run_id), [other], 'the reused run is not a replicate of its source');
});
