import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../deploy/local/paths.ts';

/** A fenced block of a Markdown file: its language, its code, and the line it starts on. */
export interface Snippet { lang: string; code: string; line: number }

/** The fenced blocks of a Markdown file (of one `## ` section of it, when named). */
export function snippetsOf(file: string, section?: string): Snippet[] {
  const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const start = section === undefined ? 0 : text.indexOf(`## ${section}`);
  if (start < 0) throw new Error(`${file} has no section "${section}"`);
  const end = section === undefined ? -1 : text.indexOf('\n## ', start + 3);
  const body = text.slice(start, end < 0 ? undefined : end);
  const before = text.slice(0, start).split('\n').length;
  return [...body.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!, code: m[2]!, line: before + body.slice(0, m.index).split('\n').length - 1,
  }));
}

/** Runs a command to its end: its exit code and everything it printed. */
export function runCommand(cmd: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr!.on('data', (b: Buffer) => { out += b.toString(); });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

/**
 * Runs a document's snippets as a reader would, from a folder that looks like the
 * checkout's root (its fixtures read-only, the rest its own): its `sh` blocks in one
 * shell, in order (a later one uses what an earlier one set), and each `ts` block with tsx
 * inside the checkout (it imports the packages by name). Answers each block's output;
 * throws naming the block that failed.
 */
export async function runSnippets(file: string, snippets: Snippet[], env: Record<string, string>): Promise<string> {
  const cwd = mkdtempSync(path.join(os.tmpdir(), 'silico-guide-'));
  const scratch = path.join(REPO_ROOT, '.tmp', `guide-${process.pid}-${path.basename(file, '.md')}`);
  mkdirSync(path.join(cwd, 'test'));
  symlinkSync(path.join(REPO_ROOT, 'test/fixtures'), path.join(cwd, 'test/fixtures'));
  mkdirSync(scratch, { recursive: true });
  const fullEnv = { ...env, PATH: `${path.join(REPO_ROOT, 'node_modules/.bin')}:${process.env.PATH}` };
  let out = '';
  try {
    const sh = snippets.filter((s) => s.lang === 'sh');
    if (sh.length) {
      // Each block says where it starts, so a failure names its line.
      const script = sh.map((s) => `echo "### ${file}:${s.line}" >&2\n${s.code}`).join('\n');
      const res = await runCommand('bash', ['-euo', 'pipefail', '-c', script], cwd, fullEnv);
      out += res.out;
      if (res.code !== 0) throw new Error(`${file}: an sh block failed (the last "###" line names it):\n${res.out}`);
    }
    for (const [i, s] of snippets.filter((x) => x.lang === 'ts').entries()) {
      const entry = path.join(scratch, `snippet-${i}.ts`);
      writeFileSync(entry, s.code);
      const res = await runCommand(path.join(REPO_ROOT, 'node_modules/.bin/tsx'), [entry], cwd, fullEnv);
      out += res.out;
      if (res.code !== 0) throw new Error(`${file}:${s.line} (ts) failed:\n${s.code}\n---\n${res.out}`);
    }
    return out;
  } finally {
    rmSync(cwd, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
}
