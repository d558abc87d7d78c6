import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { writeTree } from './labFiles.ts';
import YAML from 'yaml';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Context, CancelledFailure } from '@temporalio/activity';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { appendEvent, getRun, type RunRow } from '../../storage/db/runs.ts';
import { getComputeProfile } from '../../storage/db/computeProfiles.ts';
import { sha256Hex } from '../../storage/digest.ts';
import { newId } from '../../storage/ids.ts';
import { seriesCsv, seriesSvg, type Point } from './artifacts.ts';

const DRIVER = fileURLToPath(new URL('./driver.py', import.meta.url));
const MAX_LOG_EVENTS = 500;

export interface ExecutionResult {
  status: 'completed' | 'failed' | 'timed_out' | 'cancelled' | 'skipped';
  error?: { code: string; message: string } | null;
  computeSeconds?: number;
  outputs?: Record<string, unknown>;
}

interface Output { name: string; value: unknown; series: Point[]; public: boolean }

/**
 * The lab execution activity, run on the task queue of the run's compute profile. The
 * driver runs as a child process in its own process group (never on this event loop),
 * with an emptied environment, a scratch folder and limits from the profile. Its JSON
 * lines become run events and heartbeats; cancellation sends SIGTERM to the group, then
 * SIGKILL after 2 s. Outputs are checked against the contract and stored as hashed
 * artifacts.
 */
