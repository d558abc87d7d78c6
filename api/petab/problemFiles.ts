import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { ToolContext } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { ownedFileBytes } from '../files/ownedBytes.ts';
import { ArchiveError, readZipFiles } from '../../storage/archives.ts';
import { normalizePath, PathError, MAX_TREE_BYTES } from '../../storage/trees.ts';

/** The most files a problem may bring (the collection's largest has a few dozen). */
export const MAX_PROBLEM_FILES = 500;

export interface ProblemRequest {
  files?: Array<{ path: string; file_id?: string; content?: string }>;
  archive_file_id?: string;
  yaml?: string;
}

/** A problem as it came: its files relative to its YAML's folder, and what its YAML says. */
export interface ProblemFiles {
  /** The YAML's name in its folder. */
  yaml: string;
  /** That folder among the files as given ('.' at their top). */
  root: string;
  files: Map<string, Buffer>;
  /** The files given outside the YAML's folder, left out. */
  outside: string[];
  formatVersion: string;
  /** The SBML files the YAML names (PEtab v1 takes one). */
  sbml: string[];
  /** The measurement tables the YAML names. */
  measurements: string[];
}

function normalized(p: string, param: string): string {
  try {
    return normalizePath(p);
  } catch (err) {
    if (err instanceof PathError) throw errors.validation(err.code, err.message, param);
    throw err;
  }
}

/** The files of the request, by their normalized paths: uploaded, written inline, or one ZIP archive's. */
async function gather(ctx: ToolContext, input: ProblemRequest): Promise<{ files: Map<string, Buffer>; param: string }> {
  if ((input.files === undefined) === (input.archive_file_id === undefined)) {
    throw errors.validation('parameter_invalid_combination', 'Give the problem either as `files` or as one `archive_file_id`.', input.files ? 'archive_file_id' : 'files');
  }
  const files = new Map<string, Buffer>();
  if (input.archive_file_id !== undefined) {
    const archive = await ownedFileBytes(ctx, input.archive_file_id, 'archive_file_id');
    let members: Map<string, Buffer>;
    try {
      members = await readZipFiles(archive, { totalBytes: MAX_TREE_BYTES, members: MAX_PROBLEM_FILES });
    } catch (err) {
      if (err instanceof ArchiveError) throw errors.validation(err.kind === 'not_an_archive' ? 'archive_invalid' : err.kind === 'member_too_large' ? 'tree_too_large' : 'archive_invalid', err.message, 'archive_file_id');
      throw err;
    }
    // Archivers' own bookkeeping is not the problem's.
    for (const [p, bytes] of members) if (!/(^|\/)(__MACOSX|\.DS_Store)(\/|$)/.test(p)) files.set(normalized(p, 'archive_file_id'), bytes);
    return { files, param: 'archive_file_id' };
  }
  let total = 0;
  for (const [i, f] of input.files!.entries()) {
    const at = `files[${i}]`;
    if ((f.file_id === undefined) === (f.content === undefined)) throw errors.validation('parameter_invalid_combination', 'Each file takes exactly one of file_id or content.', `${at}.content`);
    const p = normalized(f.path, `${at}.path`);
    if (files.has(p)) throw errors.validation('path_exists', `${p} is given twice.`, `${at}.path`);
    const bytes = f.file_id !== undefined ? await ownedFileBytes(ctx, f.file_id, `${at}.file_id`) : Buffer.from(f.content!, 'utf8');
    total += bytes.length;
    if (total > MAX_TREE_BYTES) throw errors.validation('tree_too_large', `A problem's files may hold at most ${MAX_TREE_BYTES} bytes together.`, 'files');
    files.set(p, bytes);
  }
  return { files, param: 'files' };
}

/** A file's YAML as a mapping, or null when it is not one. */
function yamlMapping(bytes: Buffer): Record<string, any> | null {
  try {
    const v = parseYaml(bytes.toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

const isPetabYaml = (doc: Record<string, any> | null) => Boolean(doc && doc.format_version !== undefined && (doc.problems !== undefined || doc.parameter_file !== undefined));

/**
 * The problem a request brings: its files, and the YAML that ties them together (the one
 * named, or the only YAML that is a PEtab problem's), with every file re-rooted at that
 * YAML's folder, where PEtab resolves the paths the YAML names.
 */
export async function problemFiles(ctx: ToolContext, input: ProblemRequest): Promise<ProblemFiles> {
  const { files, param } = await gather(ctx, input);
  let yamlPath: string;
  if (input.yaml !== undefined) {
    yamlPath = normalized(input.yaml, 'yaml');
    if (!files.has(yamlPath)) throw errors.validation('path_not_found', `No file ${yamlPath} among the problem's files.`, 'yaml');
  } else {
    const candidates = [...files.keys()].filter((p) => /\.ya?ml$/i.test(p) && isPetabYaml(yamlMapping(files.get(p)!))).sort();
    if (!candidates.length) throw errors.validation('petab_yaml_missing', 'None of the files is a PEtab problem\'s YAML (a mapping with format_version and problems); name it with `yaml`.', param);
    if (candidates.length > 1) throw errors.validation('petab_yaml_ambiguous', `Several files are PEtab problems' YAML (${candidates.join(', ')}); name the one to import with \`yaml\`.`, 'yaml', { candidates });
    yamlPath = candidates[0]!;
  }
  const doc = yamlMapping(files.get(yamlPath)!);
  if (!isPetabYaml(doc)) throw errors.validation('petab_yaml_invalid', `${yamlPath} is not a PEtab problem's YAML: a mapping with format_version and problems.`, 'yaml');
  const root = path.posix.dirname(yamlPath);
  const inRoot = (p: string) => root === '.' || p.startsWith(`${root}/`);
  const rooted = new Map([...files].filter(([p]) => inRoot(p)).map(([p, b]) => [root === '.' ? p : p.slice(root.length + 1), b]));
  const named = (key: string) => (Array.isArray(doc!.problems) ? doc!.problems : []).flatMap((sub: any) => (Array.isArray(sub?.[key]) ? sub[key] : [])).map((f: unknown) => path.posix.normalize(String(f)));
  return {
    yaml: path.posix.basename(yamlPath), root, files: rooted, outside: [...files.keys()].filter((p) => !inRoot(p)),
    formatVersion: String(doc!.format_version), sbml: named('sbml_files'), measurements: named('measurement_files'),
  };
}
