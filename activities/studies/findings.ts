import { mean } from 'simple-statistics';
import type { StudyPoint } from '../../storage/db/studies.ts';
import { outputKey, type CalibrationDesign, type SensitivityDesign, type StudyOutput } from '../../storage/studyDesign.ts';
import { EFAST_M, methodFields, PAWN_S, SENSITIVITY_METHODS } from '../../kernel/sensitivityMethods.ts';
import { packed, type Analysis } from './analysis.ts';
import type { SensitivitySample } from './sensitivitySample.ts';

type Indices = Record<string, Record<string, Array<number | null>>>;
/** Per `series` output: each field's values per parameter per time, and the times with none. */
type Undefined = { time: number; reason: 'constant' | 'missing' | 'failed'; runs: number; error?: string };
type OverTime = Record<string, { fields: Record<string, Array<Array<number | null>>>; undefined: Undefined[] }>;
/** The analysis libraries' versions, as `analyze`, `fit` and `versions` say them. */
type Versions = { versions: Record<string, string> };

const byInfluence = (scores: Array<[string, number | null]>): string[] => [...scores].sort((a, b) => (b[1] ?? -Infinity) - (a[1] ?? -Infinity)).map(([p]) => p);

/**
 * Who dominates when: over each stretch of consecutive times where indices are stated,
 * the parameter whose ranking index is largest. A time without indices ends a stretch.
 */
export function leaders(times: number[], parameters: string[], rank: Array<Array<number | null>>): Array<{ parameter: string; from: number; to: number }> {
  const out: Array<{ parameter: string; from: number; to: number }> = [];
  let open = false;
  times.forEach((t, j) => {
    let best = -1;
    parameters.forEach((_, i) => {
      const v = rank[i]![j];
      if (v !== null && v !== undefined && (best < 0 || v > rank[best]![j]!)) best = i;
    });
    if (best < 0) {
      open = false;
      return;
    }
    const last = out.at(-1);
    if (open && last!.parameter === parameters[best]) last!.to = t;
    else out.push({ parameter: parameters[best]!, from: t, to: t });
    open = true;
  });
  return out;
}

/** Why a time has no index, in words. */
function undefinedMessage(u: Undefined, method: string): string {
  if (u.reason === 'constant') return 'The output is the same in every run at this time: no parameter moves it, and its indices are undefined (0/0).';
  if (u.reason === 'failed') return `SALib's ${method} analysis failed at this time alone: ${u.error ?? 'no reason given'}.`;
  return `${u.runs} run${u.runs === 1 ? '' : 's'} gave no value at this time (their series do not reach it, or hold no number there).`;
}

/**
 * What a sensitivity study found: SALib's indices for each output over the whole sample,
 * in the sample's order, with each output's parameters ranked by influence; for a
 * `series` output, its indices at each time (`grids`: the times of each), who dominates
 * when, and the times at which none is stated, with why. Indices need every sampled run:
 * a study with a run that did not complete (or closed early) states none and says why.
 */
