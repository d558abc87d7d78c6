import { errors } from '../errors.ts';
import type { ToolContext } from '../tools/tool.ts';
import { getRun } from '../../storage/db/runs.ts';
import { getRevision, getWorkspace } from '../../storage/db/workspaces.ts';
import { getLabById } from '../../storage/db/labs.ts';
import { getExperiment } from '../../storage/db/experiments.ts';
import type { PassportSubject } from '../../storage/passportDocument.ts';

const PARAMS = ['run_id', 'experiment_id', 'workspace_id', 'revision_id', 'passport_id'] as const;
const ACCEPTED = [['run_id'], ['experiment_id'], ['workspace_id', 'revision_id'], ['passport_id']];

/**
 * What GET /passports was asked for: exactly one of a run, a study, a workspace revision
 * or a stored passport. Any other combination is a 422 naming the parameters given.
 */
export function passportRequest(input: Record<string, unknown>): { passportId: string } | { subject: PassportSubject } {
  const given = PARAMS.filter((p) => input[p] !== undefined && input[p] !== null);
  const shape = ACCEPTED.find((a) => a.length === given.length && a.every((p, i) => given[i] === p));
  if (!shape) {
    const named = given.length ? given.join(', ') : 'none';
    throw errors.validation('parameter_invalid_combination', `Give exactly one of: {run_id}, {experiment_id}, {workspace_id, revision_id} or {passport_id}; got ${named}.`,
      given.length ? given.join(',') : null, { given, accepted: ACCEPTED });
  }
  if (given[0] === 'passport_id') return { passportId: String(input.passport_id) };
  if (given[0] === 'run_id') return { subject: { kind: 'run', run_id: String(input.run_id) } };
  if (given[0] === 'experiment_id') return { subject: { kind: 'experiment', experiment_id: String(input.experiment_id) } };
  return { subject: { kind: 'workspace_revision', workspace_id: String(input.workspace_id), revision_id: String(input.revision_id) } };
}

/** The subject, when the caller owns it; another account's is answered as missing (404). */
export async function ownedSubject(ctx: ToolContext, subject: PassportSubject): Promise<{ ref: string }> {
  const account = ctx.caller.account.id;
  if (subject.kind === 'run') {
    const run = await getRun(ctx.deps.db, subject.run_id, account);
    if (!run) throw errors.notFound('run_not_found', 'run', 'run_id');
    return { ref: run.resolved_ref };
  }
  if (subject.kind === 'experiment') {
    const e = await getExperiment(ctx.deps.db, subject.experiment_id, account);
    if (!e) throw errors.notFound('experiment_not_found', 'experiment', 'experiment_id');
    return { ref: e.arms.map((a) => a.resolved_ref).join(' ').slice(0, 1000) };
  }
  const ws = await getWorkspace(ctx.deps.db, subject.workspace_id, account);
  if (!ws) throw errors.notFound('workspace_not_found', 'workspace', 'workspace_id');
  const rev = await getRevision(ctx.deps.db, ws.id, subject.revision_id);
  if (!rev) throw errors.notFound('revision_not_found', 'revision', 'revision_id');
  const lab = await getLabById(ctx.deps.db, ws.lab_id);
  return { ref: `${ctx.caller.account.namespace}/${lab?.name ?? ws.lab_id}@rev-${rev.number}` };
}
