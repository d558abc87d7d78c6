import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { arch } from 'node:os';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ObjectStore } from '../../storage/objects.ts';
import type { Db } from '../../storage/db/knex.ts';
import { noteArchiveUsed } from '../../storage/db/environments.ts';

/**
 * Built environments shared between workers through the object store: a worker that
 * builds a lock's environment puts it there as a tar archive, and a worker that lacks it
 * takes it from there instead of building it again. A virtualenv names its base
 * interpreter and its own folder by absolute path, so an archive is only shared between
 * workers of one layout (the same environments folder, the same base interpreter, the same
 * machine architecture): its key names the layout's digest. The archive's SHA-256,
 * computed while it streams up, is written beside it once it is whole; a taker checks the
 * bytes it unpacked against it, and builds when they differ or there is none. Each
 * publication and taking is noted in Postgres (`environment_archives`), so the hourly
 * maintenance can remove archives no worker has used for a while.
 */
export interface SharedEnvironments {
  /** Unpacks the lock's shared environment of this layout into `into` (an empty folder); whether there was one, whole. */
  fetch(lockSha256: string, layout: string, into: string): Promise<boolean>;
  /** Puts the environment built in `dir` where other workers of this layout find it. */
  publish(lockSha256: string, layout: string, dir: string): Promise<void>;
}

/** The digest of a layout: where environments live, on which interpreter, on which machine. */
export function layoutDigest(environmentsDir: string, basePython: string): string {
  return createHash('sha256').update(JSON.stringify([environmentsDir, realpathSync(basePython), arch()])).digest('hex').slice(0, 16);
}

/** Where every archive is kept. */
export const ARCHIVES_PREFIX = 'environments/';
const archiveKey = (lock: string, layout: string) => `${ARCHIVES_PREFIX}${lock}/${layout}.tar`;
const digestKey = (lock: string, layout: string) => `${ARCHIVES_PREFIX}${lock}/${layout}.sha256`;

/** The lock and layout an archive's object (its tar or its digest) belongs to; null for any other key. */
export function archiveOf(key: string): { lock: string; layout: string } | null {
  const m = /^environments\/([0-9a-f]{64})\/([0-9a-f]+)\.(?:tar|sha256)$/.exec(key);
  return m ? { lock: m[1]!, layout: m[2]! } : null;
}

/** Removes an archive: its digest first, so no worker starts taking it (one midway finds it gone and builds). */
export async function removeArchive(objects: ObjectStore, lock: string, layout: string): Promise<void> {
  await objects.delete(digestKey(lock, layout));
  await objects.delete(archiveKey(lock, layout));
}

/** Runs `tar` with `args`, its stdin or stdout given to `io`; rejects with its stderr when it fails. */
function tar(args: string[], io: (stdio: { stdin: NodeJS.WritableStream; stdout: Readable }) => Promise<void>): Promise<void> {
  const child = spawn('tar', args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  const exited = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tar ${args[0]} exited with ${code}: ${stderr.trim().slice(-500)}`))));
  });
  return Promise.all([io({ stdin: child.stdin, stdout: child.stdout }).catch((err) => { child.kill('SIGKILL'); throw err; }), exited]).then(() => undefined);
}

/** A stream that hashes what passes through it, as it is read. */
function hashing(): { tap: Transform; hex: () => string } {
  const hash = createHash('sha256');
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  return { tap, hex: () => hash.digest('hex') };
}

export function createSharedEnvironments(objects: ObjectStore, db: Db): SharedEnvironments {
  return {
    async fetch(lock, where, into) {
      if (!(await objects.exists(digestKey(lock, where)))) return false;
      const expected = (await objects.getBytes(digestKey(lock, where))).toString().trim();
      const { body } = await objects.getStream(archiveKey(lock, where));
      const { tap, hex } = hashing();
      await tar(['-x', '-f', '-', '-C', into, '--no-same-owner'], async ({ stdin }) => {
        await pipeline(body, tap, stdin);
      });
      if (hex() !== expected) return false;
      // Only bookkeeping: a worker that cannot note the use still takes what it unpacked.
      await noteArchiveUsed(db, lock, where).catch(() => undefined);
      return true;
    },
    async publish(lock, where, dir) {
      // Noted before the upload too: an archive being written is never one unused for long.
      await noteArchiveUsed(db, lock, where);
      const { tap, hex } = hashing();
      await tar(['-c', '-f', '-', '-C', dir, '.'], async ({ stdout }) => {
        await objects.putStream(archiveKey(lock, where), stdout.pipe(tap), 'application/x-tar');
      });
      // Written last: an archive is taken only once it is whole.
      await objects.putObject(digestKey(lock, where), Buffer.from(`${hex()}\n`), 'text/plain');
      await noteArchiveUsed(db, lock, where);
    },
  };
}
