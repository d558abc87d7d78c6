import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { call, closeTestDb, newAccount, processAlive, publishFixtureLab, spawnWorker, until, useTestProfiles, waitForRun } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// A worker told to stop (SIGTERM, as a deployment does) drains: its labs get the grace
// time, then they are stopped and their runs go to another worker, neither cancelled nor
// failed, and without using up the attempts kept for workers that die.

const PROFILE = { id: 'test-draining', title: 'Test profile whose workers are restarted' };
useTestProfiles(PROFILE);
after(closeTestDb);
let owner: Awaited<ReturnType<typeof newAccount>>;
let slow = '';
before(async () => {
  owner = await newAccount({ usd: 10 });
  slow = await publishFixtureLab(owner, 'slow-lab');
});

test('`npm run worker` starts a worker, and SIGTERM stops it', async () => {
  const proc = spawn('npm', ['run', '--silent', 'worker'], { cwd: REPO_ROOT, detached: true, env: { ...process.env, SILICO_COMPUTE_PROFILES: PROFILE.id, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  proc.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  try {
    await until(60000, async () => (out.includes('worker started') ? true : undefined));
  } finally {
    const exited = new Promise((r) => proc.once('exit', r));
    process.kill(-proc.pid!, 'SIGTERM');
    await exited;
  }
  assert.match(out, /"taskQueues":\[[^\]]*"compute-test-draining"/);
});

test('three worker shutdowns in a row move a run along; it completes, never cancelled, attempts untouched', { timeout: 240_000 }, async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: slow, compute_profile: PROFILE.id, inputs: { seconds_per_window: 0.2, busy_seconds: 3 }, max_runtime_seconds: 300 } });
  assert.equal(res.status, 200, res.text);
  const seen = new Set<number>();
  for (let i = 0; i < 3; i++) {
    const worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id, SILICO_WORKER_SHUTDOWN_GRACE_SECONDS: '1' });
    const pid = await until(60000, async () => {
      const events = (await call('GET', `/runs/${res.body.id}/events?limit=1000`, { key: owner.key })).body.items as any[];
      const p = events.map((e) => e.data.pid).filter((x) => x && !seen.has(x)).at(-1);
      return p as number | undefined;
    });
    seen.add(pid);
    await worker.stop();
    await until(10000, async () => (processAlive(pid) ? undefined : true));
    const now = (await call('GET', `/runs/${res.body.id}`, { key: owner.key })).body;
    assert.equal(now.status, 'running', `after shutdown ${i + 1} the run waits for a worker, got ${now.status}`);
  }
  const last = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
  try {
    const run = await waitForRun(owner.key, res.body.id, 120000);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(seen.size, 3);
  } finally {
    await last.stop();
  }
});
