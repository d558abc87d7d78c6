import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BASE_URL, closeTestDb, newAccount } from '../helpers.ts';
import { KEY_SCOPES } from '../../storage/db/apiKeys.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { petabSkip } from '../petabProblems.ts';
import { runSnippets, snippetsOf } from '../guideSnippets.ts';

// The README's first run and every guide run as written: each document's sh blocks in one
// shell, in order, and each ts block, against the real stack, from a fresh account of
// their own holding every scope (buying included) and $20. A guide cannot rot.

after(closeTestDb);

/** What a reader sets before a document's snippets: the stack's address and a key. */
async function readerEnv(): Promise<Record<string, string>> {
  const { key } = await newAccount({ usd: 20, scopes: KEY_SCOPES });
  return { SILICO_BASE_URL: BASE_URL, SILICO_API_KEY: key, SILICO_CONFIG_DIR: mkdtempSync(path.join(os.tmpdir(), 'silico-guide-config-')) };
}

const GUIDES = readdirSync(path.join(REPO_ROOT, 'docs/guides')).filter((f) => f.endsWith('.md')).map((f) => `docs/guides/${f}`);

/** What each document's run must have printed, beyond ending well. */
const PRINTS: Record<string, RegExp[]> = {
  'README.md': [/"status": "ready"/, /sha256 verified/, /completed \[ 'infected', 'recovered', 'susceptible' \]/],
  'docs/guides/runs.md': [/^t,infected$/m],
  'docs/guides/labs.md': [/"status": "published"/, /completed/],
  'docs/guides/files.md': [/"status": "registered"/],
  'docs/guides/studies.md': [/"parameter": "initial_substrate"/, /"growth_rate": 0\.4\d+|"growth_rate": 0\.5\d+/],
  'docs/guides/hosting.md': [/"status": "completed"/, /"retiring"|"retired"/],
  'docs/guides/sessions.md': [/"complete": true/, /"source_id":"uniprot"/],
  'docs/guides/money.md': [/"status": "pending"/, /"credits_settled": 0\b/],
  'docs/guides/webhooks.md': [/"type":"run\.completed"/, /refused: /],
  'docs/guides/passports.md': [/Signature Verified Successfully/, /^true$/m],
  'docs/guides/doors.md': [/sha256 verified/, /task [0-9a-f-]{36} working\n(.*\n)*run completed/, /"structuredContent"/],
};

for (const file of ['README.md', ...GUIDES.filter((g) => !g.endsWith('/petab.md'))]) {
  test(`${file}: every sh and ts snippet runs as written`, { timeout: 600_000 }, async () => {
    const snippets = snippetsOf(file).filter((s) => s.lang === 'sh' || s.lang === 'ts');
    const out = await runSnippets(file, snippets, await readerEnv());
    for (const want of PRINTS[file] ?? []) assert.match(out, want, `${file} printed ${want}:\n${out.slice(-4000)}`);
  });
}

test('every guide is run, or has a test of its own', () => {
  assert.deepEqual(GUIDES.filter((g) => !(g in PRINTS) && !g.endsWith('/petab.md') && !g.endsWith('/console.md')), []);
});

test('docs/guides/petab.md\'s flow runs as written from the checkout\'s root: import, evaluate, calibrate, profile, export, and the export imports at the best NLL', { skip: petabSkip, timeout: 600_000 }, async () => {
  const snippets = snippetsOf('docs/guides/petab.md').filter((b) => b.lang === 'sh');
  assert.equal(snippets.length, 1, 'one sh block');
  const out = await runSnippets('docs/guides/petab.md', snippets, await readerEnv());
  const best = /best +NLL (\d+\.\d+)/.exec(out);
  assert.ok(best && Number(best[1]) <= 138.23, `the best NLL printed:\n${out}`);
  assert.match(out, /k_phos +log10 +\S+ +\[\S+, \S+\] +identifiable/);
  // The export planned again: its NLL at nominal is the best (the last one printed).
  const nominal = [...out.matchAll(/NLL at nominal (\d+\.\d+)/g)].map((m) => Number(m[1]));
  assert.ok(Math.abs(nominal.at(-1)! - Number(best[1])) < 1e-3, `export at nominal ${nominal.at(-1)}, best ${best[1]}`);
});
