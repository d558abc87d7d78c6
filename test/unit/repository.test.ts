import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// The repository stands alone: a clone of it, in any folder, has everything its docs,
// code and tests refer to.

const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT }).toString().split('\0').filter(Boolean);

test('no tracked file refers to a folder beside the repository', () => {
  const outside = /(^|[\s`'"(\[])\.\.\/(shared|spec|design)\b/;
  const offenders = tracked.filter((f) => !f.endsWith('package-lock.json') && existsSync(path.join(REPO_ROOT, f)))
    .filter((f) => outside.test(readFileSync(path.join(REPO_ROOT, f), 'utf8')));
  assert.deepEqual(offenders, []);
});

test('every relative link of the markdown resolves in the repository', () => {
  const broken: string[] = [];
  for (const f of tracked.filter((x) => x.endsWith('.md') && !x.includes('node_modules'))) {
    const text = readFileSync(path.join(REPO_ROOT, f), 'utf8');
    for (const m of text.matchAll(/\]\(([^)\s#]+)(#[^)]*)?\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/i.test(target)) continue;
      const resolved = path.resolve(REPO_ROOT, path.dirname(f), target);
      if (!resolved.startsWith(REPO_ROOT + path.sep) || !existsSync(resolved)) broken.push(`${f} → ${target}`);
    }
  }
  assert.deepEqual(broken, []);
});
