import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import { sandboxSettings } from '../../kernel/config.ts';
import { packLab } from '../../activities/execution/packLab.ts';
import { createSandbox, SandboxUnavailable } from '../../activities/execution/sandbox.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { packerIdentity } from '../../storage/labIdentity.ts';
import { call, closeTestDb, downloadArtifact, newAccount, processAlive, publishFixtureLab, runDirsOf, leftOfRuns, spawnWorker, until, useTestProfiles, waitForRun, driverPid } from '../helpers.ts';

// Every lab process runs sandboxed: a hostile lab (test/fixtures/labs/hostile-lab) tries,
// one attack per run, what a stranger's code might, on the real stack. Each ends with its
// own precise run error, the worker serves the next run, and nothing of the lab survives.
// The attacks run on a worker of this file's own (its profile, its own sandbox uids), so
// "no process of a sandbox user is left" speaks of its labs alone while other files run.
// Its runs fork from warm parents, as every worker's do (warmParents.ts): what is left
// after a run is at most its idle parent; a second worker runs them cold.

const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
// 2 GiB: a fork bomb's 68 interpreters stay under the memory bound across processes, so
// the process bound is what stops it; the 1 GiB profile is the memory and scratch attacks'.
const PROFILE = 'test-sandbox';
const PROFILE_1G = 'test-sandbox-1g';
const COLD = 'test-sandbox-cold';
useTestProfiles(
  { id: COLD, title: 'Test profile of the sandbox attacks, served by a worker without warm parents', schedule_to_start_seconds: 120, memory_mib: 2048 },
  { id: PROFILE, title: 'Test profile of the sandbox attacks', schedule_to_start_seconds: 120, memory_mib: 2048 },
  { id: PROFILE_1G, title: 'Test profile of the sandbox attacks on memory and disk', schedule_to_start_seconds: 120, memory_mib: 1024 },
  { id: 'test-no-bwrap', title: 'Test profile served by a worker without bubblewrap', schedule_to_start_seconds: 120 },
  { id: 'test-unsafe', title: 'Test profile served by a worker with the development opt-out', schedule_to_start_seconds: 120 },
);
after(async () => {
  await Promise.all([worker?.stop(), coldWorker?.stop()]);
  await closeTestDb();
});

let owner: Awaited<ReturnType<typeof newAccount>>;
let hostile = '';
let slow = '';
let worker: Awaited<ReturnType<typeof spawnWorker>>;
let coldWorker: Awaited<ReturnType<typeof spawnWorker>>;
before(async () => {
  [worker, coldWorker] = await Promise.all([
    spawnWorker({ SILICO_COMPUTE_PROFILES: `${PROFILE},${PROFILE_1G}` }),
    spawnWorker({ SILICO_COMPUTE_PROFILES: COLD, SILICO_WARM_PARENTS: '0' }),
  ]);
  owner = await newAccount({ usd: 50 });
  hostile = await publishFixtureLab(owner, 'hostile-lab');
  slow = await publishFixtureLab(owner, 'slow-lab');
});

/** What the lab should never reach: the stack's own ports on every address this machine has. */
function serviceTargets() {
  const ports = [new URL(process.env.DATABASE_URL!).port, new URL(process.env.S3_ENDPOINT!).port, process.env.TEMPORAL_ADDRESS!.split(':').pop()!].map(Number);
  const hosts = ['127.0.0.1', ...Object.values(networkInterfaces()).flat().filter((i) => i && i.family === 'IPv4' && !i.internal).map((i) => i!.address)];
  return { ports, hosts };
}

/** The worker's secrets: none of these may be visible to a lab. */
const SECRETS = [process.env.S3_SECRET_ACCESS_KEY!, new URL(process.env.DATABASE_URL!).password, process.env.SILICO_TEST_API_KEY!].filter((s) => s && s.length >= 6);

/** What runs left on this file's workers (as root, each sandbox has its own uid): any process but an idle warm parent. */
const leftProcesses = () => [...leftOfRuns(worker.uids), ...leftOfRuns(coldWorker.uids)];

