import type { StudyPoint } from '../../storage/db/studies.ts';
import type { PetabCalibrationDesign, PetabStartEnd, PetabTask } from '../../storage/studyDesign.ts';
import type { Analysis } from './analysis.ts';

type Asked = Array<{ params: Record<string, number>; attrs: Record<string, unknown> }>;

interface Profile { parameter: string; points: Array<[number, number | null]>; threshold: number; low: number | null; high: number | null; identifiability: 'identifiable' | 'one_sided' | 'flat'; lb: number; ub: number }
interface Fit { x: number[]; fval: number; transformations: Record<string, string>; noise_distributions: Record<string, string>; rows: Array<[string, string, string | null, number, number, number | null, number | null]> }
interface Hessian { x: number[]; free: string[]; eigenvalues: number[]; positive_definite: boolean; flat: string[]; at_bound: Array<'lower' | 'upper' | null>; se: Array<number | null>; low: Array<number | null>; high: Array<number | null> }

/** Starts within this much NLL of the best count as having found it (the field's usual waterfall cut). */
const WITHIN_BEST = 0.1;
/** A Gauss-Newton endpoint differs from the profile's when it is further than this share of the profile interval's width. */
const DISAGREE_SHARE = 0.1;

const startsOf = (p: StudyPoint): PetabStartEnd[] => ((p.outcome?.starts as Array<PetabStartEnd | null> | undefined) ?? []).filter((s): s is PetabStartEnd => !!s && s.fval !== null && s.x !== null);

/** The best end point of every start told so far, with the run that reached it. */
function bestEnd(points: StudyPoint[]): { end: PetabStartEnd; run_id: string } | null {
  let best: { end: PetabStartEnd; run_id: string } | null = null;
  for (const p of points) for (const s of startsOf(p)) if (!best || s.fval! < best.end.fval!) best = { end: s, run_id: p.run_id };
  return best;
}

/**
 * The next batch of a PEtab calibration: batch 0 is every start (numpy's generator of the
 * design's seed, uniform within the bounds on the parameter scale), `starts_per_run` to a
 * run; batch 1, once the starts are told, the profiles from the best end point, spread over
 * the design's profile runs, the first also taking the Gauss-Newton view; then nothing.
 */
export async function askPetab(analysis: Analysis, d: PetabCalibrationDesign, points: StudyPoint[], batch: number, signal: AbortSignal): Promise<Asked> {
  if (batch === 0) {
    const { starts } = await analysis<{ starts: number[][] }>('petab_starts', { seed: d.seed, starts: d.starts, lb: d.parameters.map((p) => p.lb), ub: d.parameters.map((p) => p.ub) }, signal);
    const asked: Asked = [];
    for (let i = 0; i < starts.length; i += d.starts_per_run) {
      const task: PetabTask = { command: 'optimize', starts: starts.slice(i, i + d.starts_per_run).map((x0, k) => ({ index: i + k, x0 })) };
      asked.push({ params: {}, attrs: task });
    }
    return asked;
  }
  if (batch !== 1) return [];
  const best = bestEnd(points);
  if (!best) return [];
  const groups: string[][] = Array.from({ length: d.profile_runs }, () => []);
  d.profile.parameters.forEach((id, i) => groups[i % d.profile_runs]!.push(id));
  return groups.map((parameters, i): Asked[number] => ({ params: {}, attrs: { command: 'profile', x: best.end.x!, parameters, hessian: i === 0 } satisfies PetabTask }));
}

/** What a PEtab run tells its study: what it found, with its best NLL as its loss; one that did not complete, its status and the starts it ended. */
export function tellPetab(status: string, outputs: Record<string, unknown> | null, ended: PetabStartEnd[]): Record<string, unknown> {
  const found = status === 'completed' ? { ...(outputs ?? {}) } : { failed: status, starts: ended };
  const fvals = ((found.starts as Array<PetabStartEnd | null> | undefined) ?? []).map((s) => s?.fval).filter((v): v is number => typeof v === 'number');
  return { ...found, loss: fvals.length ? Math.min(...fvals) : null };
}

