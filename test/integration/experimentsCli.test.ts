import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BASE_URL, call, closeTestDb, newAccount, silicoCli, workspaceOfLab, type CliResult } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { Silico, StudyTimeout, type RunTotals } from '../../sdk/src/index.ts';

// The study doors on the real stack: `silico experiment run|get` as a person types them,
// and the SDK's StudyHandle. Runs use the stack's own worker (cpu-small).

after(closeTestDb);

const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth');
const dir = mkdtempSync(path.join(os.tmpdir(), 'silico-study-cli-'));

type Done = CliResult;

/** `silico ...` as a child process with the key in its environment; `input` is written to its stdin. */
function silico(args: string[], key: string): Promise<Done> {
  return silicoCli(args, { key, cwd: dir, configDir: dir });
}

/** A command line in a pseudo-terminal (util-linux `script`), answering `answer` to its question. */
function inTerminal(line: string, key: string, answer: string): Promise<Done> {
  const child = spawn('script', ['-qefc', line, '/dev/null'], {
    cwd: dir, env: { PATH: `${path.join(REPO_ROOT, 'node_modules/.bin')}:${process.env.PATH}`, HOME: process.env.HOME ?? '', TERM: 'xterm', SILICO_CONFIG_DIR: dir, SILICO_BASE_URL: BASE_URL, SILICO_API_KEY: key },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let answered = false;
  child.stdout!.on('data', (b: Buffer) => {
    stdout += b.toString();
    if (!answered && /\[y\/N\]/.test(stdout)) {
      answered = true;
      child.stdin!.write(answer);
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr: '' })));
}

let owner: Awaited<ReturnType<typeof newAccount>>;
let ws: Awaited<ReturnType<typeof workspaceOfLab>>;
before(async () => {
  owner = await newAccount({ usd: 10 });
  ws = await workspaceOfLab(owner.key, 'Noisy growth', LAB);
});

const studyCount = async () => (await call('GET', '/experiments?limit=100', { key: owner.key })).body.items.length;

/** A sweep file of growth_rate 0.05 and 0.2 by noise 0.1: 2 x 1 arms, 2 replicates each. */
function sweepFile(): string {
  const file = path.join(dir, 'study.yaml');
  writeFileSync(file, [
    'name: Rate sweep', 'goal: Does the rate move the final size?',
    `workspace_id: ${ws.workspace_id}`, `revision_id: ${ws.revision_id}`,
    'compute_profile_id: cpu-small', 'max_runtime_seconds: 60', 'replicates: 2', 'seed: 5',
    'inputs: {noise: 0.05}', 'sweep:', '  growth_rate: [0.05, 0.2]', '  noise: [0.1]', '',
  ].join('\n'));
  return file;
}

test('without a terminal and without --yes the study is refused (exit 2); in a terminal, answering no opens nothing (exit 1)', { timeout: 60_000 }, async () => {
  const file = sweepFile();
  const before = await studyCount();
  const refused = await silico(['experiment', 'run', file], owner.key);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /price\s+at most \$[\d.]+ for 4 runs/);
  assert.match(refused.stderr, /--yes/);
  const declined = await inTerminal(`silico experiment run ${file}`, owner.key, 'n\r');
  assert.equal(declined.code, 1, declined.stdout);
  assert.match(declined.stdout, /Open this study: 4 runs for at most \$[\d.]+\? \[y\/N\]/);
  assert.match(declined.stdout, /Not started/);
  assert.equal(await studyCount(), before, 'no study was opened');
});

