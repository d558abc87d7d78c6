import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// The README and the guides point at each other and at the repository: every relative
// link lands on a file that exists, and every #anchor on a heading of its page, as GitHub
// renders them.

const DOCS = ['README.md', ...readdirSync(path.join(REPO_ROOT, 'docs/guides')).map((f) => `docs/guides/${f}`), 'docs/operations.md', 'docs/development.md'];

/** The anchors of a Markdown page's headings, as GitHub makes them. */
function anchorsOf(file: string): Set<string> {
  const slugger = new GithubSlugger();
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slugger.slug(m[1]!)));
}

test('every relative link of the README and the guides lands on a file, and every anchor on a heading', () => {
  const broken: string[] = [];
  for (const doc of DOCS) {
    const text = readFileSync(path.join(REPO_ROOT, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = file ? path.resolve(path.dirname(path.join(REPO_ROOT, doc)), file) : path.join(REPO_ROOT, doc);
      if (!existsSync(resolved)) broken.push(`${doc}: ${target} (no such file)`);
      else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) broken.push(`${doc}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the README stays a page a newcomer reads in two minutes: at most 250 lines', () => {
  const lines = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8').split('\n').length;
  assert.ok(lines <= 250, `README.md has ${lines} lines`);
});