/**
 * What a PEtab calibration found: every start's end point in order of NLL (the waterfall)
 * and the share within 0.1 of the best; the best parameters; each profiled parameter's
 * 95% interval (ΔNLL = 1.92) and flag; the Gauss-Newton intervals at the same point,
 * labelled as such; and where the two disagree. Descriptive, in the engine's numbers.
 */
export function petabAnalysis(d: PetabCalibrationDesign, points: StudyPoint[], how: { closed: boolean }): Record<string, unknown> {
  const starts = points.filter((p) => p.batch === 0);
  const ends = starts.flatMap((p) => startsOf(p).map((s) => ({ run_id: p.run_id, ...s })));
  const waterfall = [...ends].sort((a, b) => a.fval! - b.fval!).map((s, rank) => ({
    rank: rank + 1, start: s.index, nll: s.fval!, evaluations: s.n_fval, ended: s.ended, run_id: s.run_id, evaluations_sha256: s.evaluations_sha256,
  }));
  const best = bestEnd(points);
  const bestNll = best?.end.fval ?? null;
  const profileRuns = points.filter((p) => p.batch === 1);
  const profiles = profileRuns.flatMap((p) => (p.outcome?.profiles as Profile[] | undefined) ?? []);
  const hessian = profileRuns.map((p) => p.outcome?.hessian as Hessian | null | undefined).find((h) => h) ?? null;
  const fit = profileRuns.map((p) => p.outcome?.fit as Fit | null | undefined).find((f) => f) ?? null;
  const versions = [...starts, ...profileRuns].map((p) => p.outcome?.versions as Record<string, string> | undefined).find((v) => v) ?? {};
  const disagreements: string[] = [];
  const parameters = d.parameters.map((p, i) => {
    const pl = profiles.find((q) => q.parameter === p.id) ?? null;
    const gn = hessian
      ? hessian.at_bound[i] ? { status: 'at_bound', bound: hessian.at_bound[i], low: null, high: null, se: null }
        : hessian.flat.includes(p.id) ? { status: 'flat', bound: null, low: null, high: null, se: null }
          : { status: 'interval', bound: null, low: hessian.low[i] ?? null, high: hessian.high[i] ?? null, se: hessian.se[i] ?? null }
      : null;
    let agreement: string | null = null;
    if (pl && gn) {
      const says = disagreement(p.id, pl, gn);
      agreement = says ? 'disagree' : 'agree';
      if (says) disagreements.push(says);
    }
    return {
      id: p.id, scale: p.scale, lb: p.lb, ub: p.ub, nominal: p.nominal, best: best ? best.end.x![i] : null,
      profile: pl && { low: pl.low, high: pl.high, identifiability: pl.identifiability },
      gauss_newton: gn, agreement,
    };
  });
  const within = bestNll === null ? 0 : ends.filter((s) => s.fval! - bestNll <= WITHIN_BEST).length;
  const warnings = bestNll === null ? [] : optimumWarnings(bestNll, within, ends.length, profiles);
  const stopped = how.closed ? 'closed' : best ? 'completed' : 'no_runs';
  return {
    kind: 'petab_calibration', stopped, import_id: d.import_id,
    starts_told: ends.length, starts_asked: d.starts,
    best: best && { nll: bestNll, start: best.end.index, run_id: best.run_id, parameters: Object.fromEntries(d.parameters.map((p, i) => [p.id, best.end.x![i]!])) },
    waterfall, within_best: { threshold: WITHIN_BEST, starts: within, fraction: ends.length ? within / ends.length : 0 },
    parameters,
    profiles: profiles.map((q) => ({ parameter: q.parameter, threshold: q.threshold, low: q.low, high: q.high, identifiability: q.identifiability, points: q.points })),
    fits: fit ? fitsOf(fit) : [],
    gauss_newton: hessian && { method: 'gauss_newton', level: 0.95, positive_definite: hessian.positive_definite, eigenvalues: hessian.eigenvalues, flat: hessian.flat },
    disagreements,
    warnings,
    library_versions: versions,
    descriptive: true,
    note: `Multi-start local optimisation of the PEtab negative log-likelihood (${d.optimizer}, ${d.starts} starts uniform within the bounds on the parameter scale, seed ${d.seed}), `
      + 'then, from the best end point, each observable\'s simulation against its data with one noise scale about it, profile likelihoods (pyPESTO) with 95% intervals where the profile crosses ΔNLL = 1.92, and the Gauss-Newton view (the Hessian of the NLL by finite differences) labelled as such. '
      + 'A parameter is identifiable when its profile crosses the threshold on both sides within its bounds, one-sided on one, flat on neither. A fit to these data, not a validation of the model.',
  };
}

