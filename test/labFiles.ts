import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Every file of a lab folder (bytecode caches aside) as a workspace change's file_put operations, as written. */
export function labFileOperations(labDir: string): Array<{ kind: 'file_put'; path: string; content: string }> {
  return readdirSync(labDir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && !e.parentPath.includes('__pycache__')).map((e) => {
    const p = path.relative(labDir, path.join(e.parentPath, e.name)).split(path.sep).join('/');
    return { kind: 'file_put' as const, path: p, content: readFileSync(path.join(labDir, p), 'utf8') };
  });
}
