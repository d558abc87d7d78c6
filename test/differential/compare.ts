import type { LabCase, LabSpec } from './types.ts';
import type { RuntimeVerdict, JudgePool } from './judges.ts';
import type { ServiceChecks, ServiceVerdict } from './service.ts';

/**
 * The verdict pair of one lab, as one outcome. The runtime's validator
 * (validate_lab_source) is the judge of the format; the service "blocks" when a composed
 * plan-time check has a blocking finding (./service.ts). "Starts" is the runtime's own
 * start of a run: prepare the world and run its first window (./judge.py).
 *
 * The service blocks what the runtime accepts:
 *   `plan_blocks_runnable`    and the runtime starts the lab: FAILURE.
 *   `plan_blocks_unstartable` and the runtime cannot start it (a wire to an alias no
 *                             model has): still a FAILURE, since the runtime's validator
 *                             is the judge of the format and it accepted the lab.
 *   `gate_refuses`            the plans pass, but the service's pack step (the runtime's
 *                             packer with the identity the service passes) refuses: FAILURE.
 * The runtime refuses what the service's plans let through (no blocking finding):
 *   `runs_unjudged`           the service's gate accepts and the runtime starts it: the lab
 *                             runs although the runtime's validator refuses it: FAILURE.
 *   `caught_at_gate`          the pack step refuses it before any run (package_invalid);
 *   `caught_at_start`         the run fails as it starts (preparing, or its first window).
 *                             Both: the plan approved a run that fails, but the runtime
 *                             refused the lab before it computed anything; reported.
 * Agreement: `both_accept` (and `both_accept_unstartable`: neither judge sees what stops
 * the run at its start, such as a wire to a port no model declares), `both_refuse`.
 */
export type Outcome =
  | 'both_accept' | 'both_accept_unstartable' | 'both_refuse'
  | 'plan_blocks_runnable' | 'plan_blocks_unstartable' | 'gate_refuses'
  | 'runs_unjudged' | 'caught_at_gate' | 'caught_at_start';

export const FAILURES: ReadonlySet<Outcome> = new Set(['plan_blocks_runnable', 'plan_blocks_unstartable', 'gate_refuses', 'runs_unjudged']);

export interface Judged { outcome: Outcome; cause: string; runtime: RuntimeVerdict; service: ServiceVerdict }

export function outcomeOf(runtime: RuntimeVerdict, service: ServiceVerdict): Outcome {
  const blocked = service.blocking.length > 0;
  const stops = runtime.start.ok === false;
  if (runtime.source.valid) {
    if (blocked) return stops ? 'plan_blocks_unstartable' : 'plan_blocks_runnable';
    if (!runtime.gate.valid) return 'gate_refuses';
    return stops ? 'both_accept_unstartable' : 'both_accept';
  }
  if (blocked) return 'both_refuse';
  if (!runtime.gate.valid) return 'caught_at_gate';
  return stops ? 'caught_at_start' : 'runs_unjudged';
}

/** The names a lab uses (aliases, ports, io names, its children's too): a message quoting them is about the lab, not its kind. */
export function namesOf(spec: LabSpec): string[] {
  return [
    ...spec.models.flatMap((m) => [m.alias.text, ...m.model.inputs, ...m.model.outputs]),
    ...spec.inputs.map((e) => e.name), ...spec.outputs.map((e) => e.name),
    ...spec.children.flatMap((c) => [c.alias.text, ...namesOf(c.lab)]),
  ];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// What stands around a name in the runtime's messages (`a.port`, `a (each_window) -> b`, `'a'`).
const EDGE = `\\s.,:;()'"\\[\\]<>-`;

/**
 * A message with its particulars left out, to group by: the lab's own names (longest
 * first; one or two characters only where they stand alone, so they eat no words),
 * quoted text, numbers, folders.
 */
export function generalise(message: string, names: string[] = []): string {
  let m = message;
  for (const n of [...new Set(names)].filter(Boolean).sort((a, b) => b.length - a.length)) {
    m = n.length >= 3 ? m.split(n).join('…') : m.replace(new RegExp(`(?<=^|[${EDGE}])${escape(n)}(?=$|[${EDGE}])`, 'gu'), '…');
  }
  return m
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '…')
    .replace(/<lab>\S*/g, '<lab>/…')
    .replace(/\/\d+(?=\/|$|:|\s)/g, '/*')
    .replace(/\d+(?:\.\d+)?/g, 'N')
    .replace(/\s+/g, ' ')
    .slice(0, 160);
}

/** What a disagreement is about: the service's first blocking finding, or the runtime's first error. */
export function causeOf(j: Omit<Judged, 'cause'>, names: string[]): string {
  const { outcome, runtime, service } = j;
  switch (outcome) {
    case 'plan_blocks_runnable': case 'plan_blocks_unstartable': {
      const f = service.blocking[0]!;
      return `${f.check}: ${f.code}: ${generalise(f.message, names)}`;
    }
    case 'gate_refuses': return `gate: ${generalise(runtime.gate.error ?? '', names)}`;
    case 'runs_unjudged': case 'caught_at_gate': case 'caught_at_start': return `runtime: ${generalise(runtime.source.errors[0] ?? '', names)}`;
    case 'both_accept_unstartable': return `start: ${generalise(runtime.start.error ?? '', names)}`;
    default: return '';
  }
}

/** Both sides: the runtime's judges and the service's checks. */
export interface Sides { runtime: JudgePool; service: ServiceChecks }

/** Judges one case on both sides (`start`: see JudgeRequest). */
export async function judgeCase(sides: Sides, c: LabCase, start: 'always' | 'when_needed' = 'always'): Promise<Judged> {
  const service = await sides.service.verdict(c.files);
  const runtime = await sides.runtime.judge({ files: c.files, identity: service.identity, gate: service.blocking.length === 0, start });
  const judged = { outcome: outcomeOf(runtime, service), runtime, service };
  return { ...judged, cause: causeOf(judged, namesOf(c.spec)) };
}

/** A disagreement for a person: the outcome, both sides' words, and the lab.yaml (with the model folders' ports). */
export function describe(c: LabCase, j: Judged): string {
  const models = Object.entries(c.files).filter(([p]) => p.endsWith('model.yaml')).map(([p, t]) => `--- ${p}\n${t}`);
  return [
    `outcome: ${j.outcome} (${j.cause})`,
    `runtime validate_lab_source: ${j.runtime.source.valid ? 'valid' : `invalid: ${j.runtime.source.errors.join('; ')}`}`,
    `service gate (pack.py): ${j.runtime.gate.valid === null ? 'not asked (the plans block)' : j.runtime.gate.valid ? 'valid' : `refused: ${j.runtime.gate.error}`}; runtime start: ${j.runtime.start.ok === null ? 'not asked' : j.runtime.start.ok ? 'ok' : j.runtime.start.error}`,
    `service plans: ${j.service.blocking.length ? j.service.blocking.map((f) => `${f.check} ${f.code} ${f.path ?? ''}: ${f.message}`).join('\n  ') : 'no blocking finding'}`,
    `flaws: ${JSON.stringify(c.spec.flaws)}; style: ${JSON.stringify(c.style)}`,
    '--- lab.yaml',
    c.files['lab.yaml'] ?? '(none)',
    ...models.slice(0, 4),
    ...(Object.keys(c.files).some((p) => p.startsWith('labs/')) ? [`(child labs: ${Object.keys(c.files).filter((p) => p.endsWith('lab.yaml') && p !== 'lab.yaml').join(', ')})`] : []),
  ].join('\n');
}
