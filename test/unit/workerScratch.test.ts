import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { claimScratchRoot, clearDeadWorkers, processTag, tagOf } from '../../activities/workerScratch.ts';

const base = await mkdtemp(path.join(tmpdir(), 'silico-scratch-test-'));
// Another live worker of this machine: a process that outlives the test's clearing.
const other = spawn('sleep', ['60'], { stdio: 'ignore' });
after(async () => {
  other.kill('SIGKILL');
  await rm(base, { recursive: true, force: true });
});

/** A tag of a process that is gone: a child that has exited (its pid, its start time then). */
function deadTag(): string {
  const child = spawnSync('true');
  return `${child.pid}-1`;
}

test('a starting worker removes the scratch roots and environment build leftovers of workers that are gone, and keeps its own, a live neighbour\'s and anything not named by a worker', async () => {
  const machine = path.join(base, 'tmp');
  const environments = path.join(base, 'environments');
  const sha = 'a'.repeat(64);
  const dead = deadTag();
  const live = tagOf(other.pid!);
  // The same pid as the live neighbour, started at another time: a dead worker whose pid was reused.
  const reused = `${other.pid}-1`;
  const made = {
    gone: [
      path.join(machine, `silico-worker-${dead}`), path.join(machine, `silico-worker-${reused}`),
      path.join(environments, `.work-${sha.slice(0, 12)}-${dead}-Ab12Cd`), path.join(environments, `.evicted-${sha}-${dead}`),
    ],
    kept: [
      path.join(machine, `silico-worker-${processTag()}`), path.join(machine, `silico-worker-${live}`),
      // Directly in the machine's folder (a test's, an api's, an older worker's): nobody's to judge.
      path.join(machine, 'silico-run-12345678-Xy9Zab'), path.join(machine, 'silico-worker-notes'),
      path.join(environments, `.work-${sha.slice(0, 12)}-${live}-Ef34Gh`), path.join(environments, `.work-${sha.slice(0, 12)}-Ij56Kl`),
      path.join(environments, sha), path.join(environments, '.uv-cache'),
    ],
  };
  for (const dir of [...made.gone, ...made.kept]) await mkdir(path.join(dir, 'inside'), { recursive: true });

  const removed = await clearDeadWorkers(machine, environments);
  assert.deepEqual(removed.sort(), [...made.gone].sort());
  for (const dir of made.gone) assert.equal(existsSync(dir), false, `${dir} is removed`);
  for (const dir of made.kept) assert.equal(existsSync(path.join(dir, 'inside')), true, `${dir} is kept whole`);
  assert.deepEqual(await clearDeadWorkers(machine, environments), [], 'a second start finds nothing more');
  assert.deepEqual(await clearDeadWorkers(path.join(base, 'absent'), path.join(base, 'absent-too')), [], 'folders that do not exist yet are nothing to clear');
});

test('a worker\'s temporary directories go under its own root, traversable but not listable by others', async () => {
  const before = process.env.TMPDIR;
  try {
    const machine = path.join(base, 'claimed');
    await mkdir(machine);
    const root = await claimScratchRoot(machine);
    assert.equal(root, path.join(machine, `silico-worker-${processTag()}`));
    assert.equal(tmpdir(), root, 'os.tmpdir() answers the root from now on');
    const run = await mkdtemp(path.join(tmpdir(), 'silico-run-'));
    assert.equal(path.dirname(run), root);
    assert.equal((await stat(root)).mode & 0o777, 0o711);
    assert.deepEqual(await readdir(machine), [path.basename(root)]);
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  }
});
