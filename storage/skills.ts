import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from './db/knex.ts';
import type { ObjectStore } from './objects.ts';
import { blobKey } from './objects.ts';
import { digestJson, sha256Hex } from './digest.ts';

export interface SkillFile { path: string; sha256: string; size_bytes: number }
export interface SkillManifest { name: string; version: string; summary: string; files: SkillFile[] }
export interface PublishedSkill extends SkillManifest { checksum: string; published_at: Date }

/** The published checksum: SHA-256 of the manifest's canonical JSON. */
export function skillChecksum(m: SkillManifest): string {
  return digestJson({ name: m.name, version: m.version, summary: m.summary, files: m.files });
}

/** Raised when stored skill bytes or manifest no longer match the published checksum. */
export class SkillChecksumMismatch extends Error {
  readonly skill: string;
  readonly what: string;
  constructor(skill: string, what: string) {
    super(`skill ${skill}: ${what} does not match its published checksum`);
    this.skill = skill;
    this.what = what;
  }
}

/** A skill's files: every file of its folder but skill.json, at any depth (a template lab beside SKILL.md), bytecode caches and dotfiles aside. */
async function skillFiles(folder: string): Promise<string[]> {
  return (await readdir(folder, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.relative(folder, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .filter((p) => p !== 'skill.json' && !p.split('/').some((part) => part.startsWith('.') || part === '__pycache__'))
    .sort();
}

/**
 * Publishes every skill folder under `root` (a `skill.json` with name, version and
 * summary, plus its text files): bytes into the store by sha256, manifest and checksum
 * into Postgres. Re-publishing unchanged content changes nothing.
 */
export async function publishSkills(db: Db, objects: ObjectStore, root: string): Promise<string[]> {
  const published: string[] = [];
  for (const dir of (await readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory())) {
    const folder = path.join(root, dir.name);
    const meta = JSON.parse(await readFile(path.join(folder, 'skill.json'), 'utf8')) as Omit<SkillManifest, 'files'>;
    const files: SkillFile[] = [];
    for (const name of await skillFiles(folder)) {
      const bytes = await readFile(path.join(folder, name));
      files.push({ path: name, sha256: await objects.putBlob(bytes, name.endsWith('.md') ? 'text/markdown; charset=utf-8' : 'text/plain; charset=utf-8'), size_bytes: bytes.length });
    }
    const manifest: SkillManifest = { name: meta.name, version: meta.version, summary: meta.summary, files };
    await db('skills')
      .insert({ name: manifest.name, version: manifest.version, summary: manifest.summary, manifest: JSON.stringify(manifest), checksum: skillChecksum(manifest) })
      .onConflict('name').merge();
    published.push(manifest.name);
  }
  return published;
}

function verifiedManifest(row: { name: string; manifest: SkillManifest; checksum: string; published_at: Date }): PublishedSkill {
  if (skillChecksum(row.manifest) !== row.checksum) throw new SkillChecksumMismatch(row.name, 'manifest');
  return { ...row.manifest, checksum: row.checksum, published_at: row.published_at };
}

/** Every published skill, each manifest checked against its checksum. */
export async function listSkills(db: Db): Promise<PublishedSkill[]> {
  const rows = await db('skills').orderBy('name');
  return rows.map(verifiedManifest);
}

export async function getSkill(db: Db, name: string): Promise<PublishedSkill | undefined> {
  const row = await db('skills').where({ name }).first();
  return row ? verifiedManifest(row) : undefined;
}

/** Reads one file of a skill; its bytes are served only after they re-hash to the manifest. */
export async function readSkillFile(objects: ObjectStore, skill: PublishedSkill, file: SkillFile): Promise<string> {
  const bytes = await objects.getBytes(blobKey(file.sha256));
  if (sha256Hex(bytes) !== file.sha256) throw new SkillChecksumMismatch(skill.name, file.path);
  return bytes.toString('utf8');
}
