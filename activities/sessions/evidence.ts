import type { Db } from '../../storage/db/knex.ts';
import { getRun } from '../../storage/db/runs.ts';
import { getPassport, listPassportKeys } from '../../storage/db/passports.ts';
import { getFile } from '../../storage/db/files.ts';
import { getDataset } from '../../storage/db/datasets.ts';
import { getExperiment } from '../../storage/db/experiments.ts';
import { getBiologyResource } from '../../storage/db/biologyResources.ts';
import { evidenceOfProgress, type Requirement, type SessionRow } from '../../storage/db/sessions.ts';
import { verifyPassport } from '../../storage/passportDocument.ts';
import { EVIDENCE_REF_PATTERN, type EvidenceKind } from '../../kernel/evidence.ts';

const REF = new RegExp(EVIDENCE_REF_PATTERN);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type Verdict = 'satisfied' | 'unsatisfied' | 'unknown';

/** One piece of evidence as read now: where it was attached, what the record says, and the verdict. */
export interface EvidenceCheck { ref: string; attached_by: string; status: Verdict; reason: string; record: Record<string, unknown> | null }
export interface RequirementResult { requirement_id: string; text: string; evidence_kind: EvidenceKind; status: Verdict; reason: string; evidence: EvidenceCheck[] }
export interface Validation {
  object: 'session_validation';
  evaluated_at: string;
  session_version: number;
  progress_count: number;
  summary: Record<Verdict, number>;
  requirements: RequirementResult[];
  caveat: string;
}

export const VALIDATION_CAVEAT = 'Each requirement is checked against the records its evidence names (owned, existing, of the right kind, in a final state, digests as pinned). A completed run shows the lab ran to completion under its contract; it is not a scientific validation of what it computed.';

type Reading = Omit<EvidenceCheck, 'ref' | 'attached_by'>;
const verdict = (status: Verdict, reason: string, record: Record<string, unknown> | null = null): Reading => ({ status, reason, record });

function pinned(ref: string, actual: string, what: string): Reading | null {
  const pin = ref.split('@')[1];
  return pin && pin !== actual ? verdict('unsatisfied', `the ${what} is ${actual}, not the pinned ${pin}`, { sha256: actual }) : null;
}

/** Reads the record an evidence reference names, as the session's account sees it. */
async function read(db: Db, accountId: string, ref: string): Promise<Reading> {
  if (!REF.test(ref)) return verdict('unsatisfied', 'not an evidence reference (<kind>:<id>[@sha256] or note:<text>)');
  const kind = ref.slice(0, ref.indexOf(':')) as EvidenceKind;
  const body = ref.slice(kind.length + 1);
  if (kind === 'note') return verdict('satisfied', 'a note is recorded as stated; nothing checks it', { text: body });
  const id = body.split('@')[0]!;
  const missing = verdict('unsatisfied', `no ${kind} ${id} of this account`);
  switch (kind) {
    case 'run': {
      const run = UUID.test(id) ? await getRun(db, id, accountId) : undefined;
      if (!run) return missing;
      const record = { status: run.status, resolved_ref: run.resolved_ref, package_sha256: run.package_sha256, finished_at: run.finished_at };
      if (run.status === 'completed') return verdict('satisfied', 'the run completed', record);
      if (['queued', 'running', 'cancelling'].includes(run.status)) return verdict('unknown', `the run is ${run.status}; it has not ended`, record);
      return verdict('unsatisfied', `the run ended ${run.status}`, record);
    }
    case 'passport': {
      const p = await getPassport(db, id, accountId);
      if (!p) return missing;
      const v = verifyPassport(p.document, await listPassportKeys(db));
      const doc = JSON.parse(p.document) as { subject: unknown; checks: Array<{ check: string; status: string }> };
      const record = { key_id: v.key_id, signature_valid: v.valid, subject: doc.subject, checks: Object.fromEntries(doc.checks.map((c) => [c.check, c.status])) };
      if (!v.valid) return verdict('unsatisfied', v.reason!, record);
      const failed = doc.checks.filter((c) => c.status === 'failed').map((c) => c.check);
      return failed.length ? verdict('unsatisfied', `the signature verifies, and these checks failed: ${failed.join(', ')}`, record) : verdict('satisfied', 'the signature verifies and no check failed', record);
    }
    case 'file': {
      const f = UUID.test(id) ? await getFile(db, id, accountId) : undefined;
      if (!f) return missing;
      return pinned(ref, f.sha256, 'file\'s sha256') ?? verdict('satisfied', 'the file exists with this digest', { name: f.name, sha256: f.sha256, size_bytes: f.size_bytes });
    }
    case 'dataset': {
      const d = await getDataset(db, id, accountId);
      if (!d) return missing;
      const record = { name: d.name, version: d.version, status: d.status, manifest_sha256: d.manifest_sha256 };
      if (d.status === 'registering') return verdict('unknown', 'the dataset is still registering', record);
      if (d.status === 'failed') return verdict('unsatisfied', 'the dataset failed registration', record);
      return pinned(ref, d.manifest_sha256, 'dataset\'s manifest_sha256') ?? verdict('satisfied', 'the dataset is registered with this manifest digest', record);
    }
    case 'experiment': {
      const e = await getExperiment(db, id, accountId);
      if (!e) return missing;
      const record = { name: e.name, status: e.status, completed_at: e.completed_at };
      if (e.status === 'running') return verdict('unknown', 'the study is still running', record);
      return e.completed_at ? verdict('satisfied', 'the study completed', record) : verdict('unsatisfied', 'the study was closed before it completed', record);
    }
    case 'resource': {
      const r = await getBiologyResource(db, id, accountId);
      if (!r) return missing;
      return pinned(ref, r.sha256, 'resource\'s sha256') ?? verdict('satisfied', 'the resource is stored with this digest', { source_id: r.source_id, record_id: r.record_id, sha256: r.sha256, retrieved_at: r.retrieved_at });
    }
  }
}

