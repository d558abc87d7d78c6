import path from 'node:path';
import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import type { ToolDef, ToolContext } from '../tools/tool.ts';
import { str, arr, obj, uuid, planExecute, id } from '../schemas/common.ts';
import { errors } from '../errors.ts';
import { petabImport, petabImportPlan } from './schemas.ts';
import { problemFiles, MAX_PROBLEM_FILES, type ProblemFiles } from './problemFiles.ts';
import { inspectionFindings, inspectProblem } from './inspect.ts';
import { petabLabFiles, PROBLEM_DIR } from './labFiles.ts';
import { createPlan, consumePlan, type Finding } from '../../storage/db/plans.ts';
import { approvedPlan, planUsed, planView, PLAN_TTL_SECONDS, resultOf } from '../plans.ts';
import { createWorkspace } from '../../storage/db/workspaces.ts';
import { insertFile } from '../../storage/db/files.ts';
import { insertDataset } from '../../storage/db/datasets.ts';
import { datasetManifest, type Member } from '../../storage/datasets.ts';
import { getPetabImport, insertPetabImport, type PetabDesign, type PetabImportRow } from '../../storage/db/petabImports.ts';
import { blobKey } from '../../storage/objects.ts';
import type { Tree } from '../../storage/trees.ts';
import { isoTime, newId, newUuid } from '../../storage/ids.ts';
import { CONTROL_TASK_QUEUE, datasetWorkflowId } from '../../kernel/workflowNames.ts';
import { datasetRegistrationWorkflow } from '../../workflows/datasetRegistration.ts';
import type { PetabInspection } from '../../activities/petab/activities.ts';

const problemFile = obj({
  path: str(1024, { minLength: 1, description: 'Its path in the problem, as the YAML names it (relative to the YAML\'s folder, or with that folder in front).' }),
  file_id: { ...uuid, description: 'An uploaded file (POST /files).' },
  content: { type: 'string', description: 'Its text, written inline.' },
}, ['path']);

export const petabTools: ToolDef[] = [
  {
    name: 'petab_import_prepare', scope: 'workspaces:write', readOnly: true,
    description: 'Check a PEtab problem (its YAML, tables and SBML, as files or one ZIP archive) with the petab library\'s lint and its value at nominal, and plan the lab, dataset and calibration design an import makes of it; nothing is created.',
    input: {
      body: obj({
        title: str(200, { minLength: 1 }),
        files: arr(problemFile, { minItems: 1, maxItems: MAX_PROBLEM_FILES }),
        archive_file_id: { ...uuid, description: 'One uploaded ZIP archive holding the problem.' },
        yaml: str(1024, { minLength: 1, description: 'The problem\'s YAML among the files (default: the only one that is a PEtab problem\'s).' }),
        source: str(500, { minLength: 1, description: 'Where the measurements come from, for their dataset (default: the import).' }),
        license: str(100, { minLength: 1, description: 'The measurements\' licence, for their dataset (default: unspecified).' }),
      }, ['title']),
    },
    output: petabImportPlan,
  },
  {
    name: 'petab_import_execute', scope: 'workspaces:write', readOnly: false, idempotent: true,
    description: 'After explicit user confirmation, import one exact plan: the lab (a workspace whose first revision simulates the SBML), the dataset of the measurements and the calibration design, all at once or none.',
    input: { body: planExecute },
    output: petabImport,
  },
  {
    name: 'petab_import_get', scope: 'workspaces:read', readOnly: true,
    description: 'Read one PEtab import: its problem files\' digests, the calibration design, the value at nominal, and the lab and dataset it made.',
    input: { path: { import_id: id('petab') } },
    output: petabImport,
  },
];

interface ImportProposal {
  title: string; yaml: string;
  problem_files: Array<{ path: string; sha256: string; size_bytes: number }>;
  measurement_files: string[];
  /** The lab's tree: what the object sweep keeps while the plan stands. */
  tree: Tree;
  design: PetabDesign | null;
  nominal: PetabInspection['nominal'];
  versions: Record<string, string>;
  dataset: { source: string; license: string };
}

function designOf(inspection: PetabInspection): PetabDesign | null {
  const p = inspection.problem;
  if (!p || inspection.error) return null;
  return {
    parameters: p.parameter_table, estimated: p.parameters, observables: p.observables, conditions: p.conditions,
    measurements: p.measurements, preequilibration: p.preequilibration,
  };
}

