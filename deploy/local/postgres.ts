import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { waitFor, type Supervised, type Supervisor } from './processes.ts';

/**
 * glibc's allocator raises its mmap threshold to the largest block a process has freed
 * (up to 32 MiB), so a backend that once ran a large statement served later blocks from
 * its heap and kept them: an idle backend held 15 MiB after a 100,000-run acceptance and
 * 4 MiB with the threshold fixed at its default of 128 KiB, where a freed block goes back
 * (probed on the dev stack). A pooled backend lives as long as the stack.
 */
const RETURN_FREED_MEMORY = 'glibc.malloc.mmap_threshold=131072';

export interface PostgresHandle {
  url: string;
  managed: boolean;
  /** The server's process and a probe that resolves once it serves again (managed only). */
  server?: { proc: Supervised; ready: () => Promise<void> };
}

/** The machine's Postgres server binaries: PATH first, then Debian's versioned folders. */
export function findPgBin(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : undefined;
}

/** Postgres refuses to run as root: when we are root, the cluster belongs to `postgres`. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    throw new Error('running as root needs a `postgres` system user to own the local cluster (apt-get install postgresql, or useradd --system postgres)');
  }
}

async function chownTree(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  await chown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(p, owner);
    else await chown(p, owner.uid, owner.gid);
  }
}

/**
 * DATABASE_URL when given; otherwise a project-local cluster under `<dataDir>/pg` run
 * by the machine's own server binaries. `fast` trades durability for speed (tests only).
 */
export async function startPostgres(
  sup: Supervisor,
  opts: { dataDir: string; port: number; fast: boolean; log: (l: string) => void; env?: NodeJS.ProcessEnv; settings?: string[] },
): Promise<PostgresHandle> {
  const env = opts.env ?? process.env;
  if (env.DATABASE_URL) return { url: env.DATABASE_URL, managed: false };
  const bin = findPgBin(env);
  if (!bin) {
    throw new Error('no Postgres server binaries found (initdb/postgres). Install them (apt-get install postgresql) or set DATABASE_URL.');
  }
  const owner = runAs();
  const dataDir = path.join(opts.dataDir, 'pg');
  const socketDir = path.join(opts.dataDir, 'pg-run');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await mkdir(socketDir, { recursive: true });
  if (owner) {
    await chownTree(dataDir, owner);
    await chown(socketDir, owner.uid, owner.gid);
  }
  const childEnv = { PATH: env.PATH ?? '', LANG: 'C.UTF-8', HOME: dataDir };
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    opts.log('initialising the local Postgres cluster');
    execFileSync(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'silico', '-A', 'trust', '-E', 'UTF8', '--no-instructions', ...(opts.fast ? ['--no-sync'] : [])], {
      ...(owner ?? {}), env: childEnv, stdio: 'pipe',
    });
  }
  const args = ['-D', dataDir, '-p', String(opts.port), '-k', socketDir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'];
  if (opts.fast) args.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  for (const setting of opts.settings ?? []) args.push('-c', setting);
  const proc = sup.start('postgres', path.join(bin, 'postgres'), args, { ...(owner ?? {}), env: { ...childEnv, GLIBC_TUNABLES: RETURN_FREED_MEMORY } });
  const base = `postgres://silico@127.0.0.1:${opts.port}`;
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  await waitFor('postgres', async () => {
    const c = new pg.Client({ connectionString: `${base}/postgres` });
    await c.connect();
    try {
      const { rowCount } = await c.query(`SELECT 1 FROM pg_database WHERE datname = 'silico'`);
      if (!rowCount) await c.query('CREATE DATABASE silico');
    } finally {
      await c.end();
    }
    return true;
  }, 60000, () => exited);
  const url = `${base}/silico`;
  const ready = () => waitFor('postgres', async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.end();
    return true;
  }, 60000);
  return { url, managed: true, server: { proc, ready } };
}
