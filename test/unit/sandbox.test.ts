import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSandbox, SandboxUnavailable, type SandboxSpec } from '../../activities/execution/sandbox.ts';
import { outcomeError, signalError } from '../../activities/execution/labProcess.ts';

const settings = { bwrap: 'bwrap', unsafeNoSandbox: false, uidBase: 61000, uidCount: 2, filterPython: '/usr/bin/python3' };
const limits = { memoryBytes: 1 << 30, cpuSeconds: 10, processes: 8, openFiles: 64, fileSizeBytes: 1 << 20, tmpBytes: 1 << 20 };
async function spec(): Promise<SandboxSpec> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sandbox-unit-'));
  return { python: process.execPath, script: '/work/x.py', args: (p) => [p.input, p.scratch], input: dir, scratch: path.join(dir, 'scratch'), limits, env: { PATH: '/usr/bin' } };
}

test('without bubblewrap the sandbox is unavailable: it never falls back to running unsandboxed', async () => {
  const sandbox = createSandbox({ ...settings, bwrap: '/nonexistent/bwrap' });
  await assert.rejects(sandbox.command(await spec()), (err) => err instanceof SandboxUnavailable && err.code === 'sandbox_unavailable' && /SILICO_UNSAFE_NO_SANDBOX/.test(err.message));
});

test('a worker that cannot compile the system-call filter runs no lab, and says what to install', async () => {
  await assert.rejects(createSandbox({ ...settings, filterPython: '/nonexistent/python3' }).command(await spec()), (err) => err instanceof SandboxUnavailable && /python3-seccomp/.test(err.message));
});

test('the opt-out runs the program under its limits only, with host paths, and says it is unsafe', async () => {
  const s = await spec();
  const cmd = await createSandbox({ ...settings, bwrap: '/nonexistent/bwrap', unsafeNoSandbox: true }).command(s);
  assert.equal(cmd.unsafe, true);
  assert.equal(cmd.command, '/usr/bin/prlimit');
  assert.deepEqual(cmd.args.slice(-5), [process.execPath, '-u', '/work/x.py', s.input, s.scratch]);
  assert.ok(cmd.args.includes('--nproc=8'));
  assert.equal(cmd.env.HOME, s.scratch);
});

// npm test's stack installs bubblewrap (or refuses to start) before any test runs.
test('the sandbox is deny-by-default: namespaces, read-only binds, limits, then an unprivileged uid without privileges', async () => {
  const s = await spec();
  const cmd = await createSandbox(settings).command(s);
  const a = cmd.args.join(' ');
  for (const flag of ['--unshare-pid', '--unshare-net', '--unshare-ipc', '--die-with-parent', '--new-session', '--clearenv']) assert.ok(a.includes(flag), flag);
  assert.ok(a.includes(`--ro-bind ${s.input} /input`));
  assert.ok(a.includes(`--bind ${s.scratch} /scratch`));
  assert.ok(a.includes('--nproc=8') && a.includes('--as=1073741824') && a.includes('--fsize=1048576') && a.includes('--core=0'));
  assert.ok(a.includes('--no-new-privs'));
  assert.deepEqual(cmd.args.slice(-2), ['/input', '/scratch'], 'the program sees its own paths');
  assert.deepEqual(cmd.env, {}, 'bubblewrap starts with nothing of the worker\'s environment');
  assert.ok(a.includes('--seccomp 5') && statSync(cmd.filter!).size > 0, 'a compiled system-call filter, handed over on fd 5');
  const own = await createSandbox(settings).command({ ...s, limits: { ...limits, scratchBytes: 1 << 24 } });
  assert.ok(own.args.join(' ').includes('--perms 01777 --size 16777216 --tmpfs /scratch') && !own.args.join(' ').includes(`--bind ${s.scratch}`), 'a bounded scratch of its own');
  own.release();
  if (process.getuid?.() === 0) {
    assert.ok(a.includes('--reuid 61000 --regid 61000 --clear-groups'));
    const second = await createSandbox(settings).command(await spec());
    assert.ok(second.args.join(' ').includes('--reuid 61000'), 'another worker process has its own pool');
    const sandbox = createSandbox(settings);
    const [x, y] = [await sandbox.command(await spec()), await sandbox.command(await spec())];
    assert.ok(x.args.join(' ').includes('--reuid 61000') && y.args.join(' ').includes('--reuid 61001'), 'concurrent sandboxes never share a uid');
    await assert.rejects(sandbox.command(await spec()), SandboxUnavailable, 'the pool is exhausted, not shared');
    x.release();
    assert.ok((await sandbox.command(await spec())).args.join(' ').includes('--reuid 61000'), 'a released uid is handed out again');
  }
});

test('run errors say why a lab stopped', () => {
  assert.deepEqual(signalError(128 + 11), { code: 'lab_killed_by_signal', message: 'The lab was killed by SIGSEGV.' });
  assert.equal(signalError(128 + 24)?.code, 'cpu_time_limit_exceeded');
  assert.equal(signalError(2), null);
  const base = { error: null, reported: null, exitCode: 0, result: { status: 'completed', cpu_seconds: 1 }, truncated: false, stderrTail: [], wallSeconds: 1, cancelled: false };
  assert.equal(outcomeError(base), null);
  assert.deepEqual(outcomeError({ ...base, reported: { code: 'memory_limit_exceeded', message: 'MemoryError' }, exitCode: 2 }), { code: 'memory_limit_exceeded', message: 'MemoryError' });
  assert.equal(outcomeError({ ...base, error: { code: 'timed_out', message: '' }, reported: { code: 'lab_error', message: '' } })?.code, 'timed_out', 'our stop wins over what the lab said');
  assert.deepEqual(outcomeError({ ...base, result: null, exitCode: 3, stderrTail: ['boom'] }), { code: 'lab_exited', message: 'The lab exited with code 3. Its last stderr lines:\nboom' });
  assert.equal(outcomeError({ ...base, result: null, exitCode: 0 })?.code, 'protocol_error', 'an exit without a result');
  assert.equal(outcomeError({ ...base, result: null, exitCode: 0, truncated: true })?.code, 'protocol_error', 'a message cut off');
  assert.equal(outcomeError({ ...base, result: null, exitCode: 128 + 9, truncated: true })?.code, 'lab_killed_by_signal', 'a kill mid-write says the signal');
});
