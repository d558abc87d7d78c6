import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import pg from 'pg';
import { createDb, migrate, type Db } from '../storage/db/knex.ts';
import { makeAccount } from './accounts.ts';
import { labFileOperations } from './labFiles.ts';
import { createObjectStore, type ObjectStore } from '../storage/objects.ts';
import { loadConfig, sandboxSettings } from '../kernel/config.ts';
import { REPO_ROOT } from '../deploy/local/paths.ts';
import { serviceArgs } from '../deploy/local/serviceProcess.ts';
import { createSandbox, type Sandbox } from '../activities/execution/sandbox.ts';
import { contractErrorType } from './contract.ts';
import { getComputeProfile } from '../storage/db/computeProfiles.ts';
import type { NewRun } from '../storage/db/runs.ts';
import { newUuid } from '../storage/ids.ts';

/** The stack `npm test` started (test/run.ts puts its addresses in the environment). */
export const BASE_URL = process.env.SILICO_TEST_BASE_URL ?? '';
export const OPERATOR_KEY = process.env.SILICO_TEST_API_KEY ?? '';
if (!BASE_URL) throw new Error('integration tests run under `npm test`, which starts the stack');

let db: Db | undefined;
/** A small pool on the stack's Postgres for setting up fixtures. */
export function testDb(): Db {
  db ??= createDb(process.env.DATABASE_URL!, { poolMax: 4 });
  return db;
}

let objects: ObjectStore | undefined;
export function testObjects(): ObjectStore {
  objects ??= createObjectStore(loadConfig().s3);
  return objects;
}

/**
 * A database of the caller's own on the stack's Postgres server, migrated, for a file that
 * runs a Temporal server of its own. A worker acts on its database's records through its
 * Temporal (it starts a workflow for every webhook delivery the database holds), so two
 * Temporal servers on one database would each deliver the same event.
 */
