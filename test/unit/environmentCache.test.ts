import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { evictEnvironments, recordBuilt, touchUsed } from '../../activities/environments/cache.ts';

const sha = (c: string) => c.repeat(64);

test('built environments stay within their bound: least recently used first, never one still held', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-env-cache-'));
  try {
    // Three environments of 1 MB each, used at t = 1000, 2000, 3000 s.
    for (const [i, c] of ['a', 'b', 'c'].entries()) {
      await mkdir(path.join(dir, sha(c), 'lib'), { recursive: true });
      await writeFile(path.join(dir, sha(c), 'lib', 'blob'), Buffer.alloc(1 << 20));
      await recordBuilt(dir, sha(c));
      const at = new Date((i + 1) * 1_000_000);
      await utimes(path.join(dir, '.meta', `${sha(c)}.size`), at, at);
    }
    const envs = async () => (await readdir(dir)).filter((e) => /^[0-9a-f]{64}$/.test(e)).sort();

    assert.deepEqual(await evictEnvironments(dir, 4 << 20, new Set()), [], 'within the bound: nothing goes');
    // a is the least recently used, but held: b goes instead.
    assert.deepEqual(await evictEnvironments(dir, (2 << 20) + (1 << 19), new Set([sha('a')])), [sha('b')]);
    assert.deepEqual(await envs(), [sha('a'), sha('c')]);
    // Using a makes c the least recently used.
    await touchUsed(dir, sha('a'));
    assert.deepEqual(await evictEnvironments(dir, (1 << 20) + (1 << 19), new Set()), [sha('c')]);
    assert.deepEqual(await envs(), [sha('a')]);
    // An environment built before sizes were kept is measured when the cache looks at it.
    await mkdir(path.join(dir, sha('d')));
    await writeFile(path.join(dir, sha('d'), 'blob'), Buffer.alloc(3 << 20));
    assert.deepEqual(await evictEnvironments(dir, 2 << 20, new Set([sha('a')])), [sha('d')]);
    assert.deepEqual((await readdir(dir)).filter((e) => e.startsWith('.evicted')), [], 'nothing half removed is left');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