async function runAttack(attack: number, target: { ports?: number[]; hosts?: string[]; paths?: string[] } = {}, opts: { maxRuntime?: number; profile?: string } = {}) {
  const res = await call('POST', '/runs', {
    key: owner.key, headers: idem(),
    body: { ref: hostile, inputs: { attack, target: { ports: [], hosts: [], paths: [], ...target } }, max_runtime_seconds: opts.maxRuntime ?? 60, compute_profile: opts.profile ?? PROFILE },
  });
  assert.equal(res.status, 200, res.text);
  const pid = await driverPid(owner.key, res.body.id, 60000);
  const run = await waitForRun(owner.key, res.body.id, 120000);
  return { run, pid, parent: await warmInstanceOf(owner.key, run.id) };
}

/** The warm instance a run was forked from (the worker's pid of its sandbox), or null when it ran cold. */
async function warmInstanceOf(key: string, runId: string): Promise<number | null> {
  const events = (await call('GET', `/runs/${runId}/events?limit=1000`, { key })).body.items as Array<{ data: Record<string, unknown> }>;
  return (events.find((e) => e.data.pid)?.data.warm_instance as number | undefined) ?? null;
}

/** An output's final value, read from its artifact when it was too large to keep inline. */
async function outputOf(runId: string, name: string, key = owner.key): Promise<any> {
  const value = (await call('GET', `/runs/${runId}/results`, { key })).body.outputs[name];
  if (!value?.artifact_ref) return value;
  return JSON.parse((await downloadArtifact(key, runId, value.artifact_ref.artifact_id)).toString());
}

/** What a process is and waits on, for a failure's message. */
function describeProcess(pid: number): string {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').filter((l) => /^(Name|State|PPid|NSpid):/.test(l)).join('; ');
    return `${status}; cmdline ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')}; wchan ${readFileSync(`/proc/${pid}/wchan`, 'utf8')}`;
  } catch {
    return 'gone';
  }
}

