/**
 * The sensitivity methods a study may ask for, each SALib's sampler and analyzer (run in
 * activities/studies/analysis.py): how many runs a base sample of N takes, the smallest N
 * the method accepts, the indices it states per parameter, which of them ranks
 * parameters, which confidence half-width belongs to which index, and how its indices
 * are named for readers. Read by the plan (run counts and bounds), the analysis (fields
 * and ranking), the study's files (`indices.csv`, its chart), the schemas and the console.
 * Browser-safe.
 */

export type SensitivityMethod = 'sobol' | 'morris' | 'efast' | 'rbd_fast' | 'delta' | 'pawn';

export interface SensitivityMethodSpec {
  /** Its name in words, for notes and findings. */
  title: string;
  /** Runs a base sample of N takes with D parameters, and the same in words. */
  runs: (n: number, d: number) => number;
  runsInWords: string;
  /** The smallest base sample the method takes, and why. */
  minBase: number;
  minReason: string;
  /** What SALib states per parameter: each index, with the field holding its 95% half-width (null where the method states none). */
  indices: Array<{ index: string; conf: string | null }>;
  /** The index parameters are ranked by, largest first. */
  rank: string;
  /** SALib's keyword arguments of its sampler and analyzer beyond the sample, seed and resamples. */
  sampleOptions?: Record<string, number>;
  analyzeOptions?: Record<string, number>;
  /**
   * Times of a `series` output one analysis request takes: a request is answered within
   * the analysis process's timeout, and other studies' requests are answered between them.
   * δ's kernel densities cost seconds a time at a few thousand runs; the others' estimators
   * milliseconds.
   */
  timesPerRequest: number;
  /** Whether its sample may be drawn from a normal distribution truncated to the bounds. */
  distributions: boolean;
}

/** eFAST's interference factor (SALib's default M): the sampler needs N > 4M². */
export const EFAST_M = 4;
/** RBD-FAST's harmonics (SALib's default M). */
export const RBD_FAST_M = 10;
/** PAWN's conditioning slices per parameter (SALib's default S). */
export const PAWN_S = 10;

export const SENSITIVITY_METHODS: Record<SensitivityMethod, SensitivityMethodSpec> = {
  sobol: {
    title: 'Sobol\' (Saltelli\'s sample)', runs: (n, d) => n * (d + 2), runsInWords: 'N(D+2)', minBase: 2, minReason: 'Saltelli\'s scheme needs at least two rows',
    indices: [{ index: 'S1', conf: 'S1_conf' }, { index: 'ST', conf: 'ST_conf' }], rank: 'ST', timesPerRequest: 50, distributions: true,
  },
  morris: {
    title: 'Morris elementary effects', runs: (n, d) => n * (d + 1), runsInWords: 'N(D+1)', minBase: 2, minReason: 'μ* and σ need at least two trajectories',
    indices: [{ index: 'mu', conf: null }, { index: 'mu_star', conf: 'mu_star_conf' }, { index: 'sigma', conf: null }], rank: 'mu_star', timesPerRequest: 50, distributions: false,
  },
  efast: {
    title: 'eFAST', runs: (n, d) => n * d, runsInWords: 'N·D', minBase: 4 * EFAST_M ** 2 + 1, minReason: `eFAST's sampler needs N > 4M² with M = ${EFAST_M}`,
    indices: [{ index: 'S1', conf: 'S1_conf' }, { index: 'ST', conf: 'ST_conf' }], rank: 'ST', timesPerRequest: 50, distributions: false,
    sampleOptions: { M: EFAST_M }, analyzeOptions: { M: EFAST_M },
  },
  rbd_fast: {
    title: 'RBD-FAST (Latin hypercube sample)', runs: (n) => n, runsInWords: 'N', minBase: 4 * RBD_FAST_M + 4,
    minReason: `each bootstrap resample of its interval takes half the runs, and its bias correction needs more than 2M + 1 of them (M = ${RBD_FAST_M} harmonics): with fewer it divides by zero or states no interval`,
    indices: [{ index: 'S1', conf: 'S1_conf' }], rank: 'S1', timesPerRequest: 50, distributions: false,
    analyzeOptions: { M: RBD_FAST_M },
  },
  delta: {
    title: 'Borgonovo\'s δ (Latin hypercube sample)', runs: (n) => n, runsInWords: 'N', minBase: 50,
    minReason: 'δ estimates the output\'s density in each of its classes of the parameter by kernels, which fewer runs leave a handful of points',
    indices: [{ index: 'delta', conf: 'delta_conf' }, { index: 'S1', conf: 'S1_conf' }], rank: 'delta', timesPerRequest: 1, distributions: false,
  },
  pawn: {
    title: 'PAWN (Latin hypercube sample)', runs: (n) => n, runsInWords: 'N', minBase: 10 * PAWN_S,
    minReason: `PAWN compares the output's distribution in each of ${PAWN_S} slices of a parameter with the whole: fewer runs leave a slice under ten`,
    indices: ['minimum', 'mean', 'median', 'maximum', 'CV'].map((index) => ({ index, conf: null })), rank: 'median', timesPerRequest: 20, distributions: false,
    analyzeOptions: { S: PAWN_S },
  },
};

export const SENSITIVITY_METHOD_NAMES = Object.keys(SENSITIVITY_METHODS) as SensitivityMethod[];

/** Every field a method states per parameter: each index, then its half-width. */
export function methodFields(method: SensitivityMethod): string[] {
  return SENSITIVITY_METHODS[method].indices.flatMap((i) => (i.conf ? [i.index, i.conf] : [i.index]));
}

/** An index's name for readers (μ*, δ…): its field's name where it reads as it is. */
const INDEX_LABELS: Record<string, string> = { mu: 'μ', mu_star: 'μ*', sigma: 'σ', delta: 'δ' };

/** How a field reads: an index by its name, a half-width as the index's `± (95%)`. */
export function fieldLabel(field: string): string {
  const conf = field.endsWith('_conf');
  const index = conf ? field.slice(0, -'_conf'.length) : field;
  const name = INDEX_LABELS[index] ?? index;
  return conf ? `${name} ± (95%)` : name;
}

/** The indices a picture of a method draws: each it states an interval for, else (PAWN) the one it ranks by. */
export function drawnIndices(method: SensitivityMethod): Array<{ index: string; conf: string | null }> {
  const spec = SENSITIVITY_METHODS[method];
  const withIntervals = spec.indices.filter((i) => i.conf);
  return withIntervals.length ? withIntervals : spec.indices.filter((i) => i.index === spec.rank);
}
