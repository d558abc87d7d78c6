/**
 * `npm run bench:files`: file transfer through the API against raw S3 to the same MinIO.
 *
 * A 1 GiB file (BENCH_FILE_MIB) is uploaded with `POST /v1/files` (multipart, streamed
 * from disk) and downloaded with `GET /v1/files/{id}/content`; the baseline moves the same
 * bytes with @aws-sdk (lib-storage multipart upload, GetObject stream) to the same bucket.
 * It checks the stored sha256 against `sha256sum` of the source and the api process's
 * peak RSS growth (VmHWM) during the upload (goal < 64 MiB), and prints the throughput
 * ratio last (goal ≥ 0.7).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, createWriteStream, openAsBlob, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import getPort from 'get-port';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

const MIB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_FILE_MIB ?? 1024) * MIB;

const peakRssMiB = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-files-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  let api: ReturnType<typeof spawn> | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({ dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`), serviceEnv: { LOG_LEVEL: 'warn' } });
    // Our own api process on this stack, so its peak RSS is ours alone to read.
    const port = await getPort();
    api = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'api/server.ts')], {
      cwd: REPO_ROOT, stdio: 'ignore',
      env: { ...process.env, ...stack.env, SILICO_API_PORT: String(port), SILICO_MAX_UPLOAD_BYTES: String(SIZE + MIB), LOG_LEVEL: 'warn' },
    });
    const base = `http://127.0.0.1:${port}/v1`;
    for (let i = 0; ; i++) {
      try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break; } catch { /* starting */ }
      if (i > 150) throw new Error('api did not start');
      await new Promise((r) => setTimeout(r, 200));
    }
    const source = path.join(dir, 'source.bin');
    await pipeline(Readable.from((function* () { const chunk = Buffer.alloc(MIB); for (let i = 0; i < SIZE / MIB; i++) { chunk.fill(i % 251); chunk.writeUInt32LE(i, 0); yield chunk; } })()), createWriteStream(source));
    const expected = execFileSync('sha256sum', [source]).toString().split(' ')[0];
    const auth = { Authorization: `Bearer ${stack.info.api_key}` };

    const rssBefore = peakRssMiB(api.pid!);
    let t = performance.now();
    const form = new FormData();
    form.append('file', await openAsBlob(source), 'source.bin');
    const up = await fetch(`${base}/files`, { method: 'POST', headers: auth, body: form });
    const file = await up.json() as any;
    const oursUp = SIZE / MIB / ((performance.now() - t) / 1000);
    if (up.status !== 200) throw new Error(`upload: ${up.status} ${JSON.stringify(file)}`);
    const rssGrowth = peakRssMiB(api.pid!) - rssBefore;

    t = performance.now();
    const down = await fetch(`${base}/files/${file.file_id}/content`, { headers: auth });
    let got = 0;
    for await (const c of down.body as unknown as AsyncIterable<Uint8Array>) got += c.length;
    const oursDown = SIZE / MIB / ((performance.now() - t) / 1000);
    if (got !== SIZE) throw new Error(`downloaded ${got} bytes`);

    const s3 = new S3Client({ endpoint: stack.env.S3_ENDPOINT, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: stack.env.S3_ACCESS_KEY_ID!, secretAccessKey: stack.env.S3_SECRET_ACCESS_KEY! } });
    t = performance.now();
    await new Upload({ client: s3, params: { Bucket: 'silico', Key: 'bench/raw.bin', Body: createReadStream(source) }, queueSize: 2, partSize: 8 * MIB }).done();
    const rawUp = SIZE / MIB / ((performance.now() - t) / 1000);
    t = performance.now();
    const obj = await s3.send(new GetObjectCommand({ Bucket: 'silico', Key: 'bench/raw.bin' }));
    let rawGot = 0;
    for await (const c of obj.Body as AsyncIterable<Uint8Array>) rawGot += c.length;
    const rawDown = SIZE / MIB / ((performance.now() - t) / 1000);
    if (rawGot !== SIZE) throw new Error('raw download size');

    console.log(`${SIZE / MIB} MiB file; stored sha256 ${file.sha256 === expected ? 'equals' : 'DIFFERS FROM'} sha256sum of the source`);
    console.log(`api peak RSS growth during the upload: ${rssGrowth.toFixed(1)} MiB (goal < 64)`);
    console.log(`upload    ours ${oursUp.toFixed(0).padStart(5)} MiB/s   raw S3 ${rawUp.toFixed(0).padStart(5)} MiB/s   ratio ${(oursUp / rawUp).toFixed(2)}`);
    console.log(`download  ours ${oursDown.toFixed(0).padStart(5)} MiB/s   raw S3 ${rawDown.toFixed(0).padStart(5)} MiB/s   ratio ${(oursDown / rawDown).toFixed(2)}`);
    if (file.sha256 !== expected) process.exitCode = 1;
    console.log(`throughput ratio (ours/raw, worse of upload and download): ${Math.min(oursUp / rawUp, oursDown / rawDown).toFixed(2)}  goal >= 0.7`);
  } finally {
    api?.kill('SIGTERM');
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
