import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { getRun } from '../../storage/db/runs.ts';
import { getRevision, getWorkspace } from '../../storage/db/workspaces.ts';
import { activePassportKey, discardEvidence, getPassport, insertPassport, stageEvidence, stagedEvidence } from '../../storage/db/passports.ts';
import { readKeyringKey } from '../../storage/passportKeys.ts';
import { CHECKS, checked, notApplicable, signPassport, type CheckResult, type PassportSubject } from '../../storage/passportDocument.ts';
import { packageIntegrity } from './packageIntegrity.ts';
import { artifactHashes } from './artifactHashes.ts';
import { contractChecks } from './contractChecks.ts';
import { provenanceChain } from './provenance.ts';
import { reproducibility } from './reproducibility.ts';
import type { CheckDeps } from './deps.ts';
import { studyFileHashes, studyPackageIntegrity, studyProvenance } from './study.ts';
import { getExperiment } from '../../storage/db/experiments.ts';
import { digestJson } from '../../storage/digest.ts';

/** What a passport's workflow carries: identifiers only. */
export interface PassportArgs { passportId: string; accountId: string; subject: PassportSubject }

/** Why the run-only checks do not apply to a revision subject, or a study. */
const RUN_ONLY = 'a workspace revision has not executed: this check is about a run';
const PER_RUN = 'a study is checked here as a whole; each of its runs (provenance_chain lists them) has a passport of its own';

/**
 * A passport's activities (control queue). Each check re-derives its evidence from
 * Postgres and the object store and stages it under the passport's id (a claim check:
 * evidence never passes through the workflow); the seal signs what was staged with the
 * active key from the keyring and stores the passport exactly as signed.
 */
export function createPassportActivities(deps: { db: Db; objects: ObjectStore; keysDir: string | null }) {
  const checkDeps = (): CheckDeps => ({ db: deps.db, objects: deps.objects, beat: () => Context.current().heartbeat() });
  const stage = async (a: PassportArgs, results: CheckResult | CheckResult[]) => stageEvidence(deps.db, a.passportId, [results].flat());
  const forRun = (a: PassportArgs, f: (runId: string) => Promise<CheckResult | CheckResult[]>, names: Array<CheckResult['check']>) =>
    a.subject.kind === 'run' ? f(a.subject.run_id) : names.map((n) => notApplicable(n, a.subject.kind === 'experiment' ? PER_RUN : RUN_ONLY));
  return {
    /** Streams the package or tree bytes (heartbeats). */
    async passportPackageIntegrity(a: PassportArgs): Promise<void> {
      Context.current().heartbeat();
      await stage(a, a.subject.kind === 'experiment' ? await studyPackageIntegrity(checkDeps(), a.subject.experiment_id) : await packageIntegrity(checkDeps(), a.subject));
    },
    /** Streams every artifact (heartbeats). */
    async passportArtifactHashes(a: PassportArgs): Promise<void> {
      Context.current().heartbeat();
      await stage(a, a.subject.kind === 'experiment' ? await studyFileHashes(checkDeps(), a.subject.experiment_id) : await forRun(a, (id) => artifactHashes(checkDeps(), id), ['artifact_hashes']));
    },
    async passportContracts(a: PassportArgs): Promise<void> {
      await stage(a, await forRun(a, (id) => contractChecks(checkDeps(), id), ['input_contract', 'execution_completed', 'output_contract']));
    },
    async passportProvenance(a: PassportArgs): Promise<void> {
      await stage(a, a.subject.kind === 'experiment' ? await studyProvenance(checkDeps(), a.accountId, a.subject.experiment_id) : await provenanceChain(checkDeps(), a.accountId, a.subject));
    },
    async passportReproducibility(a: PassportArgs): Promise<void> {
      await stage(a, await forRun(a, (id) => reproducibility(checkDeps(), id), ['reproducibility']));
    },

    /** Signs the staged checks with the active key and stores the passport once; returns its id. */
    async sealPassport(a: PassportArgs): Promise<string> {
      if (await getPassport(deps.db, a.passportId)) return a.passportId;
      const active = await activePassportKey(deps.db);
      const key = active && deps.keysDir ? await readKeyringKey(deps.keysDir, active.key_id) : undefined;
      if (!key) {
        // Configuration, not a passing fault: retrying cannot sign.
        throw ApplicationFailure.nonRetryable(`the signing key ${active?.key_id ?? '(none recorded)'} is not in this worker's passport keyring`, 'passport_key_unavailable');
      }
      const staged = new Map((await stagedEvidence<CheckResult>(deps.db, a.passportId)).map((c) => [c.check, c]));
      const checks = CHECKS.map((name) => staged.get(name) ?? checked(name, 'unknown', { reason: 'no evidence was recorded for this check' }));
      const passport = signPassport({
        object: 'passport', passport_id: a.passportId, subject: await subjectView(deps.db, a), checks, created_at: new Date().toISOString(), key_id: key.keyId,
      }, key);
      const s = a.subject;
      await insertPassport(deps.db, {
        id: a.passportId, account_id: a.accountId, subject_kind: s.kind, run_id: s.kind === 'run' ? s.run_id : null,
        workspace_id: s.kind === 'workspace_revision' ? s.workspace_id : null, revision_id: s.kind === 'workspace_revision' ? s.revision_id : null,
        experiment_id: s.kind === 'experiment' ? s.experiment_id : null,
        key_id: key.keyId, document: JSON.stringify(passport), created_at: passport.created_at,
      });
      return a.passportId;
    },

    /** A build that cannot finish leaves no staged evidence behind. */
    async discardPassport(a: PassportArgs): Promise<void> {
      await discardEvidence(deps.db, a.passportId);
    },
  };
}

/** The subject as a passport names it: its identifiers and the digest of what it is. */
async function subjectView(db: Db, a: PassportArgs): Promise<Record<string, unknown>> {
  if (a.subject.kind === 'run') {
    const run = await getRun(db, a.subject.run_id, a.accountId);
    return { kind: 'run', run_id: a.subject.run_id, resolved_ref: run?.resolved_ref ?? null, package_sha256: run?.package_sha256 ?? null };
  }
  if (a.subject.kind === 'experiment') {
    const e = await getExperiment(db, a.subject.experiment_id, a.accountId);
    return { kind: 'experiment', experiment_id: a.subject.experiment_id, study_kind: e?.kind ?? 'arms', design_sha256: e?.design ? digestJson(e.design) : null };
  }
  const ws = await getWorkspace(db, a.subject.workspace_id, a.accountId);
  const rev = ws && await getRevision(db, ws.id, a.subject.revision_id);
  return { kind: 'workspace_revision', workspace_id: a.subject.workspace_id, revision_id: a.subject.revision_id, tree_sha256: rev?.tree_sha256 ?? null };
}

export type PassportActivities = ReturnType<typeof createPassportActivities>;
