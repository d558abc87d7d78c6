import path from 'node:path/posix';
import { digestJson } from './digest.ts';

/** A revision's files: normalized relative POSIX path → content address and size. */
export type Tree = Record<string, { sha256: string; size: number }>;

export const MAX_PATH_BYTES = 255;
export const MAX_TREE_BYTES = 64 * 1024 * 1024;

export class PathError extends Error {
  readonly code: 'path_invalid' | 'path_absolute' | 'path_traversal' | 'path_too_long';
  constructor(code: 'path_invalid' | 'path_absolute' | 'path_traversal' | 'path_too_long', message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * The one normal form of a workspace path: relative, `/`-separated, no `.`/`..` segments,
 * no empty segments, no NUL or backslash, at most 255 UTF-8 bytes. Anything else is
 * refused with the precise reason, never silently rewritten into another path.
 */
export function normalizePath(p: string): string {
  if (typeof p !== 'string' || p.length === 0) throw new PathError('path_invalid', 'A path must be a non-empty string.');
  if (p.includes('\0') || p.includes('\\')) throw new PathError('path_invalid', 'A path may not contain NUL or backslash characters.');
  if (p.startsWith('/')) throw new PathError('path_absolute', `Absolute paths are not allowed: ${p}`);
  const parts = p.split('/');
  if (parts.some((s) => s === '..')) throw new PathError('path_traversal', `Paths may not leave the workspace: ${p}`);
  if (parts.some((s) => s === '' || s === '.')) throw new PathError('path_invalid', `Paths may not have empty or "." segments: ${p}`);
  const norm = path.normalize(p);
  if (Buffer.byteLength(norm) > MAX_PATH_BYTES) throw new PathError('path_too_long', `Paths are at most ${MAX_PATH_BYTES} bytes.`);
  return norm;
}

/** SHA-256 of the tree's canonical JSON: equal trees, equal digests. */
export function treeDigest(tree: Tree): string {
  return digestJson(tree);
}

export function treeSize(tree: Tree): number {
  return Object.values(tree).reduce((s, f) => s + f.size, 0);
}