export async function ownDatabase(): Promise<{ url: string; db: Db; drop: () => Promise<void> }> {
  const server = new URL(process.env.DATABASE_URL!);
  const name = `silico_own_${process.pid}_${newUuid().slice(0, 8)}`;
  const onServer = async (sql: string) => {
    const c = new pg.Client({ connectionString: new URL('/postgres', server).toString() });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await onServer(`CREATE DATABASE ${name}`);
  const url = new URL(`/${name}`, server).toString();
  const own = createDb(url, { poolMax: 4 });
  await migrate(own);
  return { url, db: own, drop: async () => {
    await own.destroy();
    await onServer(`DROP DATABASE ${name} WITH (FORCE)`);
  } };
}

/** Closes the fixtures' pool so the test process can exit. */
export async function closeTestDb(): Promise<void> {
  await db?.destroy();
  db = undefined;
}

export interface Res { status: number; headers: Headers; body: any; text: string }

/** One HTTP call to the API, the way a client makes it. */
export async function call(
  method: string, route: string,
  opts: { key?: string | null; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string>; base?: string } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? OPERATOR_KEY : opts.key;
  if (key) headers.Authorization = `Bearer ${key}`;
  let body: string | Buffer | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const url = route.startsWith('http') ? route : `${opts.base ?? BASE_URL}${route}`;
  const res = await fetch(url, { method, headers, body: body as unknown as BodyInit });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  const drift = driftOf.get(res);
  if (drift) throw new Error(drift);
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/**
 * Every JSON success this test process receives from the service (through `call`, the SDK
 * or any other fetch) is checked against its route's published schema: `call` throws at
 * once, and any other drift fails the test that received it when that test ends (a hook
 * registered while a test runs is that test's own, so the file's cleanup still runs).
 */
const driftOf = new WeakMap<Response, string>();
/** A request's JSON body, when it sent one as text. */
function requestJson(init: RequestInit | undefined): unknown {
  try {
    return typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
  } catch {
    return undefined;
  }
}
const plainFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const res = await plainFetch(input, init);
  if (!res.ok || !(res.headers.get('content-type') ?? '').includes('application/json')) return res;
  const url = input instanceof Request ? input.url : String(input);
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  let body: unknown;
  try {
    body = await res.clone().json();
  } catch {
    return res;
  }
  // Imported once needed: it brings the api's whole operation graph.
  const checks = await import('./responseSchemas.ts');
  const drift = checks.responseProblem(method, url, res.status, body);
  const pathname = new URL(url).pathname;
  const problems = [
    ...(drift ? [drift] : []),
    ...(pathname === '/mcp' ? await checks.mcpProblems(requestJson(init), body) : await checks.nextActionProblems(`${method} ${pathname}`, body)),
  ];
  if (problems.length) {
    driftOf.set(res, problems.join('; '));
    after(() => {
      throw new Error(`a response outside its contract: ${problems.join('; ')}`);
    });
  }
  return res;
};

/** Uploads one file (POST /files, multipart) as a client does; answers the file record. */
export async function uploadFile(key: string, name: string, bytes: Buffer, base = BASE_URL): Promise<Res> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(`${base}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

let seq = 0;
/** A fresh account (unique namespace) with one key; options pick kind, gateway and scopes. */
export async function newAccount(opts: { gateway?: boolean; scopes?: readonly string[]; usd?: number; expiresAt?: Date; kind?: 'personal' | 'team'; db?: Db } = {}) {
  // `db`: another stack's database (the cluster suite's); the test stack's by default.
  const d = opts.db ?? testDb();
  const namespace = `t${process.pid}-${Date.now().toString(36)}-${seq++}`.slice(0, 39);
  return makeAccount(d, { ...opts, namespace });
}

/** A success body without its request id, to compare what two doors (or two reads) answered. */
export const withoutRequestId = ({ request_id: _, ...b }: Record<string, any>) => b;

/** Asserts the spec's error envelope and returns its `error`. */
export function errorOf(res: Res) {
  const e = res.body?.error;
  if (!e || typeof e !== 'object') throw new Error(`expected an error envelope, got ${res.status} ${res.text.slice(0, 300)}`);
  for (const k of ['type', 'code', 'message', 'param', 'details', 'request_id']) {
    if (!(k in e)) throw new Error(`error envelope lacks ${k}: ${res.text}`);
  }
  if (e.request_id !== res.headers.get('x-request-id')) throw new Error('error request_id differs from X-Request-ID');
  const type = contractErrorType(res.status);
  if (type && e.type !== type) throw new Error(`a ${res.status} is a ${type} in the contract, not ${e.type}: ${res.text.slice(0, 300)}`);
  return e as { type: string; code: string; message: string; param: string | null; details: Record<string, unknown>; request_id: string };
}

/** Starts another api process on this stack (a replica), with extra environment. */
export async function spawnApi(env: Record<string, string> = {}, fixedPort?: number): Promise<{ base: string; stop: () => Promise<void>; proc: ChildProcess }> {
  // A fixed port: a replica that comes back where its clients left it.
  const port = fixedPort ?? await getPort();
  const proc = spawn(process.execPath, serviceArgs('deploy/api.ts'), {
    cwd: REPO_ROOT,
    env: { ...process.env, SILICO_API_PORT: String(port), SILICO_BASE_URL: `http://localhost:${port}/v1`, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {
      // starting
    }
    if (proc.exitCode !== null) throw new Error(`api replica exited with ${proc.exitCode}`);
    if (Date.now() > deadline) throw new Error('api replica did not start');
    await new Promise((r) => setTimeout(r, 150));
  }
  return {
    base: `http://127.0.0.1:${port}/v1`,
    proc,
    stop: async () => {
      if (proc.exitCode !== null) return;
      const done = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await done;
    },
  };
}

let workerSpawns = 0;
/**
 * A range of sandbox uids for a worker this test process starts: past the shared
 * worker's (61000 up) and every other test process's, since a uid is what a sandbox's
 * process count (RLIMIT_NPROC) is kept against and what "no process of it is left" checks.
 */