/** A requirement is satisfied by any one good piece of evidence; undecided ones keep it unknown. */
function overall(checks: EvidenceCheck[]): Pick<RequirementResult, 'status' | 'reason'> {
  if (!checks.length) return { status: 'unsatisfied', reason: 'no evidence is attached' };
  const good = checks.find((c) => c.status === 'satisfied');
  if (good) return { status: 'satisfied', reason: `${good.ref}: ${good.reason}` };
  const open = checks.find((c) => c.status === 'unknown');
  if (open) return { status: 'unknown', reason: `${open.ref}: ${open.reason}` };
  return { status: 'unsatisfied', reason: checks.map((c) => `${c.ref}: ${c.reason}`).join('; ') };
}

/**
 * Evaluates each requirement of a session's contract against its evidence: what was
 * bound to it by name, and what progress entries attached of its kind. Each record is
 * read once, as the session's account sees it.
 */
export async function evaluateSession(db: Db, s: SessionRow): Promise<Validation> {
  const requirements: Requirement[] = s.contract?.requirements ?? [];
  const fromProgress = await evidenceOfProgress(db, s.id);
  const readings = new Map<string, Promise<Reading>>();
  const readOnce = (ref: string) => readings.get(ref) ?? readings.set(ref, read(db, s.account_id, ref)).get(ref)!;
  const results = await Promise.all(requirements.map(async (r): Promise<RequirementResult> => {
    const attached = [
      ...(s.evidence ?? []).filter((e) => e.requirement_id === r.id).map((e) => ({ ref: e.ref, attached_by: 'validation' })),
      ...fromProgress.filter((e) => e.ref.startsWith(`${r.evidence_kind}:`)).map((e) => ({ ref: e.ref, attached_by: `progress:${e.seq}` })),
    ];
    const seen = new Set<string>();
    const checks: EvidenceCheck[] = [];
    for (const a of attached) {
      if (seen.has(a.ref)) continue;
      seen.add(a.ref);
      const kind = a.ref.slice(0, a.ref.indexOf(':'));
      const reading = kind === r.evidence_kind ? await readOnce(a.ref) : verdict('unsatisfied', `a ${kind} is not the ${r.evidence_kind} this requirement asks for`);
      checks.push({ ref: a.ref, attached_by: a.attached_by, ...reading });
    }
    return { requirement_id: r.id, text: r.text, evidence_kind: r.evidence_kind, ...overall(checks), evidence: checks };
  }));
  const summary = { satisfied: 0, unsatisfied: 0, unknown: 0 };
  for (const r of results) summary[r.status] += 1;
  return {
    object: 'session_validation', evaluated_at: new Date().toISOString(), session_version: s.version, progress_count: s.progress_count,
    summary, requirements: results, caveat: VALIDATION_CAVEAT,
  };
}

/** What stands between a session and its completion, from a fresh validation. */
export function missingForCompletion(s: SessionRow, v: Validation): Array<{ kind: string; id: string | null; reason: string }> {
  const missing: Array<{ kind: string; id: string | null; reason: string }> = [];
  if (!s.contract) missing.push({ kind: 'contract', id: null, reason: 'no contract has been applied' });
  if (!s.execution_plan) missing.push({ kind: 'execution_plan', id: null, reason: 'no execution plan has been applied' });
  for (const r of v.requirements) if (r.status !== 'satisfied') missing.push({ kind: 'requirement', id: r.requirement_id, reason: `${r.status}: ${r.reason}` });
  for (const st of s.execution_plan?.steps ?? []) {
    if (st.status !== 'done') missing.push({ kind: 'step', id: st.id, reason: st.status === 'skipped' ? 'skipped, not done: apply an execution plan without it to complete without it' : `${st.status}, not done` });
  }
  return missing;
}
