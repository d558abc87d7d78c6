import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { call, until } from './helpers.ts';
import { REPO_ROOT } from '../deploy/local/paths.ts';

/** Fixture labs taken through workspaces and publication, as an author would. */
const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/labs');

/** Every file of a fixture lab as file_put operations, exactly as written. */
export function putAll(lab: string, edit: (p: string, text: string) => string = (_p, t) => t) {
  const dir = path.join(FIXTURES, lab);
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => {
    const p = path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/');
    return { kind: 'file_put', path: p, content: edit(p, readFileSync(path.join(dir, p), 'utf8')) };
  });
}

/** A workspace holding a fixture lab as its head revision; returns the change plan's findings too. */
export async function workspaceWith(key: string, title: string, lab: string, edit?: (p: string, t: string) => string) {
  const ws = (await call('POST', '/workspaces', { key, body: { title } })).body;
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: putAll(lab, edit) } });
  assert.equal(change.status, 200, change.text);
  assert.equal(change.body.status, 'ready', JSON.stringify(change.body.findings));
  const rev = await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } });
  assert.equal(rev.status, 200, rev.text);
  return { ws, revisionId: rev.body.revision_id as string, changeFindings: change.body.findings as any[] };
}

/** The head revision's lab.yaml of a workspace. */
export async function labYamlOf(key: string, workspaceId: string): Promise<string> {
  const ws = (await call('GET', `/workspaces/${workspaceId}`, { key })).body;
  return ws.revision.files.find((f: any) => f.path === 'lab.yaml').content;
}

/** The publication of a reference once it left `publishing` (GET /labs lists it with its findings). */
export async function publicationOf(key: string, reference: string) {
  return until(120000, async () => {
    const labs = (await call('GET', '/labs?limit=100', { key })).body.items as any[];
    const p = labs.flatMap((l) => l.publications.map((x: any) => ({ ...x, reference: `${l.namespace}/${l.name}@${x.version}` }))).find((x: any) => x.reference === reference);
    return p && p.status !== 'publishing' ? p : undefined;
  });
}

export const byCode = (findings: any[], code: string) => findings.filter((f) => f.code === code);