function ownSandboxUids(slot = workerSpawns++ % 3): { base: number; count: number } {
  return { base: 100_000 + process.pid * 64 + slot * 16, count: 16 };
}

/** Starts another worker process on this stack (e.g. for one compute profile), resolved once it polls. */
export async function spawnWorker(env: Record<string, string> = {}): Promise<{ proc: ChildProcess; stop: () => Promise<void>; uids: { base: number; count: number } }> {
  const uids = env.SILICO_SANDBOX_UID_BASE ? { base: Number(env.SILICO_SANDBOX_UID_BASE), count: Number(env.SILICO_SANDBOX_UID_COUNT ?? 1000) } : ownSandboxUids();
  const proc = spawn(process.execPath, serviceArgs('deploy/worker.ts'), {
    cwd: REPO_ROOT, env: { ...process.env, LOG_LEVEL: 'info', SILICO_SANDBOX_UID_BASE: String(uids.base), SILICO_SANDBOX_UID_COUNT: String(uids.count), ...env }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('worker did not start')), 60000);
    proc.stdout!.on('data', (b: Buffer) => {
      if (b.toString().includes('worker started')) {
        clearTimeout(timer);
        resolve();
      }
    });
    proc.once('exit', (c) => reject(new Error(`worker exited with ${c}`)));
  });
  proc.stdout!.resume();
  return {
    proc,
    uids,
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const done = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await done;
    },
  };
}

export const TERMINAL_RUN = ['completed', 'failed', 'cancelled', 'timed_out'];