/** What the format allows and the engine does not read yet, said before anything runs. */
function formatFindings(problem: ProblemFiles): Finding[] {
  const findings: Finding[] = [];
  if (!/^1(\.\d+)*$/.test(problem.formatVersion)) {
    findings.push({ severity: 'blocking', code: 'petab_unsupported', path: problem.yaml, message: `${problem.yaml} is PEtab format_version ${problem.formatVersion}; imports read PEtab v1 (pyPESTO's importer for libroadrunner, the simulator here, takes v1 problems).` });
  }
  if (problem.sbml.length !== 1) {
    findings.push({ severity: 'blocking', code: 'petab_invalid', path: problem.yaml, message: `${problem.yaml} names ${problem.sbml.length} SBML models; a PEtab v1 problem has exactly one.` });
  }
  if (problem.outside.length) {
    findings.push({ severity: 'info', code: 'petab_file_outside', path: null, message: `Left out, being outside the YAML's folder: ${problem.outside.slice(0, 20).join(', ')}${problem.outside.length > 20 ? ', ...' : ''}.` });
  }
  return findings;
}

async function storeTree(ctx: ToolContext, files: Array<{ path: string; bytes: Buffer }>): Promise<Tree> {
  const tree: Tree = {};
  for (const f of files) tree[f.path] = { sha256: await ctx.deps.objects.putBlob(f.bytes), size: f.bytes.length };
  return tree;
}

const digests = (tree: Tree) => Object.entries(tree).sort(([a], [b]) => (a < b ? -1 : 1)).map(([p, f]) => ({ path: p, sha256: f.sha256, size_bytes: f.size }));

function importView(row: PetabImportRow) {
  return {
    object: 'petab_import', import_id: row.id, title: row.title, workspace_id: row.workspace_id, revision_id: row.revision_id, lab_id: row.lab_id,
    dataset_id: row.dataset_id, problem: { yaml: path.posix.relative(PROBLEM_DIR, row.yaml_path), files: row.files }, design: row.design,
    nominal: row.nominal, versions: row.versions, created_at: isoTime(row.created_at),
  };
}

function importNext(row: PetabImportRow) {
  return [
    { tool: 'workspace_get', description: 'Read the lab the problem became.', arguments: { workspace_id: row.workspace_id } },
    { tool: 'dataset_get', description: 'Read the dataset of the problem\'s measurements.', arguments: { dataset_id: row.dataset_id } },
  ];
}

