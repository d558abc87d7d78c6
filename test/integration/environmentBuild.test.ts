import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeTestDb, testDb, testObjects, testSandbox } from '../helpers.ts';
import { loadConfig } from '../../kernel/config.ts';
import { runLabProcess } from '../../activities/execution/labProcess.ts';
import { indexHosts, startIndexProxy } from '../../activities/environments/indexProxy.ts';
import { resolveLock } from '../../api/runs/resolveLock.ts';
import { ensureEnvironment } from '../../activities/environments/build.ts';
import { createSharedEnvironments, layoutDigest } from '../../activities/environments/shared.ts';

const RELAY = fileURLToPath(new URL('../../activities/environments/buildRelay.py', import.meta.url));
const settings = loadConfig().environments;
const base = settings.pythons['3.11']!;
after(closeTestDb);

/** Runs `commands` as a build would: sandboxed, its only way out the index proxy. */
async function inBuildSandbox(commands: string[][]) {
  const work = await mkdtemp(path.join(tmpdir(), 'silico-build-test-'));
  const proxy = await startIndexProxy(path.join(work, 'index.sock'), indexHosts(settings.indexUrl));
  try {
    const outcome = await runLabProcess(testSandbox(), {
      python: base, script: RELAY, input: work, scratch: path.join(work, 'scratch'),
      args: () => ['/run/silico/index-proxy.sock', JSON.stringify(commands)],
      limits: { memoryBytes: 4 * 2 ** 30, cpuSeconds: 60, processes: 64, openFiles: 256, fileSizeBytes: 1 << 20, tmpBytes: 1 << 20 },
      env: { PATH: '/usr/bin:/bin', ...(process.env.SSL_CERT_FILE ? { SSL_CERT_FILE: process.env.SSL_CERT_FILE } : {}) },
      binds: { ro: ['/etc/ssl'] }, socket: { host: path.join(work, 'index.sock'), inside: '/run/silico/index-proxy.sock' },
    }, '', { wallSeconds: 60 }, { onMessage: () => undefined });
    return { exitCode: outcome.exitCode, stderr: outcome.stderrTail.join('\n'), refused: [...proxy.refused] };
  } finally {
    await proxy.close();
    await rm(work, { recursive: true, force: true });
  }
}

const fetchVia = (url: string) => [base, '-c', `import urllib.request; urllib.request.urlopen(${JSON.stringify(url)}, timeout=20).read(100)`];

test('a build\'s sandbox has no network of its own; through its proxy it reaches the package index and nothing else', { timeout: 120_000 }, async () => {
  const direct = await inBuildSandbox([[base, '-c', 'import socket; socket.create_connection(("pypi.org", 443), timeout=5)']]);
  assert.notEqual(direct.exitCode, 0, 'a direct connection fails: no network namespace of its own');
  assert.match(direct.stderr, /(Temporary failure in name resolution|Network is unreachable|Name or service not known)/);

  const index = await inBuildSandbox([fetchVia(`${settings.indexUrl.replace(/\/$/, '')}/numpy/`)]);
  assert.equal(index.exitCode, 0, index.stderr);
  assert.deepEqual(index.refused, []);

  const elsewhere = await inBuildSandbox([fetchVia('https://example.com/')]);
  assert.notEqual(elsewhere.exitCode, 0);
  assert.deepEqual(elsewhere.refused, ['CONNECT example.com:443']);
});

test('an environment is built sandboxed from its hashed lock into its digest\'s folder, readable by labs and owned by nobody they run as', { timeout: 300_000 }, async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-envs-'));
  try {
    const own = { ...settings, dir };
    const resolved = await resolveLock(own, { python: '3.11', requirements: ['biosimulant==0.0.40', 'numpy', 'pyyaml'] });
    assert.ok('lock' in resolved, JSON.stringify(resolved));
    assert.match(resolved.lock.text, /^# python 3\.11\n/);
    assert.match(resolved.lock.text, /--hash=sha256:[0-9a-f]{64}/);
    let builds = 0;
    const environments = createSharedEnvironments(testObjects(), testDb());
    let published!: () => void;
    const sharing = new Promise<void>((resolve, reject) => { published = resolve; setTimeout(() => reject(new Error('not shared within 120 s')), 120_000).unref(); });
    const python = await ensureEnvironment(own, testSandbox(), { ...resolved.lock, lock: resolved.lock.text }, () => { builds += 1; }, {
      environments, onPublished: (err) => { assert.ifError(err); published(); },
    });
    assert.equal(python, path.join(dir, resolved.lock.sha256, 'bin', 'python'));
    assert.equal(builds, 1);
    await sharing;
    const info = await stat(path.join(dir, resolved.lock.sha256));
    assert.equal(info.uid, process.getuid!(), 'handed back to the service after the build');
    assert.equal(info.mode & 0o777, 0o755);
    assert.deepEqual((await readdir(dir)).filter((e) => e !== '.uv-cache'), [resolved.lock.sha256], 'no work folder left behind');
    // Built once: the second ask finds it.
    await ensureEnvironment(own, testSandbox(), { ...resolved.lock, lock: resolved.lock.text }, () => { builds += 1; });
    assert.equal(builds, 1);
    // A worker of the same layout that lacks it takes it from the object store, checked, instead of building it.
    await rm(path.join(dir, resolved.lock.sha256), { recursive: true, force: true });
    let fetched = 0;
    const taken = await ensureEnvironment(own, testSandbox(), { ...resolved.lock, lock: resolved.lock.text }, () => { builds += 1; }, { environments, onFetched: () => { fetched += 1; } });
    assert.equal(taken, python);
    assert.deepEqual([builds, fetched], [1, 1], 'taken, not built');
    assert.equal((await stat(path.join(dir, resolved.lock.sha256))).uid, process.getuid!());
    const check = await promisify(execFile)(taken, ['-c', 'import biosim, numpy, yaml; print("ok")']);
    assert.equal(check.stdout.trim(), 'ok');
    // An archive whose bytes are not the ones recorded is not taken: the worker builds.
    const key = `environments/${resolved.lock.sha256}/${layoutDigest(dir, settings.pythons['3.11']!)}.sha256`;
    await testObjects().putObject(key, Buffer.from(`${'0'.repeat(64)}\n`), 'text/plain');
    await rm(path.join(dir, resolved.lock.sha256), { recursive: true, force: true });
    await ensureEnvironment(own, testSandbox(), { ...resolved.lock, lock: resolved.lock.text }, () => { builds += 1; }, { environments, onFetched: () => { fetched += 1; } });
    assert.deepEqual([builds, fetched], [2, 1], 'built again, not taken');
    // A build is bounded in disk as well: past its bound it fails and leaves nothing.
    const small = { ...own, dir: path.join(dir, 'small'), buildMaxBytes: 5 << 20 };
    await assert.rejects(ensureEnvironment(small, testSandbox(), { ...resolved.lock, lock: resolved.lock.text }), /the build wrote more than 5242880 bytes/);
    assert.deepEqual(await readdir(small.dir), [], 'nothing of it is left');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