/** A profile point this far below the best start's NLL is a better point the starts missed (the integrator's noise is far smaller). */
const BELOW_BEST = 1e-3;

/**
 * What says the best start may not be the optimum, in words: a waterfall without a plateau
 * (one start alone within reach of the best), or a profile that went below it (its intervals
 * then measure from a point that is not the optimum).
 */
function optimumWarnings(bestNll: number, within: number, told: number, profiles: Profile[]): string[] {
  const out: string[] = [];
  if (told > 1 && within < 2) {
    out.push(`Only 1 of ${told} starts ended within ${WITHIN_BEST} of the best NLL: the waterfall has no plateau, so the best may not be the optimum; more starts would tell.`);
  }
  for (const p of profiles) {
    const lowest = Math.min(...p.points.map(([, f]) => f ?? Infinity));
    if (lowest < bestNll - BELOW_BEST) {
      out.push(`${p.parameter}'s profile reached NLL ${lowest.toPrecision(8)}, ${(bestNll - lowest).toPrecision(3)} below the best start's ${bestNll.toPrecision(8)}: the starts missed a better point, so every interval here is measured from one that is not the optimum; calibrate again with more starts.`);
    }
  }
  return out;
}

/** A band one noise scale about a simulation, on its observable's transformation. */
function band(simulation: number, sigma: number, transformation: string): [number, number] {
  if (transformation === 'log') return [simulation * Math.exp(-sigma), simulation * Math.exp(sigma)];
  if (transformation === 'log10') return [simulation * 10 ** -sigma, simulation * 10 ** sigma];
  return [simulation - sigma, simulation + sigma];
}

/** Each observable's measurements beside the simulation at the best point, with the band of one noise scale the likelihood gives them. */
function fitsOf(fit: Fit): Array<Record<string, unknown>> {
  const byObservable = new Map<string, Array<Record<string, unknown>>>();
  for (const [observable, condition, preequilibration, time, measurement, simulation, sigma] of fit.rows) {
    const t = fit.transformations[observable] ?? 'lin';
    const [low, high] = simulation === null || sigma === null ? [null, null] : band(simulation, sigma, t);
    const rows = byObservable.get(observable) ?? [];
    rows.push({ condition, preequilibration, time, measurement, simulation, sigma, low, high });
    byObservable.set(observable, rows);
  }
  return [...byObservable].map(([observable, points]) => ({
    observable, transformation: fit.transformations[observable] ?? 'lin', noise_distribution: fit.noise_distributions[observable] ?? 'normal', points,
  }));
}

/** Where the profile and the Gauss-Newton view of one parameter disagree, in words; null when they agree. */
function disagreement(id: string, pl: Profile, gn: { status: string; low: number | null; high: number | null }): string | null {
  if (gn.status === 'at_bound') {
    return pl.identifiability === 'identifiable' ? `${id}: its best value is at a bound, where the Gauss-Newton view gives no interval; the profile bounds it on both sides.` : null;
  }
  if (gn.status === 'flat') {
    return pl.identifiability === 'identifiable' ? `${id}: the Gauss-Newton view sees no curvature (flat), but the profile bounds it to [${pl.low}, ${pl.high}].` : null;
  }
  if (pl.identifiability !== 'identifiable') {
    return `${id}: the Gauss-Newton interval [${gn.low}, ${gn.high}] is finite, but the profile is ${pl.identifiability === 'flat' ? 'flat' : 'one-sided'}: the data do not bound it${pl.identifiability === 'flat' ? '' : ' on one side'}; read the profile.`;
  }
  const width = pl.high! - pl.low!;
  const off = Math.max(Math.abs(gn.low! - pl.low!), Math.abs(gn.high! - pl.high!));
  return off > DISAGREE_SHARE * width
    ? `${id}: the Gauss-Newton interval [${gn.low}, ${gn.high}] differs from the profile's [${pl.low}, ${pl.high}] by more than ${DISAGREE_SHARE * 100}% of its width.`
    : null;
}
