import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { waitFor, type Supervised, type Supervisor } from './processes.ts';

/**
 * Starts MinIO with its data under the data dir; resolves when it reports ready. With
 * `drives` (4 or more) it erasure-codes objects across that many drives (folders here,
 * disks in a deployment), so it keeps serving with up to half of them lost.
 */
export async function startMinio(
  sup: Supervisor,
  opts: { bin: string; dataDir: string; port: number; consolePort: number; accessKey: string; secretKey: string; drives?: number },
): Promise<{ endpoint: string; consoleUrl: string; proc: Supervised; ready: () => Promise<void> }> {
  const dir = path.join(opts.dataDir, opts.drives ? 'minio-erasure' : 'minio');
  const drives = opts.drives ? Array.from({ length: opts.drives }, (_, i) => path.join(dir, `d${i + 1}`)) : [dir];
  for (const d of drives) await mkdir(d, { recursive: true });
  const proc = sup.start('minio', opts.bin, [
    // MinIO expands `{1...n}` itself: one erasure set over the n drives.
    'server', opts.drives ? path.join(dir, `d{1...${opts.drives}}`) : dir, '--quiet', '--address', `127.0.0.1:${opts.port}`, '--console-address', `127.0.0.1:${opts.consolePort}`,
  ], {
    env: {
      PATH: process.env.PATH ?? '', HOME: opts.dataDir,
      MINIO_ROOT_USER: opts.accessKey, MINIO_ROOT_PASSWORD: opts.secretKey,
      MINIO_BROWSER: 'on', MINIO_UPDATE: 'off',
      // The four drives are folders of one disk here (disks in a deployment): MinIO refuses
      // drives on the root disk unless told it is a test setup.
      ...(opts.drives ? { MINIO_CI_CD: '1' } : {}),
    },
  });
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  const endpoint = `http://127.0.0.1:${opts.port}`;
  // An erasure set is ready for writes only once it has its write quorum (`cluster`), not when the process answers.
  const ready = (failed?: () => string | undefined) => waitFor('minio', async () => (await fetch(`${endpoint}/minio/health/${opts.drives ? 'cluster' : 'ready'}`)).ok, 60000, failed);
  await ready(() => exited);
  return { endpoint, consoleUrl: `http://localhost:${opts.consolePort}`, proc, ready: () => ready() };
}
