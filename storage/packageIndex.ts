import { eq, valid } from '@renovatebot/pep440';
import { canonicalName } from './runtimePins.ts';

/** One file of a project as the index lists it, with its upload time where the index gives one (PEP 700). */
export interface IndexFile { filename: string; uploadTime?: string }

/** A project's page in the index's JSON simple API (PEP 691). */
export interface ProjectPage { name: string; versions: string[]; files: IndexFile[] }

/** How long the index may take to give a project's page: the caller is a plan, or a run that has ended. */
export const INDEX_ANSWER_MS = 5000;

/** What the index said of a project: its page, that it has none (404), or nothing (it could not be asked). */
export type ProjectAnswer =
  | { seen: 'page'; page: ProjectPage }
  | { seen: 'none' }
  | { seen: 'unreachable'; why: string };

/**
 * Asks the package index once for a project's page (its JSON simple API). An index that
 * cannot be reached, answers an error or does not answer in time says nothing about the
 * project, and is reported as such, never as "none".
 */
export async function projectPage(indexUrl: string, project: string, timeoutMs = INDEX_ANSWER_MS): Promise<ProjectAnswer> {
  const name = canonicalName(project);
  let res: Response;
  try {
    res = await fetch(`${indexUrl.replace(/\/+$/, '')}/${name}/`, {
      headers: { Accept: 'application/vnd.pypi.simple.v1+json' }, signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const timedOut = (err as Error).name === 'TimeoutError';
    return { seen: 'unreachable', why: timedOut ? `it did not answer within ${timeoutMs / 1000} s` : `it could not be reached (${(err as Error).message})` };
  }
  if (res.status === 404) return { seen: 'none' };
  if (!res.ok) return { seen: 'unreachable', why: `it answered ${res.status}` };
  let body: { name?: string; versions?: string[]; files?: Array<{ filename?: string; 'upload-time'?: string }> };
  try {
    body = await res.json() as typeof body;
  } catch {
    return { seen: 'unreachable', why: 'its answer was not the JSON simple API' };
  }
  const files = (body.files ?? []).filter((f) => typeof f.filename === 'string')
    .map((f) => ({ filename: f.filename!, ...(typeof f['upload-time'] === 'string' ? { uploadTime: f['upload-time'] } : {}) }));
  return { seen: 'page', page: { name: body.name ?? name, versions: body.versions ?? [], files } };
}

/**
 * The version a distribution file carries, from its name: a wheel's second field
 * (`name-version-tags.whl`, PEP 427), an sdist's stem after its last hyphen
 * (`name-version.tar.gz`, PEP 625; older sdists keep the hyphens of their name).
 */
export function fileVersion(filename: string): string | undefined {
  if (filename.endsWith('.whl')) return filename.split('-')[1];
  const stem = /^(.+)\.(tar\.gz|zip)$/.exec(filename)?.[1];
  return stem?.slice(stem.lastIndexOf('-') + 1) || undefined;
}

/**
 * When a release was uploaded: the earliest upload time among its files (a wheel for a new
 * Python can come years later), or undefined when the page lists none of its files with
 * a time it can read.
 */
export function releaseUploadedAt(page: ProjectPage, version: string): string | undefined {
  if (!valid(version)) return undefined;
  const times = page.files
    .filter((f) => {
      const v = fileVersion(f.filename);
      return f.uploadTime && !Number.isNaN(Date.parse(f.uploadTime)) && v !== undefined && valid(v) !== null && eq(v, version);
    })
    .map((f) => new Date(f.uploadTime!).toISOString());
  return times.sort()[0];
}
