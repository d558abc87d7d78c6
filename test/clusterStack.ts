import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort, { portNumbers } from 'get-port';
import { startStack, type Stack } from '../deploy/local/stack.ts';

/**
 * The production topology (npm run start:cluster) started by a test file for itself, on
 * free ports and a data dir of its own, its processes' lines in that dir's stack.log.
 * `stop` keeps the data dir when the file failed, for its logs.
 */
export async function startClusterStack(name: string, o: {
  serviceEnv: Record<string, string>; temporalUi?: boolean; postgresSettings?: string[];
}): Promise<{ stack: Stack; dataDir: string; stop(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), `silico-${name}-`));
  const log = createWriteStream(path.join(dataDir, 'stack.log'));
  const stack = await startStack({
    dataDir, mode: 'test', topology: 'cluster', exitOnSignal: true, postgresSettings: o.postgresSettings, serviceEnv: o.serviceEnv,
    sink: (source, line) => log.write(`${source.padEnd(10)}| ${line}\n`),
    // The Temporal frontend's port must be below 32768 (docs: README, the production topology).
    ports: { api: await getPort(), postgres: await getPort(), temporal: await getPort({ port: portNumbers(20000, 32767) }), temporalUi: o.temporalUi ? await getPort() : null, minio: await getPort(), minioConsole: await getPort() },
  });
  return {
    stack, dataDir,
    async stop() {
      await stack.stop();
      if (!process.exitCode) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
