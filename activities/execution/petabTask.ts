import { stringify } from 'csv-stringify/sync';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { getExperiment } from '../../storage/db/experiments.ts';
import { appendEvent, setRunProgress, type RunRow } from '../../storage/db/runs.ts';
import { pointOfRun, progressOfPhase } from '../../storage/db/studies.ts';
import { PETAB_PHASE, type PetabCalibrationDesign, type PetabStartEnd, type PetabTask } from '../../storage/studyDesign.ts';
import { runEngine, type EngineCall, type EngineOutcome } from '../petab/engine.ts';
import type { Sandbox, SandboxLimits } from './sandbox.ts';
import { textArtifact, type ArtifactFile } from './outputs.ts';
import { storeRunArtifact } from './artifactBytes.ts';
import { createWriteChain } from './writeChain.ts';

/**
 * A start's best so far is recorded at most this often (it is what a lost worker's start
 * resumes from). The engine sends it with each chunk of evaluations, about once a second:
 * a bound below that records each one, rather than every other one as jitter would.
 */
const BEST_EVERY_MS = 500;

export interface PetabTaskCall {
  db: Db;
  objects: ObjectStore;
  sandbox: Sandbox;
  /** Warm instances of the engine to fork the run's process from, and whose they are. */
  warm?: EngineCall['warm'];
  run: RunRow;
  python: string;
  /** The materialized lab (the problem under its `petab/` folder) and this execution's scratch and results folders. */
  labDir: string;
  scratch: string;
  results: string;
  limits: SandboxLimits;
  vcpus: number;
  wallSeconds: number;
  signal: AbortSignal;
  alive(): void;
  /** Compute is charged from the moment this is called. */
  begin(): Promise<void>;
}

/** The values a PEtab run's outputs record holds, by name, once its engine process ends. */
export interface PetabTaskResult { outcome: EngineOutcome; values: Map<string, unknown>; command: PetabTask['command'] }

/**
 * One run of a PEtab calibration: the engine (activities/petab/engine.py) on the lab's
 * problem, in the lab's environment, sandboxed like the lab, carrying its point's task:
 * local starts, or profiles with the Gauss-Newton view. A start's every evaluation (its
 * parameter vector, NLL and the digest of its simulations) is stored as the run's
 * artifact when the start ends, and its best so far recorded about once a second; a run
 * executed again (its worker lost) skips the starts that ended and resumes the others
 * from their best, so a lost worker loses no start's progress beyond that.
 */
