import { findExecutable } from '../../activities/execution/sandbox.ts';
import { ensurePrerequisites, onPath } from './prerequisites.ts';

/**
 * A tool from a Debian package: on PATH already, or installed with apt-get when this
 * process is root (a fresh CI machine; see prerequisites.ts); null when neither (the
 * caller says what to install).
 */
export async function debianTool(executable: string, pkg: string, say: (l: string) => void): Promise<string | null> {
  await ensurePrerequisites([{ what: executable, packages: [pkg], present: onPath(executable) }], say).catch(() => undefined);
  return findExecutable(executable);
}
