import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BASE_URL, call, closeTestDb, newAccount, publishFixtureLab, silicoCli, type CliResult } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

after(closeTestDb);

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

type Done = CliResult;

/** Runs `silico ...` as a child process with the key in its environment. */
function silico(args: string[], opts: { key?: string; cwd?: string; env?: Record<string, string>; onStderr?: (text: string, child: ChildProcess) => void } = {}): Promise<Done> {
  return silicoCli(args, { ...opts, configDir });
}

/** Runs a shell command line in a pseudo-terminal (util-linux `script`), as a person would type it. */
function inTerminal(line: string, env: Record<string, string>, cwd: string): Promise<Done> {
  const child = spawn('script', ['-qefc', line, '/dev/null'], {
    cwd, env: { PATH: `${path.join(REPO_ROOT, 'node_modules/.bin')}:${process.env.PATH}`, HOME: process.env.HOME ?? '', TERM: 'xterm', ...env }, stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout!.on('data', (b: Buffer) => { stdout += b.toString(); });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr: '' })));
}

const configDir = mkdtempSync(path.join(os.tmpdir(), 'silico-cli-config-'));
let owner: Awaited<ReturnType<typeof newAccount>>;
let slowRef = '';
before(async () => {
  owner = await newAccount({ usd: 10 });
  slowRef = await publishFixtureLab(owner, 'slow-lab');
});

test('in a terminal, `silico run ... --yes --download out/` runs the lab with a progress bar and verified files, exit 0', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'silico-cli-run-'));
  const res = await inTerminal('silico run platform/sir-epidemic@1.0.0 --input beta=0.3 --yes --download out/', { SILICO_BASE_URL: BASE_URL, SILICO_API_KEY: owner.key, SILICO_CONFIG_DIR: configDir }, dir);
  assert.equal(res.code, 0, res.stdout);
  assert.match(res.stdout, /price\s+at most \$/);
  assert.match(res.stdout, /100%/, 'the progress bar reached the end');
  assert.match(res.stdout, /completed/);
  assert.match(res.stdout, /sha256 verified/);
  const runId = /run\s+([0-9a-f-]{36})/.exec(res.stdout)![1]!;
  const results = (await call('GET', `/runs/${runId}/results`, { key: owner.key })).body;
  assert.equal(results.status, 'completed');
  const run = (await call('GET', `/runs/${runId}`, { key: owner.key })).body;
  assert.equal(run.inputs.beta, 0.3, 'beta=0.3 was sent as a number');
  const files = readdirSync(path.join(dir, 'out'));
  assert.equal(files.length, results.artifacts.length);
  for (const a of results.artifacts) {
    const file = path.join(dir, 'out', path.basename(a.file_name));
    assert.equal(sha256(file), a.sha256, a.file_name);
    assert.equal(statSync(file).size, a.size_bytes);
  }
});

test('Ctrl-C during `silico run` cancels the run and exits 1; `runs get` and `runs events` show it', async () => {
  let runId = '';
  let signalled = false;
  const res = await silico(['run', slowRef, '--input', 'seconds_per_window=0.5', '--yes'], {
    key: owner.key,
    onStderr: (text, child) => {
      const m = /run\s+([0-9a-f-]{36})/.exec(text);
      if (m && !signalled && /running/.test(text)) {
        runId = m[1]!;
        signalled = true;
        child.kill('SIGINT');
      }
    },
  });
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, /cancelling/);
  assert.match(res.stderr, /ended cancelled/);
  const got = await silico(['runs', 'get', runId, '--json'], { key: owner.key });
  assert.equal(got.code, 0);
  assert.equal(JSON.parse(got.stdout).status, 'cancelled');
  const events = await silico(['runs', 'events', runId, '--follow', '--json'], { key: owner.key });
  const lines = events.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.at(-1).data.status, 'cancelled', 'follow ends at the terminal event');
  assert.deepEqual(lines.map((e) => e.seq), lines.map((_, i) => i + 1));
});

test('a run cancelled from elsewhere (`silico runs cancel`) makes the waiting `silico run` exit 1', async () => {
  let cancel: Promise<Done> | undefined;
  const res = await silico(['run', slowRef, '--input', 'seconds_per_window=0.5', '--yes', '--no-progress'], {
    key: owner.key,
    onStderr: (text) => {
      const m = /run\s+([0-9a-f-]{36})/.exec(text);
      if (m && !cancel && /running/.test(text)) cancel = silico(['runs', 'cancel', m[1]!], { key: owner.key });
    },
  });
  assert.ok(cancel, res.stderr);
  assert.equal((await cancel).code, 0);
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, /ended cancelled/);
});

test('exit codes: 2 for usage, 3 for API errors (with the envelope under --json); a blocked plan starts nothing', async () => {
  const noYes = await silico(['run', 'platform/sir-epidemic@1.0.0'], { key: owner.key });
  assert.equal(noYes.code, 2, 'no terminal and no --yes');
  assert.match(noYes.stderr, /--yes/);
  assert.equal((await silico(['runs', 'list', '--limit', 'x'], { key: owner.key })).code, 2);
  assert.equal((await silico(['account'], {})).code, 2, 'no key');
  const bad = await silico(['run', 'platform/sir-epidemic@1.0.0', '--input', 'nope=1', '--yes', '--json'], { key: owner.key });
  assert.equal(bad.code, 3);
  assert.equal(JSON.parse(bad.stdout).error.code, 'unknown_inputs');
  const missing = await silico(['runs', 'get', crypto.randomUUID()], { key: owner.key });
  assert.equal(missing.code, 3);
  assert.match(missing.stderr, /run_not_found/);
  const badKey = await silico(['account', '--json'], { key: 'sk_notarealkeynotarealkey00' });
  assert.equal(badKey.code, 3);
  assert.equal(JSON.parse(badKey.stdout).error.type, 'authentication_error');
});

test('configure, account, capabilities, hub search, runs list and files upload/download, each with --json', async () => {
  const cfg = await silico(['configure', '--base-url', BASE_URL, '--api-key', owner.key]);
  assert.equal(cfg.code, 0);
  assert.equal(statSync(path.join(configDir, 'config.json')).mode & 0o777, 0o600);
  const acct = await silico(['account', '--json']); // the key now comes from the saved configuration
  assert.equal(acct.code, 0, acct.stderr);
  assert.equal(JSON.parse(acct.stdout).account.id, owner.account.id);
  const caps = await silico(['capabilities', '--json']);
  assert.ok(JSON.parse(caps.stdout).items.some((c: any) => c.ref === 'platform/sir-epidemic@1.0.0'));
  const hub = await silico(['hub', 'search', 'epidemic']);
  assert.equal(hub.code, 0);
  assert.match(hub.stdout, /platform\/sir-epidemic@1\.0\.0/);
  const list = await silico(['runs', 'list', '--json', '--limit', '5']);
  assert.ok(JSON.parse(list.stdout).items.length >= 1);

  const dir = mkdtempSync(path.join(os.tmpdir(), 'silico-cli-files-'));
  const src = path.join(dir, 'counts.csv');
  writeFileSync(src, 'gene,count\nlacI,12\ntetR,7\n');
  const up = await silico(['files', 'upload', src, '--json']);
  assert.equal(up.code, 0, up.stderr);
  const file = JSON.parse(up.stdout);
  assert.equal(file.sha256, sha256(src));
  const down = await silico(['files', 'download', file.file_id, path.join(dir, 'back.csv')]);
  assert.equal(down.code, 0, down.stderr);
  assert.match(down.stdout, /verified/);
  assert.equal(sha256(path.join(dir, 'back.csv')), file.sha256);
});
