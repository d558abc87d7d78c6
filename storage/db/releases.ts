import semver from 'semver';
import type { Db } from './knex.ts';
import type { NotificationListener } from './notifications.ts';
import { noticedCache } from './noticedCache.ts';
import { newId } from '../ids.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';

export interface ContractInput { name: string; value_type: string; required: boolean }
export interface ContractOutput { name: string; value_type: string }

export interface ReleaseRow {
  id: string;
  account_id: string;
  namespace: string;
  name: string;
  version: string;
  title: string;
  description: string;
  package_type: 'lab' | 'model';
  manifest: Record<string, unknown>;
  inputs: ContractInput[];
  outputs: ContractOutput[];
  package_sha256: string;
  archive_key: string | null;
  visibility: 'private' | 'team' | 'public';
  /** Offered by Hub search (a setting of its lab's, apart from visibility). */
  hub_listed: boolean;
  tags: string[];
  /** What the lab runtime cannot satisfy (Python version, dependencies); empty when runnable. */
  runtime_problems: string[];
  files: Array<{ path: string; sha256: string }>;
  /** Source files the release was packed from, stored by sha256 (what a fork copies). */
  tree: Record<string, { sha256: string; size: number }>;
  intended_use: string | null;
  compute_class: string;
  qualification_state: string;
  /** The environment lock it was packed and smoke-run in (null: the default runtime's, or recorded before environments). */
  environment_lock_sha256: string | null;
  created_at: Date;
}

type Defaulted = 'tags' | 'archive_key' | 'description' | 'package_type' | 'runtime_problems' | 'files' | 'intended_use' | 'compute_class' | 'qualification_state' | 'tree' | 'hub_listed' | 'environment_lock_sha256';
export type NewRelease = Omit<ReleaseRow, 'id' | 'created_at' | Defaulted> & Partial<Pick<ReleaseRow, Defaulted>>;

/** Records an immutable release; publishing the same coordinates twice is refused. */
export async function insertRelease(db: Db, r: NewRelease): Promise<ReleaseRow> {
  const [row] = await db('releases')
    .insert({
      id: newId('rel'), ...r,
      manifest: JSON.stringify(r.manifest), inputs: JSON.stringify(r.inputs), outputs: JSON.stringify(r.outputs),
      runtime_problems: JSON.stringify(r.runtime_problems ?? []), files: JSON.stringify(r.files ?? []), tree: JSON.stringify(r.tree ?? {}),
    })
    .returning('*');
  return row as ReleaseRow;
}

/**
 * Releases an account may see and run: its own, public ones, and `team` ones of the team
 * accounts it is a member of.
 */
export function visibleTo(db: Db, accountId: string) {
  return db('releases').where((q) => q.where('account_id', accountId).orWhere('visibility', 'public')
    .orWhere((t) => t.where('visibility', 'team').whereIn('account_id', db('account_members').where({ member_account_id: accountId }).select('team_account_id'))));
}

/** What Hub search offers an account: visible releases that are listed, and its own. */
export function listedFor(db: Db, accountId: string) {
  return visibleTo(db, accountId).andWhere((q) => q.where('hub_listed', true).orWhere('account_id', accountId));
}

/** One page of visible releases ordered by namespace, name, then publication (ULID id). */
export async function listVisibleReleases(
  db: Db, accountId: string, page: { limit: number; after?: Array<string | number> | null },
): Promise<KeysetPage<ReleaseRow>> {
  return keysetPage<ReleaseRow>(visibleTo(db, accountId), { columns: ['namespace', 'name', 'id'], direction: 'asc', ...page });
}

/** One exact release the account may see. */
export async function findVisibleRelease(db: Db, accountId: string, ref: { namespace: string; name: string; version: string }): Promise<ReleaseRow | undefined> {
  return visibleTo(db, accountId).andWhere({ namespace: ref.namespace, name: ref.name, version: ref.version }).first();
}

const REFERENCE = /^([a-z][a-z0-9-]{1,38})\/([a-z][a-z0-9-]{1,62})(?:@([0-9A-Za-z.+-]{1,64}))?$/;

/** `<namespace>/<name>@<version>` (the version may be optional) → parts, or undefined. */
export function parseReference(ref: string, versionRequired: boolean): { namespace: string; name: string; version?: string } | undefined {
  const m = REFERENCE.exec(ref);
  if (!m || (versionRequired && !m[3])) return undefined;
  return { namespace: m[1]!, name: m[2]!, version: m[3] };
}

/** The newest (by semver) version of namespace/name the account may see. */
export async function findLatestVisibleRelease(db: Db, accountId: string, namespace: string, name: string): Promise<ReleaseRow | undefined> {
  const rows: ReleaseRow[] = await visibleTo(db, accountId).andWhere({ namespace, name });
  return rows
    .filter((r) => semver.valid(r.version))
    .sort((a, b) => semver.rcompare(a.version, b.version))[0];
}

/** Notified by every change to the releases or to team membership (a trigger, migration 046). */
export const RELEASES_CHANNEL = 'silico_releases_changed';

/**
 * The release a reference names for an account (the newest it may see when the reference
 * has no version), kept in process until a release or a team's membership changes
 * (noticedCache.ts); read-only.
 */
export type ReleaseResolver = (accountId: string, ref: { namespace: string; name: string; version?: string }) => Promise<Readonly<ReleaseRow> | undefined>;

export function createReleaseResolver(db: Db, listener: NotificationListener): ReleaseResolver {
  // Releases carry their manifest and file tree: few are kept.
  const cached = noticedCache(listener, RELEASES_CHANNEL, ({ accountId, ref }: { accountId: string; ref: Parameters<ReleaseResolver>[1] }) => (ref.version
    ? findVisibleRelease(db, accountId, { namespace: ref.namespace, name: ref.name, version: ref.version })
    : findLatestVisibleRelease(db, accountId, ref.namespace, ref.name)), { max: 256, keyOf: ({ accountId, ref }) => JSON.stringify([accountId, ref.namespace, ref.name, ref.version ?? null]) });
  return (accountId, ref) => cached({ accountId, ref });
}

/** A release by id, whoever owns it (workers executing an accepted run). */
export async function getReleaseById(db: Db, id: string): Promise<ReleaseRow | undefined> {
  return db('releases').where({ id }).first();
}

/** Whether a release exists at these coordinates (of anyone's). */
export async function releaseExists(db: Db, r: { namespace: string; name: string; version: string }): Promise<boolean> {
  return Boolean(await db('releases').where(r).first('id'));
}