const PETAB_HANDLERS: Record<string, ToolDef['handler']> = {
  async petab_import_prepare(input, ctx) {
    const problem = await problemFiles(ctx, input);
    const problemTree = await storeTree(ctx, [...problem.files].map(([p, bytes]) => ({ path: p, bytes })));
    const asGiven = (p: string) => (problem.root === '.' ? p : `${problem.root}/${p}`);
    const findings = formatFindings(problem);
    let inspection: PetabInspection | null = null;
    if (!findings.some((f) => f.severity === 'blocking')) {
      const answer = await inspectProblem(ctx, problemTree, problem.yaml);
      findings.push(...inspectionFindings(answer, asGiven));
      if (!('refused' in answer)) inspection = answer;
    }
    const design = inspection && !findings.some((f) => f.severity === 'blocking') ? designOf(inspection) : null;
    const lab = design && inspection?.problem
      ? petabLabFiles({ title: input.title, problem: inspection.problem, files: [...problem.files].map(([p, bytes]) => ({ path: p, bytes })), sbml: problem.sbml[0]! })
      : [];
    const tree = await storeTree(ctx, lab);
    const proposal: ImportProposal = {
      title: input.title, yaml: problem.yaml, problem_files: digests(problemTree), measurement_files: problem.measurements, tree,
      design, nominal: inspection?.nominal ?? null, versions: inspection?.versions ?? {},
      dataset: { source: input.source ?? `the PEtab problem ${input.title}, imported`, license: input.license ?? 'unspecified' },
    };
    const plan = await createPlan(ctx.deps.db, { accountId: ctx.caller.account.id, kind: 'petab_import', proposal: proposal as never, findings, ttlSeconds: PLAN_TTL_SECONDS });
    return {
      body: {
        object: 'petab_import_plan', ...planView(plan), title: input.title, problem: { yaml: problem.yaml, files: proposal.problem_files },
        design, nominal: proposal.nominal, versions: proposal.versions, lab: { files: digests(tree) },
      },
      next_actions: plan.status === 'ready'
        ? [{ tool: 'petab_import_execute', description: 'After the user confirms, import exactly this plan: the lab, the dataset and the design.', arguments: { plan_id: plan.id, plan_sha256: plan.plan_sha256 } }]
        : [],
    };
  },

  async petab_import_execute(input, ctx) {
    const plan = await approvedPlan(ctx.deps.db, ctx.caller.account.id, 'petab_import', input.plan_id, input.plan_sha256);
    const p = plan.proposal as unknown as ImportProposal;
    const accountId = ctx.caller.account.id;
    const importId = newId('petab');
    const row = await ctx.deps.db.transaction(async (trx) => {
      if (!await consumePlan(trx, plan.id, `petab_import:${importId}`)) throw planUsed(await resultOf(ctx.deps.db, accountId, plan.id));
      const { workspace, revision, labName } = await createWorkspace(trx, { accountId, title: p.title, tree: p.tree, origin: { kind: 'petab_import', import_id: importId, plan_id: plan.id } });
      // The measurement tables become the account's files (the blobs the lab holds them as), members of one dataset.
      const members: Member[] = [];
      for (const m of p.measurement_files) {
        const f = p.tree[path.posix.join(PROBLEM_DIR, m)];
        if (!f) throw new Error(`the plan's tree lacks the measurement table ${m}`);
        const fileId = newUuid();
        await insertFile(trx, {
          id: fileId, account_id: accountId, name: path.posix.basename(m), format: 'tsv', content_type: 'text/tab-separated-values',
          size_bytes: f.size, sha256: f.sha256, object_key: blobKey(f.sha256), origin: { kind: 'petab_import', import_id: importId, path: m },
        });
        members.push({ file_id: fileId, sha256: f.sha256, size_bytes: f.size, sample_id: m, group_id: labName, role: 'table', split: 'train' });
      }
      const name = `${labName}-measurements`;
      const { manifest, manifest_sha256 } = datasetManifest({ name, source: p.dataset.source, license: p.dataset.license, attribution: p.title, annotation_version: `petab ${p.versions.petab ?? ''}`.trim(), members });
      const datasetId = newId('ds');
      const dataset = await insertDataset(trx, { id: datasetId, account_id: accountId, name, manifest, manifest_sha256 });
      if (!dataset) throw errors.conflict('revision_conflict', 'Another version of this dataset was registered at the same moment; send the request again.');
      const saved = await insertPetabImport(trx, {
        id: importId, account_id: accountId, plan_id: plan.id, title: p.title, workspace_id: workspace.id, revision_id: revision.id, lab_id: workspace.lab_id,
        dataset_id: datasetId, yaml_path: path.posix.join(PROBLEM_DIR, p.yaml), design: p.design!, files: p.problem_files, versions: p.versions, nominal: p.nominal!,
      });
      // Started last, before the import commits: if Temporal cannot take it, nothing was
      // imported, the answer is 503, and a retry with the same Idempotency-Key imports it.
      await ctx.deps.temporal.startWorkflow(datasetRegistrationWorkflow, {
        taskQueue: CONTROL_TASK_QUEUE, workflowId: datasetWorkflowId(datasetId), args: [{ datasetId }],
        ...workflowMetadata(ctx.deps.config.baseUrl, {
          attributes: { account: accountId, kind: 'dataset', ref: name },
          summary: `registration of dataset ${name} v${dataset.version} (${members.length} members) for ${accountId}`,
          facts: [`Dataset version ${datasetId}: the measurement tables of PEtab import ${importId}, each hashed again from the store.`],
          resource: `/datasets/${datasetId}`,
        }),
      });
      return saved;
    });
    return { body: importView(row), next_actions: importNext(row) };
  },

  async petab_import_get(input, ctx) {
    const row = await getPetabImport(ctx.deps.db, input.import_id, ctx.caller.account.id);
    if (!row) throw errors.notFound('petab_import_not_found', 'PEtab import', 'import_id');
    return { body: importView(row), next_actions: importNext(row) };
  },
};

for (const t of petabTools) {
  const h = PETAB_HANDLERS[t.name];
  if (h) t.handler = h;
}
