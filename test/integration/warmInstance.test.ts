import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { closeTestDb, newAccount, publishFixtureLab, testDb, testObjects } from '../helpers.ts';
import { loadConfig } from '../../kernel/config.ts';
import { createSandbox } from '../../activities/execution/sandbox.ts';
import { DRIVER, labEnv, runLimits } from '../../activities/execution/labSpec.ts';
import { runLabProcess, type LabProcessOutcome } from '../../activities/execution/labProcess.ts';
import { startWarmInstance, type WarmInstance } from '../../activities/execution/warmInstance.ts';

// The engine of hosting: a warm instance serves invocations from fresh forks of one
// prepared, sandboxed process, with the same outputs as cold runs and nothing carried
// from one invocation to the next.

after(closeTestDb);
const config = loadConfig();
const sandbox = createSandbox(config.sandbox);
const PROFILE = { memory_mib: 1024, vcpus: 1 };
let dir = '';
let packageSha = '';

before(async () => {
  const owner = await newAccount();
  await publishFixtureLab(owner, 'noisy-growth');
  const release = await testDb()('releases').where({ account_id: owner.account.id }).first();
  packageSha = release.package_sha256;
  dir = await mkdtemp(path.join(tmpdir(), 'silico-warm-'));
  await mkdir(path.join(dir, 'input'));
  await writeFile(path.join(dir, 'input', 'lab.bsilab'), await testObjects().getBytes(release.archive_key));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The final value of every output an outcome reported. */
function collector() {
  const finals: Record<string, unknown> = {};
  return { finals, hooks: { onMessage: (m: Record<string, unknown>) => { if (m.type === 'output') finals[String(m.name)] = m.value; } } };
}

async function cold(request: Record<string, unknown>): Promise<{ outcome: LabProcessOutcome; finals: Record<string, unknown> }> {
  const scratch = await mkdtemp(path.join(dir, 'cold-'));
  const c = collector();
  const outcome = await runLabProcess(sandbox, {
    python: config.python, script: DRIVER, input: path.join(dir, 'input'), scratch, args: (p) => [path.join(p.input, 'lab.bsilab'), p.scratch],
    limits: runLimits(PROFILE, 60), env: labEnv(1),
  }, JSON.stringify({ ...request, package_sha256: packageSha }), { wallSeconds: 60 }, c.hooks);
  return { outcome, finals: c.finals };
}

async function warmed(instance: WarmInstance, request: Record<string, unknown>, signal?: AbortSignal) {
  const c = collector();
  const outcome = await instance.invoke({ ...request, package_sha256: packageSha }, { wallSeconds: 60, signal }, c.hooks);
  return { outcome, finals: c.finals };
}

test('invocations on one warm instance give the outputs of cold runs, in any order, and carry nothing over', { timeout: 120_000 }, async () => {
  const a = { inputs: { growth_rate: 0.1, noise: 0.2 }, seed: 3 };
  const b = { inputs: { growth_rate: 0.3, noise: 0.05 }, seed: 4 };
  const coldA = await cold(a);
  const coldB = await cold(b);
  assert.equal(coldA.outcome.result?.status, 'completed');
  assert.notDeepEqual(coldA.finals, coldB.finals);

  const instance = await startWarmInstance(sandbox, { python: config.python, input: path.join(dir, 'input'), scratch: path.join(dir, 'warm'), limits: runLimits(PROFILE, 60), env: labEnv(1) },
    'lab.bsilab', { package_sha256: packageSha }, { readySeconds: 60 });
  try {
    const warmA = await warmed(instance, a);
    const warmB = await warmed(instance, b);
    const warmA2 = await warmed(instance, a);
    assert.equal(warmA.outcome.result?.status, 'completed', JSON.stringify(warmA.outcome));
    assert.deepEqual(warmA.finals, coldA.finals);
    assert.deepEqual(warmB.finals, coldB.finals);
    assert.deepEqual(warmA2.finals, coldA.finals, 'the same request again: nothing of the one before it');
    assert.equal(warmA.outcome.exitCode, 0);

    // A failing invocation is the lab's error, and the instance serves on.
    const failing = await warmed(instance, { inputs: { fail: true }, seed: 1 });
    assert.equal(failing.outcome.reported?.code, 'lab_error');
    assert.match(failing.outcome.reported!.message, /always fails/);
    assert.equal((await warmed(instance, a)).finals.final_size, coldA.finals.final_size);

    // A cancelled invocation stops; the instance serves on.
    const abort = new AbortController();
    abort.abort();
    const cancelled = await warmed(instance, a, abort.signal);
    assert.equal(cancelled.outcome.cancelled, true);
    assert.equal((await warmed(instance, b)).finals.final_size, coldB.finals.final_size);

    const t0 = performance.now();
    await cold(a);
    const coldMs = performance.now() - t0;
    const t1 = performance.now();
    await warmed(instance, a);
    const warmMs = performance.now() - t1;
    console.log(`# instance ready in ${instance.startSeconds.toFixed(2)} s; one invocation: cold ${coldMs.toFixed(0)} ms, warm ${warmMs.toFixed(0)} ms`);
  } finally {
    await instance.close();
  }
  assert.equal(instance.alive(), false);
});

test('a package whose digest is not the release\'s never becomes a warm instance', { timeout: 60_000 }, async () => {
  await assert.rejects(
    startWarmInstance(sandbox, { python: config.python, input: path.join(dir, 'input'), scratch: path.join(dir, 'bad'), limits: runLimits(PROFILE, 60), env: labEnv(1) },
      'lab.bsilab', { package_sha256: 'sha256:' + '0'.repeat(64) }, { readySeconds: 60 }),
    (err: Error & { error?: { code: string } }) => err.error?.code === 'package_digest_mismatch',
  );
});

test('an instance that dies while serving ends its invocation at once, instance_lost, saying how', { timeout: 60_000 }, async () => {
  const instance = await startWarmInstance(sandbox, { python: config.python, input: path.join(dir, 'input'), scratch: path.join(dir, 'dying'), limits: runLimits(PROFILE, 60), env: labEnv(1) },
    'lab.bsilab', { package_sha256: packageSha }, { readySeconds: 60 });
  try {
    const serving = warmed(instance, { inputs: { window_delay: 2 }, seed: 1 });
    await new Promise((r) => setTimeout(r, 1500));
    // The instance's interpreter: the process below its sandbox's init.
    const children = (pid: number) => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    const [init] = children(instance.pid);
    const [server] = children(init!);
    const at = Date.now();
    process.kill(server!, 'SIGKILL');
    const { outcome } = await serving;
    assert.ok(Date.now() - at < 5000, `ended ${Date.now() - at} ms after the instance died`);
    assert.equal(outcome.error?.code, 'instance_lost', JSON.stringify(outcome));
    assert.match(outcome.error!.message, /killed by SIGKILL/);
    assert.equal(instance.alive(), false);
  } finally {
    await instance.close();
  }
});