export async function executePetabTask(c: PetabTaskCall): Promise<PetabTaskResult> {
  const point = await pointOfRun(c.db, c.run.id);
  const study = c.run.experiment_id ? await getExperiment(c.db, c.run.experiment_id) : undefined;
  if (!point || study?.design?.kind !== 'petab_calibration') throw new Error(`run ${c.run.id} is not a point of a PEtab calibration`);
  const design = study.design as PetabCalibrationDesign;
  const task = point.attrs as unknown as PetabTask;
  const writes = createWriteChain();
  const ids = design.parameters.map((p) => p.id);
  const values = new Map<string, unknown>();

  const earlier = await progressOfPhase(c.db, c.run.id, PETAB_PHASE);
  const ended = new Map<number, PetabStartEnd>();
  // A start's best so far: the point it resumes from, the evaluations spent to reach it
  // and its NLL (what the start ends with should nothing be left of its budget).
  const best = new Map<number, { x: number[]; n_fval: number; fval: number }>();
  for (const e of earlier) {
    if (e.start_end) ended.set((e.start_end as PetabStartEnd).index, e.start_end as PetabStartEnd);
    else if (typeof e.start === 'number') best.set(e.start, { x: e.x as number[], n_fval: e.n_fval as number, fval: e.fval as number });
  }

  const request = task.command === 'optimize'
    ? {
      command: 'optimize' as const, optimizer: design.optimizer, max_evaluations: design.max_evaluations,
      starts: task.starts.filter((s) => !ended.has(s.index)).map((s) => ({ ...s, ...best.get(s.index) })),
    }
    : { command: 'profile' as const, x: task.x, parameters: task.parameters, options: design.profile.options, hessian: task.hessian };

  const rows = new Map<number, unknown[][]>();
  const lastBest = new Map<number, number>();
  const total = task.command === 'optimize' ? task.starts.length : task.parameters.length + (task.hessian ? 1 : 0);
  let done = ended.size;
  const profiles: unknown[] = [];
  let hessian: unknown = null;
  let fit: unknown = null;
  const note = (data: Record<string, unknown>, message: string) => writes.add(() => appendEvent(c.db, c.run.id, 'progress', message, { phase: PETAB_PHASE, ...data }));
  const advance = () => {
    done += 1;
    writes.add(() => setRunProgress(c.db, c.run.id, done / Math.max(1, total)));
  };

  /** A start's evaluations as the run's CSV artifact, numbered from where an earlier execution left it. */
  const storeEvaluations = async (index: number, from: number): Promise<string | null> => {
    const r = rows.get(index) ?? [];
    rows.delete(index);
    if (!r.length) return null;
    const csv = stringify(r.map(([n, fval, sha, ...x]) => [index, Number(n) + from, fval, sha, ...x]), { header: true, columns: ['start', 'evaluation', 'nll', 'simulation_sha256', ...ids] });
    const f: ArtifactFile = textArtifact({
      role: 'evaluations', file_name: `evaluations-start-${index}${from ? `-from-${from}` : ''}.csv`, content_type: 'text/csv', format: 'csv', public: true,
    }, csv);
    await storeRunArtifact(c, c.run.id, f);
    return f.sha256;
  };

  await c.begin();
  const outcome = await runEngine(c.sandbox, {
    python: c.python, problemDir: c.labDir, yaml: design.yaml, scratch: c.scratch, request,
    limits: c.limits, vcpus: c.vcpus, wallSeconds: c.wallSeconds, signal: c.signal, onAlive: c.alive, warm: c.warm,
    onStart: (pid, warm) => writes.add(() => appendEvent(c.db, c.run.id, 'log', `Engine process started (process group ${pid}${warm === null ? '' : `, forked from warm instance ${warm}`}).`, {
      stream: 'worker', pid, ...(warm === null ? {} : { warm_instance: warm }),
    })),
    onMessage: async (m) => {
      if (m.type === 'evaluations') {
        const start = m.start as number;
        const r = rows.get(start) ?? [];
        r.push(...(m.rows as unknown[][]));
        rows.set(start, r);
      } else if (m.type === 'start_best') {
        const start = m.start as number;
        if (Date.now() - (lastBest.get(start) ?? 0) < BEST_EVERY_MS) return;
        lastBest.set(start, Date.now());
        const from = best.get(start)?.n_fval ?? 0;
        note({ start, n_fval: (m.n_fval as number) + from, fval: m.fval, x: m.x }, `Start ${start}: best NLL ${(m.fval as number).toFixed(4)} after ${(m.n_fval as number) + from} evaluations.`);
      } else if (m.type === 'start_end') {
        const index = m.start as number;
        const from = best.get(index)?.n_fval ?? 0;
        const end: PetabStartEnd = {
          index, fval: m.fval as number | null, x: m.x as number[] | null, n_fval: m.n_fval as number, ended: String(m.ended), message: String(m.message ?? ''),
          seconds: Number(m.seconds) || 0, evaluations_sha256: null,
        };
        ended.set(index, end);
        // The start's evaluations are stored before its end is recorded: a start recorded
        // as ended always has them.
        writes.add(async () => {
          end.evaluations_sha256 = await storeEvaluations(index, from);
          await appendEvent(c.db, c.run.id, 'progress', `Start ${index} ended (${end.ended}): NLL ${end.fval ?? 'none'} after ${end.n_fval} evaluations.`, { phase: PETAB_PHASE, start_end: end });
        });
        advance();
      } else if (m.type === 'profile') {
        const p = withoutType(m);
        profiles.push(p);
        note({ profiled: p.parameter }, `Profile of ${String(p.parameter)}: ${String(p.identifiability)}.`);
        advance();
      } else if (m.type === 'hessian') {
        hessian = withoutType(m);
        advance();
      } else if (m.type === 'fit') {
        fit = withoutType(m);
      }
    },
  });
  await writes.settled();
  if (task.command === 'optimize') values.set('starts', task.starts.map((s) => ended.get(s.index) ?? null));
  else {
    values.set('profiles', profiles);
    values.set('hessian', hessian);
    values.set('fit', fit);
  }
  values.set('versions', outcome.versions);
  return { outcome, values, command: task.command };
}

/** An engine message's content, without its type. */
function withoutType(m: Record<string, unknown>): Record<string, unknown> {
  const out = { ...m };
  delete out.type;
  return out;
}

/** The outputs a PEtab run's record declares, by its task. */
export const petabOutputs = (command: PetabTask['command']) => (command === 'optimize' ? ['starts', 'versions'] : ['profiles', 'hessian', 'fit', 'versions'])
  .map((name) => ({ name, public: true, units: null }));
