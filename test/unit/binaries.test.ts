import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { BINARIES, cachedPath, resolveBinary, resolveSpec, type BinarySpec } from '../../deploy/local/binaries.ts';
import { downloadRelease, thisPlatform } from '../../deploy/local/releases.ts';
import { microsToUsd, usdToMicros } from '../../storage/ledger.ts';

async function exe(dir: string, name: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const p = path.join(dir, name);
  await writeFile(p, '#!/bin/sh\n', { mode: 0o755 });
  return p;
}

test('binaries resolve from the env var, then PATH, then the per-user cache', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'bins-'));
  const cache = path.join(root, 'cache');
  const env = { PATH: path.join(root, 'empty'), SILICO_CACHE_DIR: cache };
  const noLog = () => undefined;
  const cached = cachedPath('minio', env);
  assert.equal(cached, path.join(cache, 'bin', `minio-${BINARIES.minio.version}`));
  await exe(path.dirname(cached), path.basename(cached));
  assert.equal(await resolveBinary('minio', noLog, env), cached);
  const onPath = await exe(path.join(root, 'path'), 'minio');
  assert.equal(await resolveBinary('minio', noLog, { ...env, PATH: path.join(root, 'path') }), onPath);
  const explicit = await exe(path.join(root, 'explicit'), 'my-minio');
  assert.equal(await resolveBinary('minio', noLog, { ...env, PATH: path.join(root, 'path'), MINIO_BIN: explicit }), explicit);
  await assert.rejects(resolveBinary('minio', noLog, { ...env, MINIO_BIN: path.join(root, 'missing') }), /does not exist/);
});

test('without Go and without a binary the message says why it was not downloaded and how to install it', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'bins-'));
  const env = { PATH: path.join(root, 'empty'), SILICO_CACHE_DIR: path.join(root, 'cache'), GO_BIN: '', SILICO_RELEASE_MIRROR: 'http://127.0.0.1:1' };
  await assert.rejects(resolveBinary('temporal', () => undefined, env), /not downloaded: its release host could not be reached \(http:\/\/127\.0\.0\.1:1\/temporalio\/cli\/releases\/download\/v1\.5\.1\/temporal_cli_1\.5\.1_[a-z]+_[a-z0-9]+\.tar\.gz: [^)]+\)\. Install Go[^]*go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1/);
});

// The first start's two paths, against a local server standing in for the release host
// (SILICO_RELEASE_MIRROR): the official archive when its SHA-256 is the pinned one, else
// the Go module built (a stand-in `go` here), saying which and why.
const platform = thisPlatform()!;
const archiveDir = await mkdtemp(path.join(tmpdir(), 'release-'));
await writeFile(path.join(archiveDir, 'fake-tool'), '#!/bin/sh\necho released\n', { mode: 0o755 });
await writeFile(path.join(archiveDir, 'LICENSE'), 'terms\n');
await tar.c({ gzip: true, file: path.join(archiveDir, 'fake.tar.gz'), cwd: archiveDir }, ['fake-tool', 'LICENSE']);
const archive = await readFile(path.join(archiveDir, 'fake.tar.gz'));
const archiveSha = createHash('sha256').update(archive).digest('hex');
const [os_, arch] = platform.split('-');
const served: string[] = [];
const host = createServer((req, res) => {
  served.push(req.url!);
  if (req.url === `/acme/fake/releases/download/v1.0.0/fake_${os_}_${arch}.tar.gz`) return res.end(archive);
  // The same archive, its answer at once and its bytes over 600 ms.
  if (req.url === `/acme/slow/releases/download/v1.0.0/fake_${os_}_${arch}.tar.gz`) {
    res.writeHead(200, { 'Content-Length': archive.length });
    const half = Math.floor(archive.length / 2);
    res.write(archive.subarray(0, half));
    setTimeout(() => res.end(archive.subarray(half)), 600);
    return;
  }
  res.statusCode = 404;
  res.end();
});
await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
const mirror = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
after(() => host.close());

const spec = (sha256: string): BinarySpec => ({
  module: 'example.com/fake-tool', version: 'v1.0.0', envVar: 'FAKE_TOOL_BIN',
  release: { url: 'https://github.com/acme/fake/releases/download/v1.0.0/fake_{os}_{arch}.tar.gz', member: 'fake-tool', sha256: { [platform]: sha256 } },
});

/** A stand-in Go toolchain: `go install` writes a binary that says it was built. */
async function fakeGo(root: string): Promise<string> {
  const go = path.join(root, 'go');
  await writeFile(go, '#!/bin/sh\nprintf \'#!/bin/sh\\necho built\\n\' > "$GOBIN/fake-tool"\n/bin/chmod +x "$GOBIN/fake-tool"\n', { mode: 0o755 });
  return go;
}