test('`silico experiment run study.yaml --yes --wait` runs a 2x1 sweep of 2 replicates to the end and prints the comparison; `experiment get` shows it', { timeout: 240_000 }, async () => {
  const res = await silico(['experiment', 'run', sweepFile(), '--yes', '--wait', '--poll-ms', '300'], owner.key);
  assert.equal(res.code, 0, res.stderr + res.stdout);
  assert.match(res.stderr, /growth_rate=0\.05,noise=0\.1\s+2\s+5\.\.6/, 'the arms, replicates and seeds are shown before confirming');
  assert.match(res.stderr, /price\s+at most \$[\d.]+ for 4 runs/);
  assert.match(res.stderr, /completed 4 \(of 4\)/, 'progress reached the end');
  const id = /study\s+(exp_\S+)/.exec(res.stderr)![1]!;

  const study = (await call('GET', `/experiments/${id}`, { key: owner.key })).body;
  assert.equal(study.status, 'completed');
  assert.equal(study.run_totals.completed, 4);
  assert.equal(study.goal, 'Does the rate move the final size?');
  assert.deepEqual(study.arms.map((a: any) => [a.label, a.inputs, a.seeds, a.compute_profile]), [
    ['growth_rate=0.05,noise=0.1', { noise: 0.1, growth_rate: 0.05 }, [5, 6], 'cpu-small'],
    ['growth_rate=0.2,noise=0.1', { noise: 0.1, growth_rate: 0.2 }, [5, 6], 'cpu-small'],
  ]);
  const fs = (i: number) => study.comparison.arms[i].metrics.final_size;
  assert.equal(fs(0).n, 2);
  // The printed comparison is the study's: both arms' means, and the two-arm Welch test.
  for (const out of [res.stdout, (await silico(['experiment', 'get', id], owner.key)).stdout]) {
    assert.match(out, new RegExp(`${id}\\s+Rate sweep \\(completed`));
    assert.match(out, /completed 4 \(of 4\)/);
    for (const i of [0, 1]) assert.match(out, new RegExp(`${study.arms[i].label.replaceAll('.', '\\.')}\\s+2\\s+${String(Number(fs(i).mean.toPrecision(6))).replaceAll('.', '\\.')}\\s`));
    assert.match(out, /Welch t-test, growth_rate=0\.05,noise=0\.1 vs growth_rate=0\.2,noise=0\.1 \(descriptive/);
    assert.match(out, /final_size: t=\S+ df=\S+ p=\S+/);
    assert.match(out, /comparison\.csv/);
  }
  const asJson = await silico(['--json', 'experiment', 'get', id], owner.key);
  assert.equal(asJson.code, 0);
  assert.deepEqual(JSON.parse(asJson.stdout).comparison, study.comparison);
});

test('`silico experiment run` with a `sensitivity:` block shows the design and the price before confirming, waits, and prints the indices the study found; `experiment get` shows them too', { timeout: 240_000 }, async () => {
  const file = path.join(dir, 'sensitivity.yaml');
  writeFileSync(file, [
    'name: Which input moves the final size?',
    `workspace_id: ${ws.workspace_id}`, `revision_id: ${ws.revision_id}`,
    'compute_profile_id: cpu-small', 'max_runtime_seconds: 60', 'inputs: {noise: 0.05}',
    'sensitivity:', '  parameters: [{input: growth_rate, low: 0.05, high: 0.2}]', '  outputs: [{output: final_size}]',
    '  method: morris', '  base_sample: 2', '  seed: 4', '',
  ].join('\n'));
  const res = await silico(['experiment', 'run', file, '--yes', '--wait', '--poll-ms', '300'], owner.key);
  assert.equal(res.code, 0, res.stderr + res.stdout);
  assert.match(res.stderr, /question {2}sensitivity: Morris elementary effects, base sample 2, seed 4/);
  assert.match(res.stderr, /growth_rate\s+0\.05\s+0\.2\s+uniform/);
  assert.match(res.stderr, /outputs {3}final_size/);
  assert.match(res.stderr, /price\s+at most \$[\d.]+ for 4 runs/, 'r (D + 1) runs');
  const id = /study\s+(exp_\S+)/.exec(res.stderr)![1]!;
  const study = (await call('GET', `/experiments/${id}`, { key: owner.key })).body;
  assert.equal(study.kind, 'sensitivity');
  assert.equal(study.analysis.runs_completed, 4);
  const row = study.analysis.outputs[0].indices[0];
  for (const out of [res.stdout, (await silico(['experiment', 'get', id], owner.key)).stdout]) {
    assert.match(out, /analysis {2}sensitivity \(morris, descriptive\): 4 runs completed/);
    assert.match(out, /final_size {2}ranked: growth_rate/);
    assert.match(out, new RegExp(`growth_rate\\s+${String(Number(row.mu.toPrecision(6))).replaceAll('.', '\\.')}\\s+${String(Number(row.mu_star.toPrecision(6))).replaceAll('.', '\\.')}\\s`), out);
    assert.match(out, /note: /);
  }
  // `experiment runs`: every run with its set and output, sorted as asked; the SDK iterates the same rows.
  const listed = await silico(['experiment', 'runs', id, '--sort', 'outputs.final_size', '--order', 'desc'], owner.key);
  assert.equal(listed.code, 0, listed.stderr);
  const lines = listed.stdout.trim().split('\n');
  assert.match(lines[0]!, /position\s+run_id\s+status\s+growth_rate\s+final_size/i);
  const client = new Silico({ apiKey: owner.key, baseUrl: BASE_URL });
  const rows = [];
  for await (const r of client.experiments.runs(id, { sort: 'outputs.final_size', order: 'desc', limit: 3 })) rows.push(r);
  assert.equal(rows.length, 4, 'every run, across pages');
  rows.forEach((r, i) => assert.match(lines[i + 1]!, new RegExp(`^${r.position}\\s+${r.run_id}\\s+completed\\s+${String(Number(r.params!.growth_rate!.toPrecision(6))).replaceAll('.', '\\.')}\\s+${String(Number(r.outputs!.final_size!.toPrecision(6))).replaceAll('.', '\\.')}\\s*$`)));
  assert.ok(rows[0]!.outputs!.final_size! >= rows[3]!.outputs!.final_size!, 'the largest first');
});

test('an SDK StudyHandle times out with itself in the error, then waits the study to the end reporting progress; comparison() is the study\'s', { timeout: 240_000 }, async () => {
  const client = new Silico({ apiKey: owner.key, baseUrl: BASE_URL });
  let price = 0;
  const handle = await client.experiments.run({
    name: 'One arm', arms: [{ label: 'fast', workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: 60, replicates: 2, inputs: { growth_rate: 0.2, window_delay: 0.5 } }],
  }, { confirm: (plan) => { price = plan.estimated_max_usd; return plan.run_count === 2; } });
  assert.ok(price > 0, 'confirm saw the whole-study price');
  // Its runs pause between windows, so it is still under way when first waited for with no time.
  const timedOut = await handle.wait({ timeoutMs: 0 }).then(() => undefined, (e: unknown) => e);
  assert.ok(timedOut instanceof StudyTimeout, String(timedOut));
  assert.equal(timedOut.handle, handle);

  const progress: RunTotals[] = [];
  const done = await timedOut.handle.wait({ pollMs: 200, timeoutMs: 200_000, onProgress: (t) => progress.push(t) });
  assert.equal(done.status, 'completed');
  assert.ok(done.completed_at);
  assert.ok(progress.length >= 1);
  assert.ok(progress.every((t) => t.total === 2));
  assert.deepEqual(progress.at(-1), done.run_totals);
  assert.equal(done.run_totals.completed, 2);
  const ended = progress.map((t) => t.completed + t.failed + t.cancelled + t.timed_out);
  assert.deepEqual(ended, [...ended].sort((a, b) => a - b), 'ended runs never go down');
  assert.equal(new Set(progress.map((t) => JSON.stringify(t))).size, progress.length, 'reported only when the totals change');
  assert.deepEqual(await handle.comparison(), done.comparison);
  assert.equal(done.comparison.arms[0]!.metrics!.final_size!.n, 2);
});
