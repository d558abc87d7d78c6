import path from 'node:path';
import { getExperiment, type ExperimentRow } from '../../storage/db/experiments.ts';
import { getPlan } from '../../storage/db/plans.ts';
import { getDataset } from '../../storage/db/datasets.ts';
import { getRun } from '../../storage/db/runs.ts';
import { getRevision, getWorkspace } from '../../storage/db/workspaces.ts';
import { studyPoints } from '../../storage/db/studies.ts';
import { blobKey } from '../../storage/objects.ts';
import { hashStoredObject } from '../../storage/objectHash.ts';
import { digestJson } from '../../storage/digest.ts';
import { checked, type CheckResult } from '../../storage/passportDocument.ts';
import { packageIntegrity } from './packageIntegrity.ts';
import type { CheckDeps } from './deps.ts';

type Link = { link: string; verified: boolean | null } & Record<string, unknown>;

const statusOf = (verified: Array<boolean | null>) => (verified.includes(false) ? 'failed' : verified.includes(true) ? 'passed' : 'unknown');

async function studyOf(deps: CheckDeps, experimentId: string): Promise<ExperimentRow> {
  return (await getExperiment(deps.db, experimentId))!;
}

/** package_integrity of a study: the tree of every workspace revision its runs execute, re-hashed now. */
export async function studyPackageIntegrity(deps: CheckDeps, experimentId: string): Promise<CheckResult> {
  const e = await studyOf(deps, experimentId);
  const revisions = [...new Map(e.arms.map((a) => [a.revision_id, a])).values()];
  const results = [];
  for (const a of revisions) {
    const r = await packageIntegrity(deps, { kind: 'workspace_revision', workspace_id: a.workspace_id, revision_id: a.revision_id });
    results.push({ workspace_id: a.workspace_id, revision_id: a.revision_id, status: r.status, evidence: r.evidence });
  }
  const status = results.some((r) => r.status === 'failed') ? 'failed' : results.every((r) => r.status === 'passed') ? 'passed' : 'unknown';
  return checked('package_integrity', status, { revisions: results });
}

/** artifact_hashes of a study: its stored files (analysis or comparison, and chart) streamed and hashed now. */
export async function studyFileHashes(deps: CheckDeps, experimentId: string): Promise<CheckResult> {
  const e = await studyOf(deps, experimentId);
  if (!e.artifacts.length) return checked('artifact_hashes', 'not_applicable', { reason: 'the study has stored no files yet (it stores them when its runs have ended)', files: [] });
  const rows = [];
  for (const f of e.artifacts) {
    const got = await hashStoredObject(deps.objects, blobKey(f.sha256), deps.beat);
    rows.push({ file_id: f.file_id, file_name: f.file_name, recorded_sha256: f.sha256, computed_sha256: got?.sha256 ?? null, size_bytes: f.size_bytes });
  }
  const bad = rows.filter((r) => r.computed_sha256 !== r.recorded_sha256).map((r) => r.file_id);
  return checked('artifact_hashes', bad.length ? 'failed' : 'passed', { files: rows, mismatched: bad });
}

/**
 * provenance_chain of a study: what is needed to redo its analysis, each part checked
 * against the records it joins. The approved design (method or optimizer, seed, ranges,
 * budget) against the plan it was opened from; the analysis libraries and their
 * versions; the dataset version a calibration fitted (its manifest digest and the
 * observation table's file against the registered version); every run, each checked to
 * have executed the study's lab with exactly its parameter set; and the lab's revision.
 */
export async function studyProvenance(deps: CheckDeps, accountId: string, experimentId: string): Promise<CheckResult> {
  const e = await studyOf(deps, experimentId);
  const links: Link[] = [];
  const plan = e.plan_id ? await getPlan(deps.db, e.plan_id, accountId) : undefined;
  const approved = (plan?.proposal as { design?: unknown } | undefined)?.design ?? null;
  links.push({
    link: 'study_design', kind: e.kind, plan_id: e.plan_id, design: e.design, design_sha256: e.design ? digestJson(e.design) : null,
    plan_sha256: plan?.plan_sha256 ?? null,
    // The design executed is the one approved: its digest equals that of the plan's design.
    verified: plan ? digestJson(approved) === digestJson(e.design) : null,
  });
  const found = e.analysis as { library_versions?: Record<string, string> } | null;
  // A PEtab calibration's numbers are the engine's, in the toolkit its lab runs in.
  const environment = e.design?.kind === 'petab_calibration' ? 'activities/petab/toolkit.lock' : 'activities/studies/analysis.lock';
  if (e.design) links.push({ link: 'analysis_libraries', versions: found?.library_versions ?? null, environment, verified: found?.library_versions ? true : null });
  if (e.design?.kind === 'petab_calibration') {
    const d = e.design;
    const rev = await getRevision(deps.db, e.arms[0]!.workspace_id, e.arms[0]!.revision_id);
    const root = path.posix.dirname(d.yaml);
    // Each file of the problem as imported is, byte for byte, the one in the lab the study ran.
    const files = d.files.map((f) => ({ path: f.path, sha256: f.sha256, lab_sha256: rev?.tree[path.posix.join(root, f.path)]?.sha256 ?? null }));
    links.push({
      link: 'petab_problem', import_id: d.import_id, yaml: d.yaml, files, seed: d.seed, optimizer: d.optimizer, starts: d.starts,
      verified: Boolean(rev) && files.every((f) => f.lab_sha256 === f.sha256),
    });
  }
  if (e.design?.kind === 'calibration') {
    const d = e.design.dataset;
    const ds = await getDataset(deps.db, d.dataset_id, accountId);
    const member = (ds?.manifest.members as Array<{ file_id: string; sha256: string }> | undefined)?.find((m) => m.file_id === d.member.file_id);
    links.push({
      link: 'study_dataset', dataset_id: d.dataset_id, name: d.name, version: d.version, manifest_sha256: d.manifest_sha256, member: d.member,
      recorded_manifest_sha256: ds?.manifest_sha256 ?? null, status: ds?.status ?? null,
      verified: Boolean(ds) && ds!.status === 'registered' && ds!.manifest_sha256 === d.manifest_sha256 && member?.sha256 === d.member.sha256,
    });
  }
  const base = e.arms[0]!;
  for (const p of await studyPoints(deps.db, experimentId)) {
    const run = await getRun(deps.db, p.run_id, accountId);
    const inputs = { ...base.inputs, ...p.params };
    links.push({
      link: 'study_run', index: p.idx, batch: p.batch, run_id: p.run_id, parameters: p.params, status: run?.status ?? null, seed: run?.seed ?? null,
      package_sha256: run?.package_sha256 ?? null, inputs_sha256: run ? digestJson(run.inputs) : null,
      verified: Boolean(run) && run!.package_sha256 === base.package_sha256 && digestJson(run!.inputs) === digestJson(inputs),
    });
  }
  for (const a of [...new Map(e.arms.map((x) => [x.revision_id, x])).values()]) {
    const ws = await getWorkspace(deps.db, a.workspace_id, accountId);
    const rev = ws && await getRevision(deps.db, ws.id, a.revision_id);
    links.push({ link: 'study_revision', workspace_id: a.workspace_id, revision_id: a.revision_id, package_sha256: a.package_sha256, verified: Boolean(rev) && a.package_sha256 === `sha256:${rev!.tree_sha256}` });
  }
  return checked('provenance_chain', statusOf(links.map((l) => l.verified)), { links });
}