async function assertNothingSurvives(run: { id: string }, pid: number) {
  const deadline = Date.now() + 10000;
  while ((processAlive(pid) || leftProcesses().length || runDirsOf(run.id).length) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.equal(processAlive(pid), false, `the lab process is gone (${describeProcess(pid)})`);
  if (process.getuid?.() === 0) assert.deepEqual(leftProcesses(), [], 'no process of a sandbox user is left but idle warm parents');
  assert.deepEqual(runDirsOf(run.id), [], 'its scratch directory is removed');
}

for (const [how, profile] of [['forked from a warm parent', PROFILE], ['cold', COLD]] as const) test(`from inside the sandbox (${how}): its own unprivileged user, no network, no data directory, no secrets, only its scratch writable`, async () => {
  const { ports, hosts } = serviceTargets();
  const { run, pid, parent } = await runAttack(1, { ports, hosts, paths: [process.env.SILICO_TEST_DATA_DIR!, path.join(process.env.SILICO_TEST_DATA_DIR!, 'local.json')] }, { profile });
  assert.equal(parent !== null, profile === PROFILE, 'warm on its worker, cold on the other');
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  const report = (await outputOf(run.id, 'report')).report;
  if (process.getuid?.() === 0) {
    const { uids } = profile === COLD ? coldWorker : worker;
    assert.ok(report.uid >= uids.base && report.uid < uids.base + uids.count, `a uid of its own, got ${report.uid}`);
    assert.equal(report.gid, report.uid);
  } else assert.equal(report.uid, 65534);
  assert.deepEqual(report.groups, []);
  assert.equal(report.no_new_privs, '1');
  assert.equal(report.cap_eff, '0000000000000000');
  assert.deepEqual(report.interfaces, ['lo'], 'a network namespace with only a loopback');
  for (const [where, r] of Object.entries<any>(report.connect)) assert.equal(r.ok, false, `connected to ${where}`);
  assert.equal(Object.keys(report.connect).length, ports.length * hosts.length);
  assert.equal(report.resolve.ok, false, 'no name resolution');
  for (const [p, r] of Object.entries<any>(report.reads)) assert.equal(r.ok, false, `read ${p}`);
  assert.equal(report.lists[process.env.SILICO_TEST_DATA_DIR!].ok, false, 'the data directory is not there');
  assert.deepEqual(report.lists['/tmp'], { ok: true, value: [] }, 'a private /tmp');
  assert.deepEqual(report.silico_dirs, [], "no other run's scratch");
  assert.deepEqual(Object.fromEntries(Object.entries<any>(report.writes).map(([p, r]) => [p, r.ok])), {
    '/evil': false, '/usr/evil': false, '/opt/silico/driver.py': false, '/input/evil': false, '/scratch/ok': true,
  });
  if (parent) assert.deepEqual(report.processes, [1, 2, report.pid], 'a PID namespace: the sandbox init, its warm parent and the lab');
  else assert.deepEqual(report.processes, [1, 2], 'a PID namespace: the sandbox init and the lab');
  assert.deepEqual(report.lists['/scratch'].value.filter((f: string) => !/^(instance\.sock|invocation-\d+|package|source\.bsilab)$/.test(f)), [], 'a scratch of its own');
  const seen = JSON.stringify(report);
  for (const secret of SECRETS) assert.ok(!seen.includes(secret), 'a worker secret is visible to the lab');
  assert.deepEqual(Object.keys(report.environ).filter((k) => !['PATH', 'LANG', 'PYTHONDONTWRITEBYTECODE', 'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'HOME', 'TMPDIR', 'PWD', 'SILICO_SEED'].includes(k)), []);
  assert.ok(report.visible_files.every((f: string) => /^\/(opt\/silico|input|scratch|root\/\.cache\/silico\/runtime|root\/\.pyenv|etc\/ld\.so\.cache)/.test(f) || f.startsWith(path.dirname(path.dirname(process.env.SILICO_PYTHON!)))),
    `only the runtime, the driver, its input and its scratch are visible: ${report.visible_files.filter((f: string) => !/^\/(opt|input|scratch|root|etc)/.test(f)).slice(0, 5)}`);
  await assertNothingSurvives(run, pid);
});

const ATTACKS: Array<{ name: string; attack: number; target?: () => Promise<{ ports?: number[]; hosts?: string[]; paths?: string[] }>; maxRuntime?: number; profile?: string; status?: string; code: string; message: RegExp }> = [
  { name: "connects to the service's Postgres, MinIO and Temporal", attack: 2, target: async () => serviceTargets(), code: 'lab_error', message: /(ConnectionRefusedError|Network is unreachable|OSError: \[Errno 101\])/ },
  { name: 'resolves and connects to an outside host', attack: 3, code: 'lab_error', message: /gaierror: .*(name resolution|Name or service not known)/ },
  { name: 'reads /etc/shadow', attack: 4, code: 'lab_error', message: /(PermissionError|FileNotFoundError).*\/etc\/shadow/ },
  { name: "reads the service's data directory", attack: 5, target: async () => ({ paths: [process.env.SILICO_TEST_DATA_DIR!] }), code: 'lab_error', message: /FileNotFoundError/ },
  { name: 'writes outside its scratch directory', attack: 7, code: 'lab_error', message: /Read-only file system: '\/opt\/silico\/driver.py'/ },
  { name: 'forks without end', attack: 8, code: 'process_limit_exceeded', message: /BlockingIOError|can't start new thread/ },
  { name: 'allocates 16 GiB', attack: 9, code: 'memory_limit_exceeded', message: /MemoryError/ },
  { name: 'writes 2 GiB to a file', attack: 10, code: 'file_size_limit_exceeded', message: /File too large/ },
  { name: 'prints 200 MB to stdout', attack: 11, code: 'output_limit_exceeded', message: /stdout and stderr/ },
  { name: 'prints 200 MB to stderr', attack: 12, code: 'output_limit_exceeded', message: /stdout and stderr/ },
  { name: 'sleeps past max_runtime_seconds', attack: 13, maxRuntime: 5, status: 'timed_out', code: 'timed_out', message: /max_runtime_seconds \(5\)/ },
  { name: 'dies by a signal', attack: 14, code: 'lab_killed_by_signal', message: /SIGSEGV/ },
  // Its run once stayed `running` with no process left: the reader waited on a destroyed stream.
  { name: "emits one value past the protocol's line bound", attack: 18, code: 'output_limit_exceeded', message: /per message/ },
  // The system-call filter: refused with an ordinary error the lab reports.
  { name: 'ptraces a sibling process', attack: 19, code: 'lab_error', message: /ptrace\(PTRACE_ATTACH\) of a sibling: Operation not permitted/ },
  { name: 'unshares a new user namespace', attack: 20, code: 'lab_error', message: /unshare\(CLONE_NEWUSER\): Operation not permitted/ },
  // clone3's flags cannot be read by a filter: it is "not implemented", and the C library uses clone.
  { name: 'clones into a new user namespace with clone3', attack: 21, code: 'lab_error', message: /clone3\(CLONE_NEWUSER\): Function not implemented/ },
  { name: "joins a new session keyring", attack: 22, code: 'lab_error', message: /keyctl\(KEYCTL_JOIN_SESSION_KEYRING\): Operation not permitted/ },
  { name: 'writes 10,000 files of 1 MiB against a 2 GiB scratch', attack: 23, profile: PROFILE_1G, code: 'disk_limit_exceeded', message: /No space left on device/ },
  { name: 'holds 8 processes of 200 MiB each on a 1 GiB profile', attack: 24, profile: PROFILE_1G, code: 'memory_limit_exceeded', message: /processes together used \d+ MiB of memory, over the compute profile's 1024 MiB/ },
];

for (const a of ATTACKS) {
  test(`a lab that ${a.name} fails with ${a.code}, and nothing of it survives`, async () => {
    const { run, pid } = await runAttack(a.attack, a.target ? await a.target() : {}, { maxRuntime: a.maxRuntime, profile: a.profile });
    assert.equal(run.status, a.status ?? 'failed');
    assert.equal(run.error.code, a.code, run.error.message);
    assert.match(run.error.message, a.message);
    await assertNothingSurvives(run, pid);
  });
}

test("a lab cannot read another run's directories, nor those of the warm parent it forks from, which are alive on the same worker", async () => {
  const other = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: slow, compute_profile: PROFILE, inputs: { seconds_per_window: 0.2, busy_seconds: 30 }, max_runtime_seconds: 120 } });
  assert.equal(other.status, 200, other.text);
  await driverPid(owner.key, other.body.id);
  const [dir] = runDirsOf(other.body.id);
  assert.ok(dir, 'the other run has a directory on the host (its results; its scratch is its sandbox\'s own)');
  // Its warm parent's folder: the one its sandbox shows read-only at /input.
  const instance = await warmInstanceOf(owner.key, other.body.id);
  const bound = readFileSync(`/proc/${instance}/cmdline`, 'utf8').split('\0');
  const parents = [path.dirname(bound[bound.indexOf('/input') - 1]!)];
  assert.match(parents[0]!, /\/silico-parent-/, 'its warm parent has a directory on the host (its lab, shown read-only)');
  const ended: Array<{ run: { id: string }; pid: number }> = [];
  for (const theirs of [dir!, ...parents]) {
    assert.ok(statSync(theirs).isDirectory());
    const { run, pid } = await runAttack(6, { paths: [theirs] });
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'lab_error');
    assert.match(run.error.message, /FileNotFoundError/);
    ended.push({ run, pid });
  }
  await call('POST', `/runs/${other.body.id}/cancel`, { key: owner.key, headers: idem() });
  assert.equal((await waitForRun(owner.key, other.body.id)).status, 'cancelled');
  for (const { run, pid } of ended) await assertNothingSurvives(run, pid);
  // Its folder goes as its process ends, just after its record does (as the attacks' do).
  await until(10_000, async () => (runDirsOf(other.body.id).length === 0 ? true : undefined));
});

test('a run forked from a warm parent finds nothing an earlier one left there: no file in /tmp or the scratch, no process', async () => {
  const left = await runAttack(29);
  assert.equal(left.run.status, 'completed', JSON.stringify(left.run.error));
  assert.ok(left.parent, 'forked from a warm parent');
  const { run, parent } = await runAttack(1);
  assert.equal(parent, left.parent, 'forked from the same parent');
  const report = (await outputOf(run.id, 'report')).report;
  assert.deepEqual(report.lists['/tmp'], { ok: true, value: [] });
  assert.ok(!report.lists['/scratch'].value.includes('left-behind'), `the scratch holds ${report.lists['/scratch'].value}`);
  assert.deepEqual(report.processes, [1, 2, report.pid], 'the detached process the earlier run left is gone');
});

test("a run cannot open its warm parent's memory, nor ask it for a run of its own choosing", async () => {
  const memory = await runAttack(30);
  assert.ok(memory.parent);
  assert.equal(memory.run.status, 'failed');
  assert.equal(memory.run.error.code, 'lab_error');
  assert.match(memory.run.error.message, /PermissionError: .*\/proc\/2\/mem/);
  const rogue = await runAttack(31);
  assert.equal(rogue.parent, memory.parent);
  assert.equal(rogue.run.error?.code, 'lab_error');
  assert.match(rogue.run.error.message, /rogue request not answered/);
  await assertNothingSurvives(rogue.run, rogue.pid);
});

test("another account's runs fork from a parent of their own, which sees no other", async () => {
  const mine = await runAttack(1);
  const other = await newAccount({ usd: 5 });
  const res = await call('POST', '/runs', { key: other.key, headers: idem(), body: { ref: await publishFixtureLab(other, 'hostile-lab'), inputs: { attack: 1, target: { ports: [], hosts: [], paths: [] } }, max_runtime_seconds: 60, compute_profile: PROFILE } });
  assert.equal(res.status, 200, res.text);
  const run = await waitForRun(other.key, res.body.id, 120000);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  const theirs = await warmInstanceOf(other.key, run.id);
  assert.ok(theirs && mine.parent && theirs !== mine.parent, `parents ${theirs} and ${mine.parent}`);
  const report = (await outputOf(run.id, 'report', other.key)).report;
  assert.notEqual(report.uid, (await outputOf(mine.run.id, 'report')).report.uid, 'a sandbox user of its own');
  assert.deepEqual(report.processes, [1, 2, report.pid], 'only its own parent and init');
});

test('the worker serves the next run after every attack', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/sir-epidemic@1.0.0', compute_profile: PROFILE, inputs: {} } });
  const run = await waitForRun(owner.key, res.body.id, 120000);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
});

test('without bubblewrap a lab does not run: sandbox_unavailable, nothing charged; only the explicit opt-out runs it unsandboxed', async () => {
  const worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: 'test-no-bwrap', SILICO_SANDBOX_BWRAP: '/nonexistent/bwrap' });
  try {
    const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: hostile, compute_profile: 'test-no-bwrap', inputs: { attack: 0, target: { ports: [], hosts: [], paths: [] } }, max_runtime_seconds: 60 } });
    assert.equal(res.status, 200, res.text);
    const run = await waitForRun(owner.key, res.body.id, 120000);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'sandbox_unavailable');
    assert.match(run.error.message, /bubblewrap/);
    assert.equal(run.credits_settled, 0);
  } finally {
    await worker.stop();
  }
  const unsafe = await spawnWorker({ SILICO_COMPUTE_PROFILES: 'test-unsafe', SILICO_SANDBOX_BWRAP: '/nonexistent/bwrap', SILICO_UNSAFE_NO_SANDBOX: '1' });
  try {
    const { run } = await runAttack(1, { paths: [process.env.SILICO_TEST_DATA_DIR!] }, { profile: 'test-unsafe' });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const report = (await outputOf(run.id, 'report')).report;
    assert.equal(report.uid, process.getuid!(), 'unsandboxed: the worker\'s own user');
    assert.equal(report.lists[process.env.SILICO_TEST_DATA_DIR!].ok, true, 'and the data directory in reach: why it is development only');
  } finally {
    await unsafe.stop();
  }
});

test('labs are packed in the sandbox too: the archive is written by a sandbox user, and without bubblewrap nothing is packed', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-pack-test-'));
  try {
    const lab = path.join(REPO_ROOT, 'test/fixtures/labs/slow-lab');
    const identity = packerIdentity(YAML.parse(readFileSync(path.join(lab, 'lab.yaml'), 'utf8')), { package: 'test/slow-lab', version: '1.0.0' });
    const settings = sandboxSettings();
    const packed = await packLab(createSandbox({ ...settings, uidBase: 62100, uidCount: 4 }), process.env.SILICO_PYTHON!, lab, path.join(dir, 'pack'), identity);
    assert.match(packed.package_sha256, /^[0-9a-f]{64}$/);
    assert.ok(packed.files.some((f) => f.path.endsWith('lab.yaml')));
    if (process.getuid?.() === 0) {
      const owner = statSync(packed.archive).uid;
      assert.ok(owner >= 62100 && owner < 62104, `the archive was written by uid ${owner}, the packer's own sandbox user`);
    }
    await assert.rejects(packLab(createSandbox({ ...settings, bwrap: '/nonexistent/bwrap' }), process.env.SILICO_PYTHON!, lab, path.join(dir, 'again'), identity), SandboxUnavailable);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
