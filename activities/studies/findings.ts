import type { StudyPoint } from '../../storage/db/studies.ts';
import { outputKey, type CalibrationDesign, type SensitivityDesign } from '../../storage/studyDesign.ts';
import type { Analysis } from './analysis.ts';

type Indices = Record<string, Record<string, Array<number | null>>>;
/** The analysis libraries' versions, as `analyze`, `fit` and `versions` say them. */
type Versions = { versions: Record<string, string> };

/**
 * What a sensitivity study found: SALib's indices for each output over the whole sample,
 * in the sample's order, with each output's parameters ranked by influence. Indices need
 * every sampled run: a study with a run that did not complete (or closed early) states
 * none and says why.
 */
export async function sensitivityAnalysis(analysis: Analysis, d: SensitivityDesign, points: StudyPoint[]): Promise<Record<string, unknown>> {
  const told = points.filter((p) => p.outcome && !p.outcome.failed);
  const keys = d.outputs.map(outputKey);
  const complete = points.length === d.run_count && told.length === d.run_count
    && told.every((p) => keys.every((k) => typeof p.outcome![k] === 'number'));
  const base = { kind: 'sensitivity', method: d.method, complete, runs_completed: told.length, descriptive: true };
  if (!complete) {
    return {
      ...base, outputs: [], library_versions: (await analysis<Versions>('versions', {})).versions,
      note: `Indices need every one of the ${d.run_count} sampled runs to give every output; ${told.length} did. No index is stated from a partial sample.`,
    };
  }
  const { indices, versions } = await analysis<{ indices: Indices } & Versions>('analyze', {
    method: d.method, parameters: d.parameters, base_sample: d.base_sample, num_levels: d.num_levels, num_resamples: d.num_resamples, seed: d.seed,
    points: points.map((p) => d.parameters.map((q) => p.params[q.name]!)),
    outputs: Object.fromEntries(keys.map((k) => [k, points.map((p) => p.outcome![k] as number)])),
  });
  const fields = d.method === 'sobol' ? ['S1', 'S1_conf', 'ST', 'ST_conf'] : ['mu', 'mu_star', 'sigma', 'mu_star_conf'];
  const rankBy = d.method === 'sobol' ? 'ST' : 'mu_star';
  return {
    ...base,
    library_versions: versions,
    outputs: d.outputs.map((o) => {
      const si = indices[outputKey(o)]!;
      const rows: Array<Record<string, string | number | null>> = d.parameters.map((p, i) => ({ parameter: p.name, ...Object.fromEntries(fields.map((f) => [f, si[f]![i] ?? null])) }));
      const ranking = [...rows].sort((a, b) => ((b[rankBy] as number | null) ?? -Infinity) - ((a[rankBy] as number | null) ?? -Infinity)).map((r) => r.parameter);
      return { output: outputKey(o), units: o.units, indices: rows, ranking };
    }),
    note: d.method === 'sobol'
      ? `Sobol' first-order (S1) and total (ST) indices from Saltelli's sample of ${d.base_sample} × ${d.parameters.length + 2} runs, with 95% bootstrap confidence half-widths (${d.num_resamples} resamples). Estimates from a finite sample: small or negative values are noise around zero.`
      : `Morris elementary effects from ${d.base_sample} trajectories on a ${d.num_levels}-level grid: μ* ranks influence, σ shows interaction or nonlinearity; 95% bootstrap half-width of μ*.`,
  };
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
