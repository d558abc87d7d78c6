import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { call, uploadFile } from './helpers.ts';
import { REPO_ROOT } from '../deploy/local/paths.ts';

/** The PEtab benchmark problems of the public collection kept as fixtures (test/fixtures/petab/SOURCES.md). */
export const BENCHMARK = path.join(REPO_ROOT, 'test/fixtures/petab/benchmark');

/** Set by npm test: without the toolkit no PEtab problem can be looked at. */
export const petabSkip = !process.env.SILICO_PETAB_PYTHON && 'the PEtab toolkit (SILICO_PETAB_PYTHON) is set up by npm test';

/** A problem's files as the collection has them (SOURCE.md, which names their source, is the fixture's, not the problem's). */
export async function problemOf(name: string): Promise<Array<{ path: string; bytes: Buffer }>> {
  const dir = path.join(BENCHMARK, name);
  return Promise.all((await readdir(dir)).filter((f) => f !== 'SOURCE.md').sort().map(async (f) => ({ path: f, bytes: await readFile(path.join(dir, f)) })));
}

/** A benchmark problem imported through the service from uploaded files, its plan approved as it stands: the import record. */
export async function importProblem(key: string, name: string): Promise<Record<string, any>> {
  const uploaded = await Promise.all((await problemOf(name)).map(async (f) => {
    const res = await uploadFile(key, f.path, f.bytes);
    assert.equal(res.status, 200, res.text);
    return { path: f.path, file_id: res.body.file_id as string };
  }));
  const plan = await call('POST', '/petab-import-plans', { key, body: { title: name, files: uploaded } });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const imported = await call('POST', '/petab-imports', { key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(imported.status, 201, imported.text);
  return imported.body;
}

/** pyPESTO in-process on the same problem (test/differential/petab_pypesto.py): its starts first, then its end points, then (given `profiles`) its profiles. */
export function pypesto(yaml: string, seed: number, starts: number, profiles?: { parameters: string[]; options: Record<string, number> }): {
  starts: Promise<{ parameters: string[]; starts: number[][] }>; ends: Promise<{ ends: Array<{ start: number; fval: number; x: number[] }> }>;
  profiles: Promise<{ profiles: Array<{ parameter: string; low: number; high: number }> }>;
} {
  const child = spawn(process.env.SILICO_PETAB_PYTHON!, [path.join(REPO_ROOT, 'test/differential/petab_pypesto.py'), yaml, String(seed), String(starts), ...(profiles ? [JSON.stringify(profiles)] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const seen: Array<Record<string, any>> = [];
  const waiters: Array<() => void> = [];
  lines.on('line', (l) => { seen.push(JSON.parse(l)); waiters.splice(0).forEach((w) => w()); });
  const nth = (n: number) => new Promise<any>((resolve, reject) => {
    const check = () => (seen.length > n ? resolve(seen[n]) : waiters.push(check));
    child.once('exit', (code) => seen.length > n || reject(new Error(`pyPESTO exited with ${code}`)));
    check();
  });
  return { starts: nth(0), ends: nth(1), profiles: nth(2) };
}
