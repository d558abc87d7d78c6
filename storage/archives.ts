import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';

/** Why requested archive members could not be read; each maps to one client error. */
export class ArchiveError extends Error {
  readonly kind: 'not_an_archive' | 'members_missing' | 'member_corrupt' | 'member_too_large';
  readonly members: string[];
  constructor(kind: 'not_an_archive' | 'members_missing' | 'member_corrupt' | 'member_too_large', message: string, members: string[] = []) {
    super(message);
    this.kind = kind;
    this.members = members;
  }
}

function open(bytes: Buffer): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true, decodeStrings: true }, (err, zip) => {
      if (err || !zip) reject(new ArchiveError('not_an_archive', `The artifact is not a readable ZIP archive: ${err?.message ?? 'no archive'}.`));
      else resolve(zip);
    });
  });
}

function readEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err || !stream) return reject(new ArchiveError('member_corrupt', `${entry.fileName}: ${err?.message ?? 'unreadable'}.`, [entry.fileName]));
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', (e) => reject(new ArchiveError('member_corrupt', `${entry.fileName}: ${e.message}.`, [entry.fileName])));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
    });
  });
}

/**
 * Reads exactly the requested members of a ZIP archive held in memory, and verifies each
 * before returning any: present, a file, no larger than `maxBytes` uncompressed (the size
 * the central directory declares is checked before inflating, and yauzl holds the
 * inflated stream to it, so a zip bomb stops at the bound), and matching its CRC-32.
 * Nothing in a member is interpreted.
 */
export async function readZipMembers(bytes: Buffer, paths: readonly string[], maxBytes: number): Promise<Map<string, Buffer>> {
  const wanted = new Set(paths);
  const out = await readMembers(bytes, (name) => wanted.has(name), { memberBytes: maxBytes, totalBytes: Infinity, members: Infinity });
  const missing = paths.filter((p) => !out.has(p));
  if (missing.length) throw new ArchiveError('members_missing', `The archive has no file ${missing.map((m) => JSON.stringify(m)).join(', ')}.`, missing);
  return out;
}

/**
 * Every file of a ZIP archive held in memory (folders left out), each verified as
 * readZipMembers does, within bounds on their count and their size together (declared
 * sizes, checked before anything is inflated).
 */
export async function readZipFiles(bytes: Buffer, bounds: { totalBytes: number; members: number }): Promise<Map<string, Buffer>> {
  return readMembers(bytes, () => true, { memberBytes: bounds.totalBytes, ...bounds });
}

async function readMembers(bytes: Buffer, wanted: (name: string) => boolean, bounds: { memberBytes: number; totalBytes: number; members: number }): Promise<Map<string, Buffer>> {
  const zip = await open(bytes);
  const out = new Map<string, Buffer>();
  let total = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', (e: Error) => reject(e instanceof ArchiveError ? e : new ArchiveError('not_an_archive', `The artifact is not a readable ZIP archive: ${e.message}.`)));
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        if (!wanted(entry.fileName) || entry.fileName.endsWith('/')) return zip.readEntry();
        total += entry.uncompressedSize;
        if (entry.uncompressedSize > bounds.memberBytes) {
          return reject(new ArchiveError('member_too_large', `${entry.fileName} is ${entry.uncompressedSize} bytes uncompressed; the bound is ${bounds.memberBytes}.`, [entry.fileName]));
        }
        if (total > bounds.totalBytes) return reject(new ArchiveError('member_too_large', `The archive's files are more than ${bounds.totalBytes} bytes uncompressed together.`, [entry.fileName]));
        if (out.size >= bounds.members) return reject(new ArchiveError('member_too_large', `The archive holds more than ${bounds.members} files.`, [entry.fileName]));
        readEntry(zip, entry).then((data) => {
          if (crc32(data) !== entry.crc32) throw new ArchiveError('member_corrupt', `${entry.fileName} does not match its CRC-32.`, [entry.fileName]);
          out.set(entry.fileName, data);
          zip.readEntry();
        }).catch(reject);
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return out;
}
