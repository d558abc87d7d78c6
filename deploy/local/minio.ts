import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { waitFor, type Supervisor } from './processes.ts';

/** Starts MinIO with its data under the data dir; resolves when it reports ready. */
export async function startMinio(
  sup: Supervisor,
  opts: { bin: string; dataDir: string; port: number; consolePort: number; accessKey: string; secretKey: string },
): Promise<{ endpoint: string; consoleUrl: string }> {
  const dir = path.join(opts.dataDir, 'minio');
  await mkdir(dir, { recursive: true });
  const proc = sup.start('minio', opts.bin, [
    'server', dir, '--quiet', '--address', `127.0.0.1:${opts.port}`, '--console-address', `127.0.0.1:${opts.consolePort}`,
  ], {
    env: {
      PATH: process.env.PATH ?? '', HOME: opts.dataDir,
      MINIO_ROOT_USER: opts.accessKey, MINIO_ROOT_PASSWORD: opts.secretKey,
      MINIO_BROWSER: 'on', MINIO_UPDATE: 'off',
    },
  });
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  const endpoint = `http://127.0.0.1:${opts.port}`;
  await waitFor('minio', async () => (await fetch(`${endpoint}/minio/health/ready`)).ok, 60000, () => exited);
  return { endpoint, consoleUrl: `http://localhost:${opts.consolePort}` };
}
