import path from 'node:path';
import { startStack } from './stack.ts';
import { prefixedSink } from './processes.ts';
import { REPO_ROOT } from './bootstrap.ts';
import { shareNodeCompileCache } from './compileCache.ts';

/**
 * `npm start`: the whole service in the foreground. Data lives in `.data/` (or
 * SILICO_DATA_DIR) and survives restarts; Ctrl-C stops everything cleanly.
 * `npm run start:cluster` (`--cluster`): the production topology on this machine (a
 * Temporal cluster on Postgres, erasure-coded MinIO, two api replicas behind HAProxy,
 * two workers), its data in `.data-cluster/`.
 */
function port(name: string, fallback: number): number {
  const v = process.env[name];
  return v ? Number(v) : fallback;
}

async function main(): Promise<void> {
  shareNodeCompileCache();
  const cluster = process.argv.includes('--cluster');
  const dataDir = path.resolve(process.env.SILICO_DATA_DIR ?? path.join(REPO_ROOT, cluster ? '.data-cluster' : '.data'));
  const sink = prefixedSink();
  const stack = await startStack({
    dataDir,
    mode: 'dev',
    topology: cluster ? 'cluster' : 'single',
    sink,
    ports: {
      api: port('SILICO_API_PORT', 8080),
      postgres: port('SILICO_PG_PORT', 5433),
      temporal: port('TEMPORAL_PORT', 7233),
      temporalUi: port('TEMPORAL_UI_PORT', 8233),
      minio: port('MINIO_PORT', 9000),
      minioConsole: port('MINIO_CONSOLE_PORT', 9001),
    },
  });
  const i = stack.info;
  process.stdout.write(`
Silico is up, on Node ${process.versions.node}.
  API base URL     ${i.base_url}
  API key          ${i.api_key}
  Docs             ${i.docs_url}
  OpenAPI          ${i.openapi_url}
  Temporal         ${i.temporal_address}${i.temporal_ui_url ? `  (UI ${i.temporal_ui_url})` : ''}${cluster ? `
  Topology         ${stack.apis.map((a) => `${a.name} :${a.port}`).join(', ')} behind HAProxy; ${stack.workers.map((w) => w.name).join(', ')}; Temporal ${Object.keys(stack.temporalCluster!.services).join(', ')} on Postgres; MinIO on 4 drives` : ''}
  MinIO console    ${i.minio_console_url}
  State file       ${path.join(dataDir, 'local.json')}

  curl -H "Authorization: Bearer ${i.api_key}" ${i.base_url}/account

Press Ctrl-C to stop.
`);
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    sink('stack', 'stopping...');
    await stack.stop();
    sink('stack', 'stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  stack.supervisor.watch((p, code) => {
    sink('stack', `${p.name} exited unexpectedly (${code}); stopping the stack`);
    void stop(1);
  });
}

main().catch((err) => {
  console.error(`silico: could not start: ${(err as Error).message}`);
  process.exit(1);
});
