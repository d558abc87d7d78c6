import type { Db } from '../../storage/db/knex.ts';
import {
  applySessionChange, attachExternalSession, recordCompletion, recordSessionProgress, recordValidation, sessionWorkspace,
  type EvidenceBinding, type ProgressRow, type SessionRow, type Step,
} from '../../storage/db/sessions.ts';
import { createWorkspace } from '../../storage/db/workspaces.ts';
import { evaluateSession, missingForCompletion, type Validation } from './evidence.ts';

export type { EvidenceBinding, Requirement, Step, StepStatus } from '../../storage/db/sessions.ts';
export type { Validation } from './evidence.ts';

export interface Completion { object: 'session_completion'; complete: boolean; checked_at: string; missing: Array<{ kind: string; id: string | null; reason: string }> }

/**
 * The session workflow's writes to its read model (Postgres): each one a step the
 * workflow makes once, in its order, so what GET /sessions/{id} reads is what the
 * workflow decided.
 */
export function createSessionActivities(deps: { db: Db }) {
  return {
    async recordExternalSession(e: { session_id: string; provider: string; external_id: string; url: string | null }): Promise<void> {
      await attachExternalSession(deps.db, e);
    },
    async recordSessionChange(c: { sessionId: string; planId: string; version: number; contract?: SessionRow['contract']; executionPlan?: SessionRow['execution_plan'] }): Promise<boolean> {
      return applySessionChange(deps.db, c);
    },
    async recordSessionProgress(entries: Array<Omit<ProgressRow, 'recorded_at'>>, steps: Step[]): Promise<void> {
      await recordSessionProgress(deps.db, entries, steps);
    },
    /** Binds evidence and evaluates every requirement by reading the records it names. */
    async validateSession(sessionId: string, bind: EvidenceBinding[]): Promise<Validation> {
      return recordValidation(deps.db, sessionId, bind, (s) => evaluateSession(deps.db, s));
    },
    /** A fresh validation and what is missing; with nothing missing the session is completed. */
    async completeSession(sessionId: string): Promise<{ validation: Validation; completion: Completion }> {
      return recordCompletion(deps.db, sessionId, async (s) => {
        const validation = await evaluateSession(deps.db, s);
        const missing = missingForCompletion(s, validation);
        const completion: Completion = { object: 'session_completion', complete: missing.length === 0, checked_at: new Date().toISOString(), missing };
        return { validation, completion };
      });
    },
    /** The session's lab workspace, made once: a new private lab named from `title` under the naming rules. */
    async createSessionWorkspace(sessionId: string, title: string | null): Promise<{ workspaceId: string }> {
      const workspaceId = await sessionWorkspace(deps.db, sessionId, async (trx, s) => {
        const { workspace } = await createWorkspace(trx, { accountId: s.account_id, title: title ?? s.title, origin: { kind: 'session', session_id: s.id } });
        return workspace.id;
      });
      return { workspaceId };
    },
  };
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;
