import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BINARIES, cachedPath, resolveBinary } from '../../deploy/local/binaries.ts';
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

test('without Go and without a binary the message says how to install it', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'bins-'));
  const env = { PATH: path.join(root, 'empty'), SILICO_CACHE_DIR: path.join(root, 'cache'), GO_BIN: '' };
  await assert.rejects(resolveBinary('temporal', () => undefined, env), /go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1/);
});

test('money is whole micro-dollars inside and dollars outside', () => {
  assert.equal(usdToMicros(100), 100_000_000);
  assert.equal(usdToMicros(0.0000105), 11);
  assert.equal(microsToUsd(10), 0.00001);
  assert.equal(microsToUsd(usdToMicros(12.345678)), 12.345678);
});