export async function sensitivityAnalysis(analysis: Analysis, d: SensitivityDesign, sample: SensitivitySample, grids: Map<string, number[]>): Promise<Record<string, unknown>> {
  const method = SENSITIVITY_METHODS[d.method];
  const isSeries = (o: StudyOutput) => o.summary === 'series';
  const { complete, told } = sample;
  const base = { kind: 'sensitivity', method: d.method, complete, runs_completed: told, descriptive: true };
  /** A study that states no index, and why. */
  const none = async (note: string) => ({ ...base, complete: false, outputs: [], library_versions: (await analysis<Versions>('versions', {})).versions, note });
  if (!complete) return none(`Indices need every one of the ${d.run_count} sampled runs to give every output; ${told} did. No index is stated from a partial sample.`);
  // A series output whose first completed run gave no series has no times to state indices at.
  const gridless = d.outputs.filter((o) => isSeries(o) && !grids.get(o.output)?.length);
  if (gridless.length) {
    return none(`No times to state indices at: the study's first completed run gave no series for ${gridless.map((o) => o.output).join(', ')}, and a series output's indices are stated at its times.`);
  }
  const fields = methodFields(d.method);
  const n = d.run_count;
  const request = {
    method: d.method, parameters: d.parameters, base_sample: d.base_sample, num_levels: d.num_levels, num_resamples: d.num_resamples, seed: d.seed,
    fields, analyze_options: method.analyzeOptions ?? {}, points: packed(sample.x, [n, d.parameters.length]),
  };
  const scalars = d.outputs.filter((o) => !isSeries(o));
  let versions: Record<string, string> | undefined;
  let indices: Indices = {};
  if (scalars.length) {
    ({ indices, versions } = await analysis<{ indices: Indices } & Versions>('analyze', {
      ...request, outputs: Object.fromEntries(scalars.map((o) => [outputKey(o), packed(sample.y.get(outputKey(o))!, [n])])),
    }));
  }
  // A series output's times a few at a time: each request within the analysis process's timeout, other studies' between them.
  const overTime: OverTime = {};
  for (const o of d.outputs.filter(isSeries)) {
    const key = outputKey(o);
    const grid = grids.get(o.output)!;
    const rows = sample.y.get(key)!;
    const at: OverTime[string] = { fields: Object.fromEntries(fields.map((f) => [f, d.parameters.map(() => [] as Array<number | null>)])), undefined: [] };
    for (let from = 0; from < grid.length; from += method.timesPerRequest) {
      const to = Math.min(grid.length, from + method.timesPerRequest);
      const part = await analysis<{ over_time: OverTime } & Versions>('analyze', {
        ...request, outputs: {}, series: { [key]: packed(columnsOf(rows, grid.length, from, to), [n, to - from]) }, times: { [key]: grid.slice(from, to) },
      });
      versions = part.versions;
      const got = part.over_time[key]!;
      for (const f of fields) got.fields[f]!.forEach((values, i) => at.fields[f]![i]!.push(...values));
      at.undefined.push(...got.undefined);
    }
    overTime[key] = at;
  }
  const names = d.parameters.map((p) => p.name);
  return {
    ...base,
    fields,
    library_versions: versions!,
    outputs: d.outputs.map((o) => {
      const key = outputKey(o);
      if (isSeries(o)) {
        const at = overTime[key]!;
        const rank = at.fields[method.rank]!;
        const meanOf = (values: Array<number | null>) => {
          const defined = values.filter((v): v is number => v !== null);
          return defined.length ? mean(defined) : null;
        };
        const times = grids.get(o.output)!;
        return {
          output: key, units: o.units, indices: [],
          ranking: byInfluence(names.map((n, i) => [n, meanOf(rank[i]!)])),
          over_time: {
            times,
            indices: names.map((n, i) => ({ parameter: n, ...Object.fromEntries(fields.map((f) => [f, at.fields[f]![i]!])) })),
            undefined: at.undefined.map((u) => ({ time: u.time, reason: u.reason, message: undefinedMessage(u, d.method) })),
            leaders: leaders(times, names, rank),
            rank: method.rank,
          },
        };
      }
      const si = indices[key]!;
      const rows: Array<Record<string, string | number | null>> = names.map((n, i) => ({ parameter: n, ...Object.fromEntries(fields.map((f) => [f, si[f]![i] ?? null])) }));
      return { output: key, units: o.units, indices: rows, ranking: byInfluence(rows.map((r) => [r.parameter as string, r[method.rank] as number | null])) };
    }),
    note: methodNote(d),
  };
}

/** Columns `from` to `to` of a row-major matrix `width` wide. */
function columnsOf(rows: Float64Array, width: number, from: number, to: number): Float64Array {
  const out = new Float64Array((rows.length / width) * (to - from));
  for (let r = 0, at = 0; r < rows.length; r += width, at += to - from) out.set(rows.subarray(r + from, r + to), at);
  return out;
}

