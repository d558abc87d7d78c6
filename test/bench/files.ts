/**
 * `npm run bench:files`: file transfer through the API against raw S3 to the same MinIO.
 *
 * A 1 GiB file (BENCH_FILE_MIB) is uploaded with `POST /v1/files` (multipart, streamed
 * from disk by Node's http client) and downloaded with `GET /v1/files/{id}/content`; the baseline moves the same
 * bytes with @aws-sdk (lib-storage multipart upload, GetObject stream) to the same bucket,
 * through the api's own S3 client and part settings (storage/objects.ts), so the baseline is
 * the strongest raw transfer we know and the ratio is the cost of the API path alone.
 * BENCH_ROUNDS rounds (3) alternate which target goes first; medians are reported. It
 * checks every stored sha256 against `sha256sum` of the source and the api process's peak
 * RSS growth (VmHWM) over all uploads (goal < 64 MiB), and prints the throughput ratio last
 * (goal ≥ 0.7). The presigned download (`?redirect=1`: the api's 307, then the bytes
 * straight from MinIO, hashed by the client as the SDK does) is measured in the same rounds
 * against the same raw download; its ratio is printed beside the relay's (goal ≥ 0.9).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { request as undiciRequest } from 'undici';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { get as httpGet, request as httpRequest } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import getPort from 'get-port';
import MultipartForm from 'form-data';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { SERVICE_PROCESS_ENV, serviceArgs } from '../../deploy/local/serviceProcess.ts';
import { createObjectStore } from '../../storage/objects.ts';
import { cpuSample, cpuPerUnit, type CpuSample } from './cpu.ts';
import { median } from './stats.ts';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const SIZE = Number(process.env.BENCH_FILE_MIB ?? 1024) * MIB;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const peakRssMiB = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-files-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  let api: ReturnType<typeof spawn> | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({ dataDir: dir, mode: 'test', exitOnSignal: true, ports, sink: (s, l) => log.write(`[${s}] ${l}\n`), serviceEnv: { LOG_LEVEL: 'warn' } });
    // Our own api process on this stack, so its peak RSS is ours alone to read.
    const port = await getPort();
    api = spawn(process.execPath, serviceArgs('deploy/api.ts'), {
      cwd: REPO_ROOT, stdio: 'ignore',
      env: { ...process.env, ...SERVICE_PROCESS_ENV, ...stack.env, SILICO_API_PORT: String(port), SILICO_MAX_UPLOAD_BYTES: String(SIZE + MIB), LOG_LEVEL: 'warn' },
    });
    const base = `http://127.0.0.1:${port}/v1`;
    for (let i = 0; ; i++) {
      try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break; } catch { /* starting */ }
      if (i > 150) throw new Error('api did not start');
      await new Promise((r) => setTimeout(r, 200));
    }
    const source = path.join(dir, 'source.bin');
    await pipeline(Readable.from((function* () { const chunk = Buffer.alloc(MIB); for (let i = 0; i < SIZE / MIB; i++) { chunk.fill(i % 251); chunk.writeUInt32LE(i, 0); yield chunk; } })()), createWriteStream(source));
    const expected = execFileSync('sha256sum', [source]).toString().split(' ')[0]!;
    const auth = { Authorization: `Bearer ${stack.info.api_key}` };

    const raw = createObjectStore({ endpoint: stack.env.S3_ENDPOINT!, region: 'us-east-1', accessKeyId: stack.env.S3_ACCESS_KEY_ID!, secretAccessKey: stack.env.S3_SECRET_ACCESS_KEY!, bucket: stack.env.S3_BUCKET! });
    const mibps = (t: number) => SIZE / MIB / ((performance.now() - t) / 1000);
    const drain = async (body: AsyncIterable<Uint8Array>) => {
      let n = 0;
      for await (const c of body) n += c.length;
      if (n !== SIZE) throw new Error(`downloaded ${n} bytes`);
    };
    // Our client is Node's http module, as the S3 SDK's is: fetch with a FormData blob costs
    // the client several times the CPU (web-stream copies of every chunk) and, on 2 cores,
    // that would be measured as our api's cost. form-data frames the multipart body.
    const oursUpload = () => new Promise<{ file_id: string; sha256: string }>((resolve, reject) => {
      const form = new MultipartForm();
      form.append('file', createReadStream(source, { highWaterMark: MIB }), { filename: 'source.bin', knownLength: SIZE });
      const req = httpRequest(`${base}/files`, { method: 'POST', headers: { ...auth, ...form.getHeaders(), 'Content-Length': form.getLengthSync() } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`upload: ${res.statusCode} ${text}`));
          else resolve(JSON.parse(text));
        });
      });
      req.on('error', reject);
      form.pipe(req);
    });
    const oursDownload = (fileId: string) => new Promise<AsyncIterable<Uint8Array>>((resolve, reject) => {
      httpGet(`${base}/files/${fileId}/content`, { headers: auth }, resolve).on('error', reject);
    });
    /** The presigned path: the api's 307, then the store's bytes by the URL it gave, hashed while they stream (or only drained, `hashed` false). */
    const presignedDownload = async (fileId: string, hashed = true): Promise<string> => {
      const location = await new Promise<string>((resolve, reject) => {
        httpGet(`${base}/files/${fileId}/content?redirect=1`, { headers: auth }, (res) => {
          res.resume();
          if (res.statusCode !== 307 || !res.headers.location) reject(new Error(`redirect: ${res.statusCode}`));
          else resolve(res.headers.location);
        }).on('error', reject);
      });
      // undici, the client the raw side's S3 SDK uses (storage/objects.ts), so the transports compare.
      const { body, statusCode } = await undiciRequest(location);
      if (statusCode !== 200) throw new Error(`presigned GET: ${statusCode}`);
      const hash = createHash('sha256');
      let n = 0;
      for await (const c of body) {
        if (hashed) hash.update(c);
        n += c.length;
      }
      if (n !== SIZE) throw new Error(`downloaded ${n} bytes`);
      return hash.digest('hex');
    };

    // CPU ms per GiB moved, by process (the bench process is the client of both targets).
    const sample = (): CpuSample => cpuSample(stack!.supervisor, { 'api (bench)': api!.pid! });
    const cpu = { oursUp: [] as string[], rawUp: [] as string[], oursDown: [] as string[], rawDown: [] as string[], presigned: [] as string[] };
    const rssBefore = peakRssMiB(api.pid!);
    const rows: Array<{ oursUp: number; rawUp: number; oursDown: number; rawDown: number; presignedDown: number; presignedBytes: number }> = [];
    const digests = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which target goes first, so neither always meets a warmer machine.
      const row = { oursUp: 0, rawUp: 0, oursDown: 0, rawDown: 0, presignedDown: 0, presignedBytes: 0 };
      const ours = async () => {
        let t = performance.now();
        let c = sample();
        const file = await oursUpload();
        row.oursUp = mibps(t);
        cpu.oursUp.push(cpuPerUnit(c, sample(), SIZE / GIB));
        digests.add(file.sha256);
        t = performance.now();
        c = sample();
        await drain(await oursDownload(file.file_id));
        row.oursDown = mibps(t);
        cpu.oursDown.push(cpuPerUnit(c, sample(), SIZE / GIB));
        t = performance.now();
        c = sample();
        const got = await presignedDownload(file.file_id);
        row.presignedDown = mibps(t);
        cpu.presigned.push(cpuPerUnit(c, sample(), SIZE / GIB));
        if (got !== file.sha256.replace(/^sha256:/, '')) throw new Error(`presigned download hashed ${got}, the record says ${file.sha256}`);
        // The same path without the client's hash: what the transport alone costs.
        t = performance.now();
        await presignedDownload(file.file_id, false);
        row.presignedBytes = mibps(t);
      };
      const baseline = async () => {
        let t = performance.now();
        let c = sample();
        await raw.putStream(`bench/raw-${round}.bin`, createReadStream(source), 'application/octet-stream');
        row.rawUp = mibps(t);
        cpu.rawUp.push(cpuPerUnit(c, sample(), SIZE / GIB));
        t = performance.now();
        c = sample();
        await drain((await raw.getStream(`bench/raw-${round}.bin`)).body as AsyncIterable<Uint8Array>);
        row.rawDown = mibps(t);
        cpu.rawDown.push(cpuPerUnit(c, sample(), SIZE / GIB));
      };
      for (const step of round % 2 ? [baseline, ours] : [ours, baseline]) await step();
      rows.push(row);
      console.log(`round ${round + 1}: upload ours ${row.oursUp.toFixed(0)} raw ${row.rawUp.toFixed(0)} MiB/s; download ours ${row.oursDown.toFixed(0)} presigned ${row.presignedDown.toFixed(0)} (bytes only ${row.presignedBytes.toFixed(0)}) raw ${row.rawDown.toFixed(0)} MiB/s`);
    }
    const rssGrowth = peakRssMiB(api.pid!) - rssBefore;
    const med = (k: keyof (typeof rows)[number]) => median(rows.map((r) => r[k]));
    const [oursUp, rawUp, oursDown, rawDown, presignedDown] = [med('oursUp'), med('rawUp'), med('oursDown'), med('rawDown'), med('presignedDown')];
    const presignedRatio = median(rows.map((r) => r.presignedDown / r.rawDown));
    const transportRatio = median(rows.map((r) => r.presignedBytes / r.rawDown));
    const same = digests.size === 1 && digests.has(expected);

    console.log(`${SIZE / MIB} MiB file, ${ROUNDS} rounds (medians below); stored sha256 ${same ? 'equals' : 'DIFFERS FROM'} sha256sum of the source`);
    console.log(`api peak RSS growth over all uploads: ${rssGrowth.toFixed(1)} MiB (goal < 64)`);
    console.log(`upload    ours ${oursUp.toFixed(0).padStart(5)} MiB/s   raw S3 ${rawUp.toFixed(0).padStart(5)} MiB/s   ratio ${(oursUp / rawUp).toFixed(2)}`);
    console.log(`download  ours ${oursDown.toFixed(0).padStart(5)} MiB/s   raw S3 ${rawDown.toFixed(0).padStart(5)} MiB/s   ratio ${(oursDown / rawDown).toFixed(2)}`);
    console.log(`download  presigned, bytes only ${med('presignedBytes').toFixed(0).padStart(5)} MiB/s (the api's 307, then MinIO; no hash)   ratio ${transportRatio.toFixed(2)}`);
    console.log(`download  presigned ${presignedDown.toFixed(0).padStart(5)} MiB/s (the api's 307, then MinIO, sha256 checked by the client)   ratio ${presignedRatio.toFixed(2)} (median of the rounds' ratios)  goal >= 0.9`);
    for (const [k, v] of Object.entries(cpu)) console.log(`CPU ms per GiB, ${k.padEnd(9)} (last round): ${v[v.length - 1]}`);
    if (!same) process.exitCode = 1;
    console.log(`throughput ratio (ours/raw, worse of upload and download): ${Math.min(oursUp / rawUp, oursDown / rawDown).toFixed(2)}  goal >= 0.7`);
  } finally {
    api?.kill('SIGTERM');
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
  }
}

// This process is the client of both targets; it runs with the services' malloc settings
// too, so neither client pays the page-fault storms those settings avoid (with glibc's
// defaults the raw client's CPU per GiB swung between 1.8 and 9.7 s from round to round).
if (Object.entries(SERVICE_PROCESS_ENV).some(([k, v]) => process.env[k] !== v)) {
  const child = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, ...SERVICE_PROCESS_ENV } });
  process.exit(child.status ?? 1);
}
main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
