import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Silico } from '../../client.ts';
import type { PetabImport, PetabImportPlan } from '../../resources/petab.ts';
import { EXIT, UsageError, table, type Out } from '../output.ts';

/** `silico petab plan|import|show`: a PEtab problem from a folder or one ZIP archive. */

export interface PetabFlags { title?: string; yaml?: string; license?: string; source?: string }

/** Every file under a folder, by its path relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/')).sort();
}

/** The prepare's body: the folder's files uploaded one by one, or the archive uploaded whole. */
async function planBody(client: Silico, problem: string, f: PetabFlags) {
  const info = await stat(problem).catch(() => null);
  if (!info) throw new UsageError(`${problem}: no such folder or archive`);
  const title = f.title ?? path.basename(problem).replace(/\.zip$/i, '');
  const common = { title, ...(f.yaml ? { yaml: f.yaml } : {}), ...(f.license ? { license: f.license } : {}), ...(f.source ? { source: f.source } : {}) };
  if (info.isFile()) return { ...common, archive_file_id: (await client.files.upload(problem)).file_id };
  const files = [];
  for (const p of await filesUnder(problem)) files.push({ path: p, file_id: (await client.files.upload(path.join(problem, p), { filename: path.basename(p) })).file_id });
  if (!files.length) throw new UsageError(`${problem} holds no files`);
  return { ...common, files };
}

function planText(plan: PetabImportPlan): string {
  const d = plan.design;
  return [
    `PEtab import plan ${plan.plan_id}  ${plan.status}  sha256 ${plan.plan_sha256}  expires ${plan.expires_at}`,
    `problem ${plan.problem.yaml} (${plan.problem.files.length} files)${plan.nominal?.nll === undefined ? '' : `  NLL at nominal ${plan.nominal.nll}`}`,
    d ? `design: ${d.estimated.length} of ${d.parameters.length} parameters estimated; ${d.observables.length} observables, ${d.conditions.length} conditions, ${d.measurements} measurements` : '',
    d ? table(d.parameters.filter((p) => p.estimate), ['id', 'scale', 'lower_bound', 'upper_bound', 'nominal_value']) : '',
    plan.findings.length ? table(plan.findings.map((x) => ({ ...x, where: x.location ? [x.location.file, x.location.row, x.location.column].filter((v) => v !== null).join(':') : x.path })), ['severity', 'code', 'where', 'message']) : '',
  ].filter(Boolean).join('\n');
}

const importText = (i: PetabImport) => [
  `PEtab import ${i.import_id}  ${i.title}  NLL at nominal ${i.nominal.nll}`,
  `lab ${i.lab_id}  workspace ${i.workspace_id}  revision ${i.revision_id}`,
  `dataset ${i.dataset_id} (the measurements)  design: ${i.design.estimated.length} estimated parameters`,
].join('\n');

export async function petabPlan(client: Silico, problem: string, flags: PetabFlags, out: Out): Promise<number> {
  const plan = await client.petab.prepareImport(await planBody(client, problem, flags));
  out.result(plan, () => planText(plan));
  return plan.status === 'ready' ? EXIT.ok : EXIT.usage;
}

/** Plans and, when the plan is ready, imports it: the flag is the approval. */
export async function petabImport(client: Silico, problem: string, flags: PetabFlags, out: Out): Promise<number> {
  const plan = await client.petab.prepareImport(await planBody(client, problem, flags));
  if (plan.status !== 'ready') {
    out.result(plan, () => planText(plan));
    return EXIT.usage;
  }
  out.note(planText(plan));
  const imported = await client.petab.executeImport({ plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 });
  out.result(imported, () => importText(imported));
  return EXIT.ok;
}

export async function petabShow(client: Silico, importId: string, out: Out): Promise<number> {
  const i = await client.petab.getImport(importId);
  out.result(i, () => importText(i));
  return EXIT.ok;
}
