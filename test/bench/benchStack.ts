import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { createHttpClient } from './httpClient.ts';

/**
 * A bench's own stack on free ports in a temporary data dir (its log there), an HTTP client
 * with its operator key, and the bench's body run against them; the stack is stopped and
 * the dir removed whatever happened, and the process exits non-zero when the body threw.
 */
export async function benchOnStack(
  name: string, serviceEnv: Record<string, string>, body: (s: { stack: Stack; http: ReturnType<typeof createHttpClient>; base: string }) => Promise<void>,
): Promise<never> {
  const dir = await mkdtemp(path.join(tmpdir(), `silico-bench-${name}-`));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  let http: ReturnType<typeof createHttpClient> | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({ exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`), serviceEnv });
    const base = stack.info.base_url.replace('//localhost:', '//127.0.0.1:');
    http = createHttpClient(base, { Authorization: `Bearer ${stack.info.api_key}` });
    await body({ stack, http, base });
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    http?.close();
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
  }
  process.exit(process.exitCode ?? 0);
}
