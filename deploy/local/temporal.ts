import { existsSync } from 'node:fs';
import path from 'node:path';
import { fairSharesOf } from './fairShares.ts';
import { GO_MEMORY_LIMIT, HISTORY_CACHE } from './temporalMemory.ts';
import { Connection } from '@temporalio/client';
import { waitFor, type Supervised, type Supervisor } from './processes.ts';
import { ensureSearchAttributes } from './searchAttributes.ts';
import { SEARCH_ATTRIBUTES } from '../../kernel/workflowNames.ts';

/**
 * Starts the Temporal dev server with a persistent SQLite file under the data dir and our
 * custom search attributes registered. `fast` uses the pragmas Temporal's own SDK CI uses
 * (test stacks only: they trade durability for speed).
 */
export async function startTemporal(
  sup: Supervisor,
  opts: { bin: string; dataDir: string; port: number; uiPort: number | null; namespace: string; fast: boolean; log?: (line: string) => void },
): Promise<{ address: string; uiUrl: string | null; proc: Supervised }> {
  const dbFile = path.join(opts.dataDir, 'temporal.db');
  const fair = await fairSharesOf(opts.dataDir, !existsSync(dbFile), opts.log ?? console.warn);
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(opts.port),
    '--db-filename', dbFile,
    '--namespace', opts.namespace,
    '--log-level', 'error',
    // Queued tasks are handed out by account (kernel/fairShares.ts), not first come first
    // served; the history cache is bounded (temporalMemory.ts).
    ...[...fair, ...HISTORY_CACHE].flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
  ];
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  if (opts.uiPort === null) args.push('--headless');
  else args.push('--ui-ip', '127.0.0.1', '--ui-port', String(opts.uiPort));
  if (opts.fast) args.push('--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF');
  const proc = sup.start('temporal', opts.bin, args, { env: { PATH: process.env.PATH ?? '', HOME: opts.dataDir, GOMEMLIMIT: GO_MEMORY_LIMIT } });
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  const address = `127.0.0.1:${opts.port}`;
  await waitFor('temporal', async () => {
    const conn = await Connection.connect({ address, connectTimeout: 1000 });
    try {
      await conn.workflowService.describeNamespace({ namespace: opts.namespace });
      // --search-attribute registers them in a new database only.
      await ensureSearchAttributes(conn, opts.namespace);
      return true;
    } finally {
      await conn.close();
    }
  }, 120000, () => exited);
  return { address, uiUrl: opts.uiPort === null ? null : `http://localhost:${opts.uiPort}`, proc };
}
