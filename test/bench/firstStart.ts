// npm run bench:first-start: the binaries a first `npm start` needs (the Temporal CLI, MinIO,
// stripe-mock), got both ways on this machine. The fallback builds them from their Go
// modules into empty caches (module and build caches too), as a fresh machine that
// reaches no release host does: once, since it is a first start. The download path takes
// the same binaries as release archives from a local server standing in for the release
// host (SILICO_RELEASE_MIRROR), their SHA-256 pinned as the real ones are: three rounds.
// Prints the median ratio (download / fallback) last.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { BINARIES, resolveSpec, type BinaryName, type BinarySpec } from '../../deploy/local/binaries.ts';
import { thisPlatform } from '../../deploy/local/releases.ts';
import { median } from './stats.ts';

const NAMES: BinaryName[] = ['temporal', 'minio', 'stripe-mock'];
const platform = thisPlatform()!;
const quiet = () => undefined;
const seconds = (t: number) => (Date.now() - t) / 1000;

const scratch = await mkdtemp(path.join(tmpdir(), 'first-start-'));
// A PATH with Go and the system's tools only: a binary already on the machine's PATH would skip its build.
const fresh = { GOMODCACHE: path.join(scratch, 'gomod'), GOCACHE: path.join(scratch, 'gobuild'), SILICO_RELEASE_MIRROR: 'http://127.0.0.1:1', PATH: '/usr/local/go/bin:/usr/bin:/bin' };
const env = (cache: string, extra: Record<string, string> = {}) => ({ ...process.env, SILICO_CACHE_DIR: cache, ...fresh, ...extra });

const started = Date.now();
const built = await Promise.all(NAMES.map((n) => resolveSpec(n, { ...BINARIES[n], release: undefined, noRelease: 'the bench builds it' }, quiet, env(path.join(scratch, 'built')))));
const fallback = seconds(started);
console.log(`fallback (Go builds, empty caches): ${fallback.toFixed(1)} s`);

// The built binaries as release archives, served with their checksums pinned.
const archives = new Map<string, Buffer>();
const specs = new Map<BinaryName, BinarySpec>();
for (const [i, name] of NAMES.entries()) {
  const file = path.join(scratch, `${name}.tar.gz`);
  await tar.c({ gzip: true, file, cwd: path.dirname(built[i]!) }, [path.basename(built[i]!)]);
  const bytes = await readFile(file);
  archives.set(`/bench/${name}.tar.gz`, bytes);
  specs.set(name, { ...BINARIES[name], noRelease: undefined, release: { url: `https://github.com/bench/${name}.tar.gz`, member: path.basename(built[i]!), sha256: { [platform]: createHash('sha256').update(bytes).digest('hex') } } });
  console.log(`  ${name}: archive of ${(bytes.length / 2 ** 20).toFixed(1)} MiB`);
}
const host = createServer((req, res) => res.end(archives.get(req.url!)));
await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
const mirror = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;

const rounds: number[] = [];
for (let round = 1; round <= 3; round++) {
  const cache = await mkdtemp(path.join(scratch, 'downloaded-'));
  const t = Date.now();
  await Promise.all(NAMES.map((n) => resolveSpec(n, specs.get(n)!, quiet, env(cache, { SILICO_RELEASE_MIRROR: mirror, GO_BIN: '' }))));
  rounds.push(seconds(t));
  console.log(`round ${round}: download path ${rounds.at(-1)!.toFixed(2)} s, against the fallback's ${fallback.toFixed(1)} s: ratio ${(rounds.at(-1)! / fallback).toFixed(4)}`);
}
host.close();
await rm(scratch, { recursive: true, force: true });
console.log(`median ratio (download / fallback): ${(median(rounds) / fallback).toFixed(4)}`);