/** What the indices are and how far to trust them, per method. */
function methodNote(d: SensitivityDesign): string {
  const overTime = d.outputs.some((o) => o.summary === 'series') ? ' A series output\'s indices are computed at each time from the same runs.' : '';
  const runs = `${d.run_count} runs`;
  const notes: Record<SensitivityDesign['method'], string> = {
    sobol: `Sobol' first-order (S1) and total (ST) indices from Saltelli's sample of ${d.base_sample} × ${d.parameters.length + 2} runs, with 95% bootstrap confidence half-widths (${d.num_resamples} resamples). Estimates from a finite sample: small or negative values are noise around zero.`,
    morris: `Morris elementary effects from ${d.base_sample} trajectories on a ${d.num_levels}-level grid: μ* ranks influence, σ shows interaction or nonlinearity; 95% bootstrap half-width of μ*.`,
    efast: `eFAST first-order (S1) and total (ST) indices from ${runs} (${d.base_sample} along each parameter's search curve, M = ${EFAST_M}), with 95% bootstrap half-widths.`,
    rbd_fast: `RBD-FAST first-order indices (S1, bias-corrected) from a Latin hypercube of ${runs}, with 95% bootstrap half-widths; no total indices.`,
    delta: `Borgonovo's moment-independent δ and the first-order index S1 from a Latin hypercube of ${runs}, with 95% bootstrap half-widths: δ measures how far the output's whole distribution moves with a parameter, where variance may mislead (skewed or multimodal outputs).`,
    pawn: `PAWN indices from a Latin hypercube of ${runs}: the Kolmogorov-Smirnov distance between the output's distribution and its distribution within each of ${PAWN_S} slices of a parameter, summarised over the slices (minimum, mean, median, maximum, coefficient of variation); ranked by the median. No intervals.`,
  };
  return notes[d.method] + overTime;
}

/**
 * What a calibration found: the evaluated set of least loss, the loss of every set in the
 * order asked with the best so far, the best run's series beside the observations, and
 * intervals from the linearised fit (analysis.py `fit`), all descriptive.
 */
export async function calibrationAnalysis(
  analysis: Analysis, d: CalibrationDesign, points: StudyPoint[], how: { closed: boolean; converged: boolean },
): Promise<Record<string, unknown>> {
  const told = points.filter((p) => p.outcome);
  let best: StudyPoint | undefined;
  let bestLoss: number | null = null;
  const lossCurve = told.map((p, i) => {
    const loss = typeof p.outcome!.loss === 'number' ? p.outcome!.loss : null;
    if (loss !== null && (bestLoss === null || loss < bestLoss)) {
      bestLoss = loss;
      best = p;
    }
    return { run: i + 1, batch: p.batch, loss, best_loss: bestLoss };
  });
  const stopped = how.closed ? 'closed' : how.converged ? 'converged' : told.length ? 'budget' : 'no_runs';
  const base = { kind: 'calibration', stopped, runs_told: told.length, loss_curve: lossCurve, descriptive: true };
  if (!best) {
    return {
      ...base, best: null, fitted: [], library_versions: (await analysis<Versions>('versions', {})).versions,
      uncertainty: { method: 'linearised_joint_region', level: 0.95, intervals: null, descriptive: true, note: 'No run completed: nothing to state.' },
      note: 'No parameter set was evaluated.',
    };
  }
  const fittedAll = best.outcome!.fitted as number[];
  let at = 0;
  const fitted = d.observations.map((o) => {
    const f = fittedAll.slice(at, at + o.t.length);
    at += o.t.length;
    return { output: o.output, units: o.units, t: o.t, observed: o.y, fitted: f };
  });
  const { versions, ...uncertainty } = await analysis<Record<string, unknown> & Versions>('fit', {
    parameters: d.parameters, observed: d.observations.flatMap((o) => o.y), noise_sd: d.noise_sd,
    trials: told.filter((p) => typeof p.outcome!.loss === 'number').map((p) => ({ params: p.params, loss: p.outcome!.loss, fitted: p.outcome!.fitted })),
  });
  return {
    ...base,
    best: { run_id: best.run_id, parameters: best.params, loss: bestLoss },
    fitted,
    uncertainty,
    library_versions: versions,
    note: `The best of ${told.length} evaluated parameter sets (${d.optimizer === 'cmaes' ? 'CMA-ES' : 'Optuna\'s TPE'}, seed ${d.seed}) against ${d.dataset.name} version ${d.dataset.version}. A fit to these observations, not a validation of the model.`,
  };
}
