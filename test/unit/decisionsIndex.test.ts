import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// docs/decisions.md opens with an index by domain: every section is in it exactly once,
// and every link lands on a section (GitHub's anchors, as github-slugger makes them).

test('the index of docs/decisions.md links every section once, and each link lands on one', () => {
  const text = readFileSync(path.join(REPO_ROOT, 'docs/decisions.md'), 'utf8');
  const slugger = new GithubSlugger();
  const sections = [...text.matchAll(/^## (.+)$/gm)].map((m) => ({ title: m[1]!, anchor: slugger.slug(m[1]!) })).filter((s) => s.title !== 'Index by domain');
  const index = text.slice(text.indexOf('## Index by domain'), text.indexOf('\n## ', text.indexOf('## Index by domain') + 1));
  const links = [...index.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
  const anchors = new Set(sections.map((s) => s.anchor));
  assert.deepEqual(links.filter((l) => !anchors.has(l)), [], 'links that land on no section');
  assert.deepEqual(sections.filter((s) => !links.includes(s.anchor)).map((s) => s.title), [], 'sections the index leaves out');
  assert.equal(new Set(links).size, links.length, 'each section once');
});
