import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { createHttpClient } from './httpClient.ts';

/** A private workspace holding every file of a lab folder, at the revision that added them (made through the API). */
export async function labWorkspace(http: ReturnType<typeof createHttpClient>, dir: string, title: string): Promise<{ workspace_id: string; revision_id: string; lab_id: string }> {
  const ws = await http.json('POST', '/workspaces', { title });
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && !e.parentPath.includes('__pycache__'))
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
  const change = await http.json('POST', `/workspaces/${ws.workspace_id}/change-plans`, {
    base_revision_id: ws.head_revision_id, operations: files.map((f) => ({ kind: 'file_put', path: f, content: readFileSync(path.join(dir, f), 'utf8') })),
  });
  const rev = await http.json('POST', '/workspace-revisions', { plan_id: change.plan_id, plan_sha256: change.plan_sha256 });
  return { workspace_id: ws.workspace_id, revision_id: rev.revision_id, lab_id: ws.lab_id };
}
