import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runFiles } from '../schedule.ts';

// This file is itself a test process: the runs it starts are top-level runs, not its children.
delete process.env.NODE_TEST_CONTEXT;

/** Test files that each wait `ms`, then pass. */
async function waitingFiles(n: number, ms: number): Promise<string[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'schedule-'));
  return Promise.all(Array.from({ length: n }, async (_, i) => {
    const file = path.join(dir, `f${i}.test.ts`);
    await writeFile(file, `import { test } from 'node:test';\ntest('waits', async () => { await new Promise((r) => setTimeout(r, ${ms})); });\n`);
    return file;
  }));
}

test('a stopped run cancels the running files, starts no other, and ends with them listed as not run', { timeout: 60_000 }, async () => {
  const files = await waitingFiles(5, 20_000);
  const stop = new AbortController();
  setTimeout(() => stop.abort(new Error('the shared stack is gone')), 1500);
  const started = Date.now();
  const s = await runFiles(files, { env: {}, concurrency: 3, stop: stop.signal, write: () => undefined });
  assert.ok(Date.now() - started < 15_000, 'it did not wait for the files to end by themselves');
  assert.equal(s.passed, 0);
  assert.equal(s.failed, 3);
  assert.equal(s.notRun.length, 2);
});

test('a file past the per-file limit is cancelled and counted failed; the others go on', { timeout: 60_000 }, async () => {
  const [slow] = await waitingFiles(1, 30_000);
  const [quick] = await waitingFiles(1, 10);
  const s = await runFiles([slow!, quick!], { env: {}, concurrency: 2, fileLimitMs: 2000, write: () => undefined });
  assert.deepEqual(s.files.map((f) => [path.basename(path.dirname(f.file)) === path.basename(path.dirname(slow!)) ? 'slow' : 'quick', f.passed, f.failed]).sort(), [['quick', 1, 0], ['slow', 0, 1]]);
  assert.deepEqual(s.notRun, []);
});