/** Polls GET /runs/{id} until `done` (default: a terminal status); fails after `ms`. */
export async function waitForRun(key: string, runId: string, ms = 60000, done: (r: any) => boolean = (r) => TERMINAL_RUN.includes(r.status), base = BASE_URL): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await call('GET', `/runs/${runId}`, { key, base });
    if (r.status !== 200) throw new Error(`GET /runs/${runId}: ${r.status} ${r.text}`);
    if (done(r.body)) return r.body;
    if (Date.now() > deadline) throw new Error(`run ${runId} stayed ${r.body.status}`);
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** The driver's process id, from the run's events (the execution activity reports it). */
export async function driverPid(key: string, runId: string, ms = 30000, base = BASE_URL): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const ev = await call('GET', `/runs/${runId}/events?limit=1000`, { key, base });
    const pid = ev.body?.items?.find((e: any) => e.data.pid)?.data.pid;
    if (pid) return pid as number;
    if (Date.now() > deadline) throw new Error(`run ${runId} reported no driver pid`);
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** True while a process exists and is not a zombie (an exited child nobody reaped yet). */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * The temporary directories whose names start with `prefix` that workers of this machine
 * made, as paths: each worker's are under its scratch root (activities/workerScratch.ts),
 * and a process that runs activities itself (a test's) makes them in the temporary folder.
 */
export function workerTmpDirs(prefix: string): string[] {
  const base = tmpdir();
  const roots = [base, ...readdirSync(base).filter((d) => /^silico-worker-\d+-\d+$/.test(d)).map((d) => path.join(base, d))];
  return roots.flatMap((root) => {
    try {
      return readdirSync(root).filter((d) => d.startsWith(prefix)).map((d) => path.join(root, d));
    } catch {
      return [];
    }
  });
}

/** The worker-side directories of a run (its input; removed when its execution ends). */
export function runDirsOf(runId: string): string[] {
  return workerTmpDirs(`silico-run-${runId.slice(0, 8)}-`);
}

/** A process's field from /proc/PID/status (its real uid for `Uid`), or null when it is gone. */
function statusField(pid: number | string, field: string): string | null {
  try {
    return new RegExp(`^${field}:\\s+(\\S+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? null;
  } catch {
    return null;
  }
}

/** A process's parent pid, or null when it is gone. */
export function parentPid(pid: number): number | null {
  const ppid = statusField(pid, 'PPid');
  return ppid === null ? null : Number(ppid);
}

/** Whether a process has exited and waits for its parent to reap it (false when it is gone). */
export function isZombie(pid: number | string): boolean {
  return statusField(pid, 'State') === 'Z';
}

/**
 * Live processes running as one of `uids` (a worker as root gives each sandbox its own
 * uid), read from their status: a warm parent's /proc entry is root's (it is not dumpable).
 */
export function sandboxUserProcesses(uids: { base: number; count: number }): number[] {
  const ofSandbox = (pid: number | string) => {
    const uid = Number(statusField(pid, 'Uid') ?? -1);
    return uid >= uids.base && uid < uids.base + uids.count;
  };
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => ofSandbox(p) && !isZombie(p)).map(Number);
}

/**
 * Whether a process is a warm parent of runs: the driver serving forks (driver.py
 * --serve) whose own parent is its sandbox's init, not another lab process. It outlives
 * its runs by design, idle between them.
 */
export function isWarmParent(pid: number): boolean {
  try {
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('--serve')) return false;
  } catch {
    return false;
  }
  const ppid = statusField(pid, 'PPid');
  return ppid !== null && statusField(ppid, 'Uid') === '0';
}

/** The children of a process (every thread's). */
export function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

/**
 * What is left of runs on a worker of these sandbox uids once they have ended: any
 * process of a sandbox uid but an idle warm parent (one with no child).
 */
export function leftOfRuns(uids: { base: number; count: number }): number[] {
  return sandboxUserProcesses(uids).filter((p) => !isWarmParent(p) || childrenOf(p).length > 0);
}

/** True while any live (non-zombie) process remains in a process group. */
export function groupAlive(pgid: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

let ownSandbox: Sandbox | undefined;
/** A sandbox of this test process's own uids, past the workers': it may pack or run a lab while workers run theirs. */
export function testSandbox(): Sandbox {
  if (!ownSandbox) {
    const uids = ownSandboxUids(3);
    ownSandbox = createSandbox({ ...sandboxSettings(), uidBase: uids.base, uidCount: uids.count });
  }
  return ownSandbox;
}

/** Publishes a fixture lab (test/fixtures/labs/<name>) as a private 1.0.0 release of the account; returns its exact ref. */
export async function publishFixtureLab(owner: { account: { id: string; namespace: string } }, name: string, db = testDb()): Promise<string> {
  // Imported here: most files never publish a fixture, and it brings the packer's whole graph.
  const { publishLab } = await import('../deploy/local/builtinLabs.ts');
  const rel = await publishLab(db, testObjects(), { python: process.env.SILICO_PYTHON!, sandbox: testSandbox() }, {
    dir: path.join(REPO_ROOT, 'test/fixtures/labs', name), accountId: owner.account.id, namespace: owner.account.namespace,
    name, version: '1.0.0', visibility: 'private',
  });
  return `${rel.namespace}/${rel.name}@${rel.version}`;
}

/**
 * A published release run directly with the pinned runtime, the runtime's own way
 * (test/fixtures/finalOutputs.py), seeded as a run with `seed` is, in a sandbox with a
 * run's limits on `profileId`: the final value of each output its lab declares.
 */
export async function directFinalOutputs(ref: string, seed: number, profileId = 'cpu-small'): Promise<Record<string, unknown>> {
  const [, namespace, name, version] = /^([^/]+)\/([^@]+)@(.+)$/.exec(ref)!;
  const release = await testDb()('releases').where({ namespace, name, version }).first('archive_key');
  const profile = await getComputeProfile(testDb(), profileId);
  if (!release?.archive_key || !profile) throw new Error(`no release ${ref} or profile ${profileId}`);
  const [{ outcomeError, runLabProcess }, { labEnv, runLimits }] = await Promise.all([import('../activities/execution/labProcess.ts'), import('../activities/execution/labSpec.ts')]);
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-direct-'));
  try {
    const input = path.join(dir, 'input');
    await mkdir(input);
    await writeFile(path.join(input, 'lab.bsilab'), await testObjects().getBytes(release.archive_key));
    const scratch = path.join(dir, 'scratch');
    const outcome = await runLabProcess(testSandbox(), {
      python: process.env.SILICO_PYTHON!, script: path.join(REPO_ROOT, 'test/fixtures/finalOutputs.py'), input, scratch,
      args: (p) => [path.join(p.input, 'lab.bsilab'), p.scratch, String(seed)], limits: runLimits(profile, 600), env: labEnv(profile.vcpus),
    }, '', { wallSeconds: 600 }, { onMessage: () => undefined, onLog: () => undefined });
    const error = outcomeError(outcome);
    if (error) throw new Error(`the direct run of ${ref} failed: ${error.code}: ${error.message}`);
    return JSON.parse(await readFile(path.join(scratch, 'final.json'), 'utf8')) as Record<string, unknown>;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Repeats `request` until `refused`, failing once `ms` have passed since `changedAt`. A
 * change to keys or accounts reaches a running api process as a Postgres notice, a moment
 * after it commits; until then a cached key is served. Bounds well under the cache's own
 * lifetime (a minute) show that the notice, not the expiry, applied the change.
 */
export async function refusedWithin(ms: number, request: () => Promise<any>, refused: (res: any) => boolean, changedAt = Date.now()): Promise<any> {
  for (;;) {
    const res = await request();
    if (refused(res)) return res;
    assert.ok(Date.now() - changedAt < ms, `still accepted ${ms} ms after the change: ${res.status}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Polls `f` every 300 ms until it returns a value, for at most `ms`. */
export async function until<T>(ms: number, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 300));
  }
}

type TestProfile = { id: string; title: string } & Record<string, unknown>;

/** A test compute profile's row: a small CPU profile unless the test says otherwise. */
export function testProfileRow(p: TestProfile) {
  return { kind: 'cpu', vcpus: 1, memory_mib: 1024, gpu: null, price_per_second_micros: 10, max_runtime_seconds: 600, schedule_to_start_seconds: 300, sort: 90, ...p };
}

/**
 * Compute profiles of one test file only (ids `test-*`), inserted before its tests and
 * removed after when no record uses them (runs and hostings keep theirs), served only by
 * workers the file starts. Register it before `after(closeTestDb)`: hooks run in the
 * order they were registered.
 */
export function useTestProfiles(...profiles: TestProfile[]): void {
  const rows = profiles.map(testProfileRow);
  before(async () => {
    await testDb()('compute_profiles').insert(rows).onConflict('id').ignore();
  });
  after(async () => {
    await testDb()('compute_profiles').whereIn('id', rows.map((r) => r.id)).delete().catch(() => undefined);
  });
}

/** The operator CLI (`npm run admin -- ... --json`), its JSON answer parsed. */
export async function admin(...args: string[]): Promise<any> {
  const { stdout } = await promisify(execFile)(process.execPath, [...serviceArgs('deploy/admin.ts'), ...args, '--json'], { env: process.env });
  return JSON.parse(stdout);
}

/** A run artifact's bytes, downloaded as its owner would. */
/** The bytes of a download URL the service answered with, fetched with the account's key. */
export async function fileBytes(key: string, url: string): Promise<Buffer> {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  return Buffer.from(await res.arrayBuffer());
}

export async function downloadArtifact(key: string, runId: string, artifactId: string): Promise<Buffer> {
  const res = await fetch(`${BASE_URL}/runs/${runId}/artifacts/${artifactId}`, { headers: { Authorization: `Bearer ${key}` } });
  if (res.status !== 200) throw new Error(`download of ${artifactId}: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

/** A workspace holding every file of a lab folder as its second revision (made through the API). */
export async function workspaceOfLab(key: string, title: string, labDir: string): Promise<{ workspace_id: string; lab_id: string; revision_id: string }> {
  const ws = (await call('POST', '/workspaces', { key, body: { title } })).body;
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: labFileOperations(labDir) } });
  if (change.status !== 200 || change.body.status !== 'ready') throw new Error(`change plan: ${change.text}`);
  const rev = await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } });
  if (rev.status !== 200) throw new Error(`apply: ${rev.text}`);
  return { workspace_id: ws.workspace_id, lab_id: ws.lab_id, revision_id: rev.body.revision_id };
}

/**
 * A fixture lab (noisy-growth by default) published as 1.0.0 through the API by a fresh
 * account with $10 (or by `existing`): its owner, lab id and exact release, ready to be hosted.
 */
export async function hostedLabOwner(labDir = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth'), existing?: Awaited<ReturnType<typeof newAccount>>): Promise<{
  owner: Awaited<ReturnType<typeof newAccount>>; labId: string; reference: string; sha256: string;
}> {
  const owner = existing ?? await newAccount({ usd: 10 });
  const ws = await workspaceOfLab(owner.key, 'Noisy growth', labDir);
  const prep = await call('POST', '/publication-plans', { key: owner.key, body: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, version: '1.0.0' } });
  if (prep.body?.status !== 'ready') throw new Error(`publication plan: ${prep.text}`);
  const pub = await call('POST', '/publications', { key: owner.key, body: { plan_id: prep.body.plan_id, plan_sha256: prep.body.plan_sha256 } });
  if (pub.status !== 200) throw new Error(`publication: ${pub.text}`);
  const release = await until(120_000, async () => {
    const r = await call('GET', `/hub/releases/${encodeURIComponent(prep.body.reference)}`, { key: owner.key });
    return r.status === 200 ? r.body : undefined;
  });
  return { owner, labId: ws.lab_id, reference: prep.body.reference, sha256: String(release.package_sha256).replace(/^sha256:/, '') };
}

/**
 * Retires a lab's hosting (if it is still going) and waits until it has: its warm
 * instances, sandboxed processes that outlive a test otherwise, are stopped.
 */
export async function retireHosting(key: string, labId: string): Promise<void> {
  await until(60_000, async () => {
    const h = (await call('GET', `/labs/${labId}/hosting`, { key })).body;
    if (!h?.status || ['retired', 'failed', 'rejected'].includes(h.status)) return true;
    if (!h.pending_action) await call('PATCH', `/labs/${labId}/hosting`, { key, body: { revision: h.revision, action: 'retire' } });
    return undefined;
  });
}

/** What a `silico` CLI process did. */
export interface CliResult { code: number | null; stdout: string; stderr: string }

/**
 * Runs the `silico` CLI against this stack with a clean environment (only PATH and HOME
 * of ours), `SILICO_API_KEY` from `key`, and config kept in `configDir`.
 */
export function silicoCli(args: string[], opts: {
  key?: string; configDir: string; cwd?: string; env?: Record<string, string>;
  onStderr?: (text: string, child: ChildProcess) => void; onStdout?: (text: string, child: ChildProcess) => void;
}): Promise<CliResult> {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'sdk/bin/silico.js'), ...args], {
    cwd: opts.cwd ?? REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SILICO_CONFIG_DIR: opts.configDir, SILICO_BASE_URL: BASE_URL, ...(opts.key ? { SILICO_API_KEY: opts.key } : {}), ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => {
    stdout += b.toString();
    opts.onStdout?.(stdout, child);
  });
  child.stderr!.on('data', (b: Buffer) => {
    stderr += b.toString();
    opts.onStderr?.(stderr, child);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** A run row as the api accepts one (for tests that drive the run's database functions directly). */
export function newRunRow(accountId: string, over: Partial<NewRun> = {}): NewRun {
  return {
    id: newUuid(), account_id: accountId, kind: 'hub', ref: 'platform/microbial-growth@1.0.0', resolved_ref: 'platform/microbial-growth@1.0.0',
    release_id: null, workspace_id: null, revision_id: null, package_sha256: `sha256:${'0'.repeat(64)}`, inputs: {}, metadata: {},
    compute_profile: 'cpu-small', max_runtime_seconds: 60, reserved_micros: 10_000, seed: 1, experiment_id: null, plan_id: null, ...over,
  };
}