export function createExecutionActivities(deps: { db: Db; objects: ObjectStore; python: string }) {
  return {
    async executeLab(input: { runId: string }): Promise<ExecutionResult> {
      const ctx = Context.current();
      const run = await getRun(deps.db, input.runId);
      // Cancelled between taking its slot and starting here: the run still has to end,
      // as cancelled with nothing charged (execution never began). A run that has already
      // ended (a retry after the fact) is skipped and left as it is.
      if (run?.status === 'cancelling') return { status: 'cancelled', error: null };
      if (!run || run.status !== 'running') return { status: 'skipped' };
      const profile = (await getComputeProfile(deps.db, run.compute_profile))!;
      const scratch = await mkdtemp(path.join(tmpdir(), `silico-run-${run.id.slice(0, 8)}-`));
      try {
        const source = await materialize(deps, run, scratch);
        if ('error' in source) return { status: 'failed', error: source.error, computeSeconds: 0 };
        const { labPath: archive, manifest, request } = source;
        // Compute is charged from here: waiting for a slot or a worker costs nothing.
        await deps.db('runs').where({ id: run.id }).whereNull('started_at').update({ started_at: deps.db.fn.now() });
        await appendEvent(deps.db, run.id, 'log', `Executing ${run.resolved_ref} on ${profile.id}.`, { stream: 'worker' });

        const memBytes = Math.max(profile.memory_mib, 1024) * 4 * 1024 * 1024;
        const limits = existsSync('/usr/bin/prlimit')
          ? ['/usr/bin/prlimit', `--as=${memBytes}`, `--cpu=${run.max_runtime_seconds + 30}`, `--fsize=${1 << 30}`, '--']
          : [];
        const [cmd, ...args] = [...limits, deps.python, '-u', DRIVER, archive, scratch];
        const started = Date.now();
        const child = spawn(cmd!, args, {
          cwd: scratch, detached: true, stdio: ['pipe', 'pipe', 'pipe'],
          env: { PATH: '/usr/bin:/bin', HOME: scratch, LANG: 'C.UTF-8', OPENBLAS_NUM_THREADS: String(profile.vcpus), OMP_NUM_THREADS: String(profile.vcpus), BIOSIM_PACKAGE_CACHE_DIR: path.join(scratch, 'cache'), PYTHONDONTWRITEBYTECODE: '1' },
        });
        child.stdin.end(JSON.stringify({ inputs: run.inputs, seed: run.seed, ...request }));
        await appendEvent(deps.db, run.id, 'log', `Driver started (process group ${child.pid}).`, { stream: 'worker', pid: child.pid });
        const killGroup = (sig: NodeJS.Signals) => {
          try { process.kill(-child.pid!, sig); } catch { /* already gone */ }
        };
        let stopReason: 'cancelled' | 'timed_out' | undefined;
        const stop = (why: 'cancelled' | 'timed_out') => {
          if (stopReason) return;
          stopReason = why;
          killGroup('SIGTERM');
          setTimeout(() => killGroup('SIGKILL'), 2000).unref();
        };
        const onAbort = () => stop('cancelled');
        ctx.cancellationSignal.addEventListener('abort', onAbort);
        const wall = setTimeout(() => stop('timed_out'), run.max_runtime_seconds * 1000);
        const beat = setInterval(() => ctx.heartbeat({ pid: child.pid }), 5000);
        ctx.heartbeat({ pid: child.pid });

        const outputs: Output[] = [];
        let visuals: unknown = null;
        let result: { status: string; cpu_seconds: number } | undefined;
        let error: { code: string; message: string } | undefined;
        let logs = 0;
        let lastProgressWrite = 0;
        const stderr: string[] = [];
        createInterface({ input: child.stderr }).on('line', (l) => {
          stderr.push(l);
          if (stderr.length > 40) stderr.shift();
        });
        // Events are appended one after another, in the order the driver wrote them.
        let pending: Promise<unknown> = Promise.resolve();
        const later = (f: () => Promise<unknown>) => { pending = pending.then(f); };
        for await (const line of createInterface({ input: child.stdout })) {
          let msg: any;
          try { msg = JSON.parse(line); } catch { msg = { type: 'log', level: 'info', message: line }; }
          ctx.heartbeat({ pid: child.pid });
          if (msg.type === 'progress') {
            const now = Date.now();
            if (now - lastProgressWrite >= 1000 || msg.fraction >= 1) {
              lastProgressWrite = now;
              later(() => deps.db('runs').where({ id: run.id }).update({ progress: Math.min(1, Math.max(0, msg.fraction)) }));
              later(() => appendEvent(deps.db, run.id, 'progress', `${Math.round(msg.fraction * 100)}%`, { fraction: msg.fraction, t: msg.t }));
            }
          } else if (msg.type === 'log' && logs < MAX_LOG_EVENTS) {
            logs += 1;
            later(() => appendEvent(deps.db, run.id, 'log', String(msg.message).slice(0, 2000), { level: msg.level, stream: 'stdout' }));
          } else if (msg.type === 'output') outputs.push(msg);
          else if (msg.type === 'visual') visuals = msg.visuals;
          else if (msg.type === 'result') result = msg;
          else if (msg.type === 'error') error = { code: msg.code, message: msg.message };
        }
        const exit = await new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (c) => resolve(c))));
        clearTimeout(wall);
        clearInterval(beat);
        ctx.cancellationSignal.removeEventListener('abort', onAbort);
        await pending;
        const wallSeconds = (Date.now() - started) / 1000;
        const computeSeconds = result?.cpu_seconds ?? wallSeconds;
        if (stopReason === 'cancelled') throw new CancelledFailure('run cancelled');
        if (stopReason === 'timed_out') {
          return { status: 'timed_out', error: { code: 'timed_out', message: `The run exceeded max_runtime_seconds (${run.max_runtime_seconds}).` }, computeSeconds: wallSeconds };
        }
        if (error || exit !== 0 || !result) {
          return { status: 'failed', error: error ?? { code: 'lab_error', message: `The lab exited with ${exit}: ${stderr.slice(-5).join('\n')}` }, computeSeconds };
        }
        const declared = ((manifest.io?.outputs ?? []) as Array<{ name: string }>).map((o) => o.name);
        const missing = declared.filter((n) => !outputs.some((o) => o.name === n && o.value !== null && o.value !== undefined));
        if (missing.length) {
          return { status: 'failed', error: { code: 'output_contract_violation', message: `Declared outputs missing: ${missing.join(', ')}.` }, computeSeconds };
        }
        const finals = Object.fromEntries(outputs.map((o) => [o.name, o.value]));
        await storeArtifacts(deps, run.id, outputs, finals, visuals);
        return { status: 'completed', outputs: finals, computeSeconds };
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Puts what a run executes in its scratch folder, every byte checked against its content
 * address: a release's archive, or a managed run's revision tree as a lab folder.
 */
async function materialize(deps: { db: Db; objects: ObjectStore }, run: RunRow, scratch: string): Promise<
  { labPath: string; manifest: any; request: Record<string, unknown> } | { error: { code: string; message: string } }
> {
  const mismatch = { error: { code: 'artifact_store_error', message: 'Stored lab content does not match its digest.' } };
  if (run.kind === 'hub') {
    const release = await deps.db('releases').where({ id: run.release_id }).first();
    const bytes = await deps.objects.getBytes(release.archive_key);
    if (`blobs/sha256/${sha256Hex(bytes)}` !== release.archive_key) return mismatch;
    const labPath = path.join(scratch, 'lab.bsilab');
    await writeFile(labPath, bytes);
    return { labPath, manifest: release.manifest, request: { package_sha256: run.package_sha256 } };
  }
  const rev = await deps.db('revisions').where({ id: run.revision_id }).first();
  const labPath = path.join(scratch, 'lab');
  if (!(await writeTree(deps.objects, rev.tree, labPath))) return mismatch;
  const manifest = YAML.parse(await readFile(path.join(labPath, 'lab.yaml'), 'utf8'));
  const [ns, name] = run.resolved_ref.split('@')[0]!.split('/');
  return { labPath, manifest, request: { package: `${ns}/${name}`, version: `0.0.${rev.number}` } };
}

/** Writes each artifact by content address and records it once (retries are harmless). */
async function storeArtifacts(deps: { db: Db; objects: ObjectStore }, runId: string, outputs: Output[], finals: Record<string, unknown>, visuals: unknown) {
  const files: Array<{ role: string; file_name: string; content_type: string; format: string; bytes: Buffer; public: boolean }> = [];
  const publicFinals = Object.fromEntries(outputs.filter((o) => o.public !== false).map((o) => [o.name, finals[o.name]]));
  files.push({ role: 'outputs', file_name: 'outputs.json', content_type: 'application/json', format: 'json', bytes: Buffer.from(`${JSON.stringify(publicFinals, null, 2)}\n`), public: true });
  for (const o of outputs) {
    if (o.series.length < 2) continue;
    files.push({ role: o.name, file_name: `${o.name}.csv`, content_type: 'text/csv', format: 'csv', bytes: Buffer.from(seriesCsv(o.name, o.series)), public: o.public !== false });
    if (o.series.some((p) => typeof p[1] === 'number')) {
      files.push({ role: o.name, file_name: `${o.name}.svg`, content_type: 'image/svg+xml', format: 'svg', bytes: Buffer.from(seriesSvg(o.name, o.series)), public: o.public !== false });
    }
  }
  if (visuals) files.push({ role: 'visuals', file_name: 'visuals.json', content_type: 'application/json', format: 'json', bytes: Buffer.from(JSON.stringify(visuals)), public: true });
  for (const f of files) {
    const sha = await deps.objects.putBlob(f.bytes, f.content_type);
    const [row] = await deps.db('run_artifacts')
      .insert({ id: newId('art'), run_id: runId, role: f.role, file_name: f.file_name, content_type: f.content_type, format: f.format, size_bytes: f.bytes.length, sha256: sha, public: f.public })
      .onConflict(['run_id', 'file_name']).ignore().returning('id');
    if (row) await appendEvent(deps.db, runId, 'artifact_stored', `Stored ${f.file_name} (${f.bytes.length} bytes).`, { artifact_id: row.id, sha256: sha, file_name: f.file_name });
  }
  const { count } = (await deps.db('run_artifacts').where({ run_id: runId }).count<{ count: string }[]>('* as count').first())!;
  await deps.db('runs').where({ id: runId }).update({ artifact_count: Number(count) });
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
