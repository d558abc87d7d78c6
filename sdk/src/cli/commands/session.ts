import type { Silico } from '../../client.ts';
import type { ResponseBody } from '../../types.ts';
import { EXIT, UsageError, table, type Out } from '../output.ts';

/** `silico session new|show|progress|validate|complete`: durable collaboration sessions. */

type Row = Record<string, unknown>;

export async function sessionNew(client: Silico, title: string, flags: { goal?: string }, out: Out): Promise<number> {
  const s = await client.sessions.create({ title, ...(flags.goal ? { goal: flags.goal } : {}) });
  out.result(s, () => `${s.session_id}\nNext: propose a contract (requirements and the evidence each needs), then an execution plan.`);
  return EXIT.ok;
}

export async function sessionShow(client: Silico, id: string, out: Out): Promise<number> {
  const s = await client.sessions.get(id);
  out.result(s, () => [
    `${s.session_id}  ${s.title}  (${s.status}, version ${s.version}${s.workspace_id ? `, workspace ${s.workspace_id}` : ''})`,
    s.execution_plan ? table(s.execution_plan.steps.map((x) => ({ ...x, depends_on: (x.depends_on as string[]).join(',') })), ['id', 'status', 'depends_on', 'title']) : 'No execution plan yet.',
    `Progress: ${s.progress.count} entr${s.progress.count === 1 ? 'y' : 'ies'}${s.progress.recent.length ? `, latest first:\n${table(s.progress.recent, ['seq', 'step_id', 'status', 'note', 'recorded_at'])}` : ''}`,
    s.validation ? `Validation: ${(['satisfied', 'unsatisfied', 'unknown'] as const).map((k) => `${s.validation!.summary[k]} ${k}`).join(', ')}` : 'Not validated yet.',
    ...(s.next_actions ?? []).map((a) => `Next: ${a.description}`),
  ].join('\n'));
  return EXIT.ok;
}

export async function sessionProgress(client: Silico, id: string, stepId: string, status: string, flags: { note?: string; evidence: string[] }, out: Out): Promise<number> {
  const res = await client.sessions.recordProgress(id, { step_id: stepId, status, ...(flags.note ? { note: flags.note } : {}), evidence: flags.evidence } as never) as ResponseBody<'session_progress_record'>;
  out.result(res, () => `recorded #${res.seq}: ${stepId} ${status}`);
  return EXIT.ok;
}

/** `--evidence R1=run:<id>`: a reference bound to a requirement. */
function binding(v: string): { requirement_id: string; ref: string } {
  const at = v.indexOf('=');
  if (at < 1) throw new UsageError(`--evidence takes <requirement_id>=<kind>:<id>, not ${v}`);
  return { requirement_id: v.slice(0, at), ref: v.slice(at + 1) };
}

function requirementsTable(v: { requirements: readonly object[] }): string {
  return table(v.requirements as Row[], ['requirement_id', 'evidence_kind', 'status', 'reason']);
}

export async function sessionValidate(client: Silico, id: string, flags: { evidence: string[] }, out: Out): Promise<number> {
  const v = await client.sessions.validate(id, { evidence: flags.evidence.map(binding) } as never);
  out.result(v, () => `${requirementsTable(v)}\n${v.caveat}`);
  return EXIT.ok;
}

/** Exit 1 when something is missing (the session stays open), 0 once it is complete. */
export async function sessionComplete(client: Silico, id: string, out: Out): Promise<number> {
  const c = await client.sessions.checkCompletion(id);
  out.result(c, () => (c.complete ? `${id} is complete; it is read-only now.` : `Not complete. Missing:\n${table(c.missing as Row[], ['kind', 'id', 'reason'])}`));
  return c.complete ? EXIT.ok : EXIT.runFailed;
}