async function resolveWith(sha256: string, mirrorUrl: string): Promise<{ binary: string; log: string[] }> {
  const root = await mkdtemp(path.join(tmpdir(), 'bins-'));
  const log: string[] = [];
  const env = { PATH: path.join(root, 'empty'), SILICO_CACHE_DIR: path.join(root, 'cache'), GO_BIN: await fakeGo(root), SILICO_RELEASE_MIRROR: mirrorUrl };
  const binary = await resolveSpec('fake-tool', spec(sha256), (l) => log.push(l), env);
  return { binary, log };
}

test('the release whose archive has the pinned SHA-256 is downloaded, and only its binary kept', async () => {
  const { binary, log } = await resolveWith(archiveSha, mirror);
  assert.equal(await readFile(binary, 'utf8'), '#!/bin/sh\necho released\n');
  assert.deepEqual(await readdir(path.dirname(binary)), ['fake-tool-v1.0.0'], 'nothing else of the archive, nor of the download, in the cache');
  assert.match(log.join('\n'), new RegExp(`^downloaded fake-tool v1\\.0\\.0, its official release for ${platform} \\(SHA-256 verified\\), in \\d+\\.\\d s -> `));
  assert.deepEqual(served.at(-1), `/acme/fake/releases/download/v1.0.0/fake_${os_}_${arch}.tar.gz`);
});

test('an archive whose SHA-256 differs is refused, and the binary built from its module instead, saying so', async () => {
  const wrong = 'f'.repeat(64);
  const { binary, log } = await resolveWith(wrong, mirror);
  assert.equal(await readFile(binary, 'utf8'), '#!/bin/sh\necho built\n');
  assert.match(log[0]!, new RegExp(`^building fake-tool from its Go module, not downloading it: the archive from ${mirror}/acme/fake/releases/download/v1\\.0\\.0/fake_${os_}_${arch}\\.tar\\.gz has SHA-256 ${archiveSha}, not the pinned ${wrong}: refused$`));
});

test('a release host that cannot be reached, or has no such release, leaves the build from source, saying why', async () => {
  const unreachable = await resolveWith(archiveSha, 'http://127.0.0.1:1');
  assert.equal(await readFile(unreachable.binary, 'utf8'), '#!/bin/sh\necho built\n');
  assert.match(unreachable.log[0]!, /^building fake-tool from its Go module, not downloading it: its release host could not be reached \(http:\/\/127\.0\.0\.1:1\/acme\/fake\/releases/);
  const missing = await resolveWith(archiveSha, `${mirror}/elsewhere`);
  assert.match(missing.log[0]!, /^building fake-tool from its Go module, not downloading it: its release host answered 404 for /);
  // A platform with no checksum pinned is never downloaded.
  const root = await mkdtemp(path.join(tmpdir(), 'bins-'));
  const log: string[] = [];
  await resolveSpec('fake-tool', { ...spec(archiveSha), release: { ...spec(archiveSha).release!, sha256: {} } }, (l) => log.push(l), { PATH: '', SILICO_CACHE_DIR: path.join(root, 'cache'), GO_BIN: await fakeGo(root), SILICO_RELEASE_MIRROR: mirror });
  assert.equal(log[0], `building fake-tool from its Go module, not downloading it: no SHA-256 of its release for ${platform} is pinned here`);
});

test('money is whole micro-dollars inside and dollars outside', () => {
  assert.equal(usdToMicros(100), 100_000_000);
  assert.equal(usdToMicros(0.0000105), 11);
  assert.equal(microsToUsd(10), 0.00001);
  assert.equal(microsToUsd(usdToMicros(12.345678)), 12.345678);
});

test('an archive that answers at once may take longer than the answer\'s bound to arrive, never longer than the download\'s', async () => {
  const slow = { ...spec(archiveSha).release!, url: 'https://github.com/acme/slow/releases/download/v1.0.0/fake_{os}_{arch}.tar.gz' };
  const root = await mkdtemp(path.join(tmpdir(), 'bins-'));
  const env = { SILICO_RELEASE_MIRROR: mirror };
  assert.equal(await downloadRelease(slow, platform, path.join(root, 'a'), env, { answerMs: 200, downloadMs: 5000 }), null);
  assert.equal(await readFile(path.join(root, 'a'), 'utf8'), '#!/bin/sh\necho released\n');
  assert.match((await downloadRelease(slow, platform, path.join(root, 'b'), env, { answerMs: 2000, downloadMs: 200 }))!, /^its release could not be downloaded from .* \(not downloaded within 0\.2 s\)$/);
});
