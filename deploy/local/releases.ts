import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';

/** A platform as Go and the release archives name it. */
export type Platform = `${'linux' | 'darwin'}-${'amd64' | 'arm64'}`;

/** This machine's platform, or undefined where no project publishes one. */
export function thisPlatform(): Platform | undefined {
  const os = process.platform === 'linux' || process.platform === 'darwin' ? process.platform : undefined;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch === 'arm64' ? 'arm64' : undefined;
  return os && arch ? `${os}-${arch}` : undefined;
}

/**
 * A project's official release of a binary: its archive's URL (`{os}` and `{arch}` filled
 * in), the file in it, and the archive's SHA-256 for each platform whose checksum is
 * pinned here. A platform without one is never downloaded.
 */
export interface Release { url: string; member: string; sha256: Partial<Record<Platform, string>> }

/** How long the release host may take to answer, and to send the whole archive. */
const ANSWER_MS = 10_000;
const DOWNLOAD_MS = 300_000;

/**
 * The release's URL for a platform; `SILICO_RELEASE_MIRROR` stands in for
 * `https://github.com` (a mirror serves the same paths, and the pinned checksums still
 * decide).
 */
export function releaseUrl(release: Release, platform: Platform, env: NodeJS.ProcessEnv): string {
  const [os, arch] = platform.split('-') as [string, string];
  const url = release.url.replaceAll('{os}', os).replaceAll('{arch}', arch);
  return env.SILICO_RELEASE_MIRROR ? url.replace(/^https:\/\/github\.com/, env.SILICO_RELEASE_MIRROR.replace(/\/+$/, '')) : url;
}

/**
 * Downloads a release archive, hashing it as it streams, and places its binary at
 * `target` only when the archive's SHA-256 is the pinned one. Answers null when it did,
 * else why not (the host unreachable or answering an error, a checksum that differs, an
 * archive without the binary): the caller builds from source instead and says why.
 */
export async function downloadRelease(release: Release, platform: Platform, target: string, env: NodeJS.ProcessEnv, limits = { answerMs: ANSWER_MS, downloadMs: DOWNLOAD_MS }): Promise<string | null> {
  const pinned = release.sha256[platform];
  if (!pinned) return `no SHA-256 of its release for ${platform} is pinned here`;
  const url = releaseUrl(release, platform, env);
  const work = await mkdtemp(path.join(path.dirname(target), '.download-'));
  try {
    // One signal for the request and its body: the answer must come within answerMs, then
    // the whole archive within downloadMs (a fetch's signal governs its body too).
    const abort = new AbortController();
    let timer = setTimeout(() => abort.abort(new Error(`no answer within ${limits.answerMs / 1000} s`)), limits.answerMs);
    try {
      let res: Response;
      try {
        res = await fetch(url, { signal: abort.signal, redirect: 'follow' });
      } catch (err) {
        const e = err as Error & { cause?: Error };
        return `its release host could not be reached (${url}: ${abort.signal.aborted ? String((abort.signal.reason as Error).message) : e.cause?.message ?? e.message})`;
      }
      if (!res.ok || !res.body) return `its release host answered ${res.status} for ${url}`;
      clearTimeout(timer);
      timer = setTimeout(() => abort.abort(new Error(`not downloaded within ${limits.downloadMs / 1000} s`)), limits.downloadMs);
      const archive = path.join(work, 'archive.tar.gz');
      const hash = createHash('sha256');
      const hashing = new Transform({ transform(chunk: Buffer, _enc, done) { hash.update(chunk); done(null, chunk); } });
      try {
        await pipeline(Readable.fromWeb(res.body as never), hashing, createWriteStream(archive), { signal: abort.signal });
      } catch (err) {
        return `its release could not be downloaded from ${url} (${abort.signal.aborted ? String((abort.signal.reason as Error).message) : (err as Error).message})`;
      }
      clearTimeout(timer);
      return await verifiedInto(archive, hash.digest('hex'), pinned, url, release.member, work, target);
    } finally {
      clearTimeout(timer);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Places an archive's binary at `target` when the archive's digest is the pinned one; else why not. */
async function verifiedInto(archive: string, got: string, pinned: string, url: string, member: string, work: string, target: string): Promise<string | null> {
  if (got !== pinned) return `the archive from ${url} has SHA-256 ${got}, not the pinned ${pinned}: refused`;
  await tar.x({ file: archive, cwd: work, filter: (p) => p === member || p === `./${member}` });
  const binary = path.join(work, member);
  try {
    await chmod(binary, 0o755);
  } catch {
    return `the archive from ${url} holds no ${member}`;
  }
  // Renamed into place whole, so a parallel start never sees half a file.
  await rename(binary, target);
  return null;
}
