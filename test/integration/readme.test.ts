import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BASE_URL, closeTestDb, newAccount } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { petabSkip } from '../petabProblems.ts';

after(closeTestDb);

/** The fenced blocks of one README section, with their language. */
function blocksOf(section: string): Array<{ lang: string; code: string; line: number }> {
  const text = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const start = text.indexOf(`## ${section}`);
  assert.ok(start >= 0, `README has a section "${section}"`);
  const end = text.indexOf('\n## ', start + 3);
  const body = text.slice(start, end < 0 ? undefined : end);
  const before = text.slice(0, start).split('\n').length;
  return [...body.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!, code: m[2]!, line: before + body.slice(0, m.index).split('\n').length - 1,
  }));
}

function run(cmd: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr!.on('data', (b: Buffer) => { out += b.toString(); });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

let env: Record<string, string> = {};
before(async () => {
  const { key } = await newAccount({ usd: 10 });
  env = {
    SILICO_BASE_URL: BASE_URL, SILICO_API_KEY: key,
    SILICO_CONFIG_DIR: mkdtempSync(path.join(os.tmpdir(), 'silico-readme-config-')),
    // As after `npm install`: the workspace's `silico` is in node_modules/.bin.
    PATH: `${path.join(REPO_ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
  };
});

test('every sh and ts example of the README\'s "Three doors" section runs as written', async () => {
  const blocks = blocksOf('Three doors').filter((b) => b.lang === 'sh' || b.lang === 'ts');
  assert.ok(blocks.filter((b) => b.lang === 'sh').length >= 2 && blocks.filter((b) => b.lang === 'ts').length >= 2);
  // TypeScript examples import the packages by name, so they live inside the checkout.
  const scratch = path.join(REPO_ROOT, '.tmp', `readme-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  try {
    for (const [i, b] of blocks.entries()) {
      const cwd = mkdtempSync(path.join(os.tmpdir(), 'silico-readme-'));
      let res;
      if (b.lang === 'sh') {
        res = await run('bash', ['-euo', 'pipefail', '-c', b.code], cwd, env);
      } else {
        const file = path.join(scratch, `example-${i}.ts`);
        writeFileSync(file, b.code);
        res = await run(path.join(REPO_ROOT, 'node_modules/.bin/tsx'), [file], cwd, env);
      }
      assert.equal(res.code, 0, `README.md line ${b.line} (${b.lang}) failed:\n${b.code}\n---\n${res.out}`);
      if (b.code.includes('silico run ')) assert.match(res.out, /sha256 verified/);
      if (b.code.includes('mcp.callTool')) assert.match(res.out, /completed/);
      if (b.code.includes('callToolStream')) assert.match(res.out, /task [0-9a-f-]{36} working\n(.*\n)*run completed/);
      if (b.code.includes('/mcp"')) assert.match(res.out, /"structuredContent"/);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('the README\'s "Calibrate a PEtab problem" flow runs as written from the checkout\'s root: import, evaluate, calibrate, profile, export, and the export imports at the best NLL', { skip: petabSkip, timeout: 600_000 }, async () => {
  const [block, ...more] = blocksOf('Calibrate a PEtab problem').filter((b) => b.lang === 'sh');
  assert.ok(block && !more.length, 'one sh block');
  // The checkout's root as the flow sees it: its fixtures (read-only), and a folder of its own for what it writes.
  const cwd = mkdtempSync(path.join(os.tmpdir(), 'silico-readme-petab-'));
  try {
    mkdirSync(path.join(cwd, 'test'));
    symlinkSync(path.join(REPO_ROOT, 'test/fixtures'), path.join(cwd, 'test/fixtures'));
    const res = await run('bash', ['-euo', 'pipefail', '-c', block.code], cwd, env);
    assert.equal(res.code, 0, `README.md line ${block.line} failed:\n${res.out}`);
    const best = /best +NLL (\d+\.\d+)/.exec(res.out);
    assert.ok(best && Number(best[1]) <= 138.23, `the best NLL printed:\n${res.out}`);
    assert.match(res.out, /k_phos +log10 +\S+ +\[\S+, \S+\] +identifiable/);
    // The export planned again: its NLL at nominal is the best (the last one printed).
    const nominal = [...res.out.matchAll(/NLL at nominal (\d+\.\d+)/g)].map((m) => Number(m[1]));
    assert.ok(Math.abs(nominal.at(-1)! - Number(best[1])) < 1e-3, `export at nominal ${nominal.at(-1)}, best ${best[1]}`);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
