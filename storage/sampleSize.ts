/**
 * How large a sensitivity study's sample must be for its indices to be stable, judged
 * before any run: the half-width of their 95% confidence intervals (the `*_conf` SALib
 * states, asked at conf_level 0.95 in activities/studies/analysis.py) predicted from the
 * sample size, against a target.
 *
 * Both methods' indices are means over the sample (Sobol' over the N rows of Saltelli's
 * matrices, Morris over the r trajectories), and SALib's intervals are bootstraps over
 * those rows, so they shrink as 1/√N: half-width ≈ z·σ/√N, with σ the standard deviation
 * of one row's term. Sobol' estimators are asymptotically normal at that rate (Janon,
 * Klein, Lagnoux, Nodet & Prieur 2014, "Asymptotic normality and efficiency of two Sobol
 * index estimators", ESAIM: P&S 18); Morris (1991) gives the standard error of a mean
 * elementary effect as σ/√r. docs/decisions.md ("Sample-size findings") has the numbers.
 */
import { sensitivityRunCount } from './studyDesign.ts';
import type { SensitivityMethod } from '../kernel/sensitivityMethods.ts';

/** z of a two-sided 95% interval, the level the analysis asks SALib for. */
const Z95 = 1.959963984540054;

/**
 * Sobol': every first-order and total index within ±0.1. Indices lie in [0, 1]; ±0.1 tells
 * an influential parameter from a negligible one and orders parameters whose indices differ
 * by more than 0.2. It is SALib's maintainer's rule of thumb (S_conf about 10% of the index,
 * SALib/SALib#171) taken at the largest index there is, 1.
 */
export const SOBOL_TARGET_HALF_WIDTH = 0.1;

/**
 * σ of one row's term of the total-order estimator SALib uses (Jansen's,
 * (f(A) − f(A_B^i))² / 2V) at its worst, ST = 1, for a normally distributed output: the
 * term is ST·χ²₁, of variance 2·ST². Checked against SALib 1.5.1's own intervals: on the
 * Ishigami function (heavy-tailed, with interactions) the widest first-order and total
 * intervals at N = 64 … 1024 are 2.0/√N and 2.6–2.8/√N, within z·√2 = 2.77/√N
 * (test/unit/sampleSize.test.ts repeats this with SALib).
 */
const SOBOL_TERM_SD = Math.SQRT2;

/**
 * Morris: μ* within ±50% of itself. Morris screens rather than measures: an interval of
 * ±50% stays clear of zero and separates parameters whose μ* differ threefold. The
 * resulting 16 trajectories lie in the 10 to 20 that screening practice uses.
 */
export const MORRIS_TARGET_RELATIVE_HALF_WIDTH = 0.5;

/**
 * The spread of |elementary effects| relative to μ*, at most σ/μ* (the variance of |d| is
 * at most that of d, as E|d| ≥ |E d|), taken at σ = μ*: the line between almost monotonic
 * and non-monotonic effects in the (μ*, σ) plane (Garcia Sanchez et al. 2014, Energy and
 * Buildings 68). Parameters further above it are strongly non-linear or interacting and
 * need more trajectories than the finding suggests.
 */
const MORRIS_SIGMA_OVER_MU_STAR = 1;

/**
 * The methods whose intervals are predicted here. The others' estimators (spectral,
 * kernel-density, Kolmogorov-Smirnov) have no such closed-form rate: their plans carry
 * only the method's own minimum sample.
 */
export type AdvisedMethod = 'sobol' | 'morris';

/**
 * The predicted 95% half-width at this base sample: absolute for Sobol' indices, relative
 * to μ* for Morris.
 */
export function predictedHalfWidth(method: AdvisedMethod, baseSample: number): number {
  return (Z95 * (method === 'sobol' ? SOBOL_TERM_SD : MORRIS_SIGMA_OVER_MU_STAR)) / Math.sqrt(baseSample);
}

export function targetHalfWidth(method: AdvisedMethod): number {
  return method === 'sobol' ? SOBOL_TARGET_HALF_WIDTH : MORRIS_TARGET_RELATIVE_HALF_WIDTH;
}

/** The smallest base sample whose predicted half-width meets the target: a power of 2 for Sobol' (Saltelli's scheme needs one). */
export function suggestedBaseSample(method: AdvisedMethod): number {
  const least = Math.ceil(((Z95 * (method === 'sobol' ? SOBOL_TERM_SD : MORRIS_SIGMA_OVER_MU_STAR)) / targetHalfWidth(method)) ** 2);
  return method === 'sobol' ? 2 ** Math.ceil(Math.log2(least)) : least;
}

export interface SampleSizeAdvice {
  half_width: number;
  target: number;
  suggested: number;
  suggested_run_count: number;
  /** When the suggestion takes more than `maxRuns`: the most parameters it could vary within them. */
  parameters_within: number | null;
}

/**
 * Advice for a base sample too small to meet the target, or null when it is large enough
 * (or the method is not one whose intervals are predicted);
 * `maxRuns` is the most runs a study may take.
 */
export function sampleSizeAdvice(method: SensitivityMethod, baseSample: number, parameters: number, maxRuns: number): SampleSizeAdvice | null {
  if (method !== 'sobol' && method !== 'morris') return null;
  const suggested = suggestedBaseSample(method);
  if (baseSample >= suggested) return null;
  const runs = sensitivityRunCount(method, suggested, parameters);
  // Each parameter adds `suggested` runs to a fixed share (Saltelli's 2N, Morris's r).
  const fixed = sensitivityRunCount(method, suggested, 0) / suggested;
  return {
    half_width: predictedHalfWidth(method, baseSample), target: targetHalfWidth(method), suggested, suggested_run_count: runs,
    parameters_within: runs <= maxRuns ? null : Math.floor(maxRuns / suggested) - fixed,
  };
}
