import { mean, sampleStandardDeviation, min, max } from 'simple-statistics';
import tQuantile from '@stdlib/stats-base-dists-t-quantile';
import ttest2 from '@stdlib/stats-ttest2';
import type { ExperimentRunRow } from './db/experiments.ts';

/** What a study's numbers are, said where they are shown. */
export const COMPARISON_NOTE = 'Descriptive statistics over completed runs only. The 95% interval is for the mean (Student t); '
  + 'Welch p-values are descriptive, uncorrected for the number of outputs compared, and no statement of validity.';

/** One arm's summary of one numeric scalar output. Spread and interval need two runs. */
export interface OutputMetrics {
  n: number;
  mean: number;
  stddev: number | null;
  min: number;
  max: number;
  ci95: [number, number] | null;
}

export interface ArmComparison {
  label: string;
  completed_runs: number;
  /** Per output; null when the arm has no completed run (rule 4). */
  metrics: Record<string, OutputMetrics> | null;
}

export interface WelchTest {
  output: string;
  method: 'welch_t_test';
  statistic: number | null;
  df: number | null;
  p_value: number | null;
  descriptive: true;
  /** Why there is no p-value, when there is none. */
  note?: string;
}

export interface Comparison {
  descriptive: true;
  note: string;
  confidence_level: 0.95;
  outputs: string[];
  arms: ArmComparison[];
  /** Only for a study of exactly two arms: arm 0 against arm 1, per output. */
  tests: WelchTest[];
}

/**
 * The numeric scalar outputs of a run: those its contract declares as numbers (the final
 * value of a time series is not one), when the run gave a finite number.
 */
function numericOutputs(outputs: Record<string, unknown> | null, declared: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of declared) {
    const v = outputs?.[k];
    if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  }
  return out;
}

function summarize(values: number[]): OutputMetrics {
  const n = values.length;
  const m = mean(values);
  if (n < 2) return { n, mean: m, stddev: null, min: min(values), max: max(values), ci95: null };
  const sd = sampleStandardDeviation(values);
  const half = tQuantile(0.975, n - 1) * sd / Math.sqrt(n);
  return { n, mean: m, stddev: sd, min: min(values), max: max(values), ci95: [m - half, m + half] };
}

function welch(output: string, x: number[], y: number[]): WelchTest {
  const none = (note: string): WelchTest => ({ output, method: 'welch_t_test', statistic: null, df: null, p_value: null, descriptive: true, note });
  if (x.length < 2 || y.length < 2) return none('Each arm needs at least two completed runs with this output.');
  const r = ttest2(x, y);
  if (!Number.isFinite(r.pValue)) return none('Both arms have no spread in this output; the test is undefined.');
  return { output, method: 'welch_t_test', statistic: r.statistic, df: r.df, p_value: r.pValue, descriptive: true };
}

/**
 * The comparison of a study's arms (rule 4): only attached runs that completed count; an
 * arm without one reports no metrics. Outputs are the numeric scalar outputs (declared
 * numbers) any such run produced, sorted by name.
 */
export function compareArms(arms: Array<{ label: string; scalar_outputs: string[] }>, runs: ExperimentRunRow[]): Comparison {
  const values = arms.map(() => new Map<string, number[]>());
  const completed = arms.map(() => 0);
  const names = new Set<string>();
  for (const r of runs) {
    if (r.detached_at || r.status !== 'completed') continue;
    completed[r.arm_index]! += 1;
    for (const [k, v] of Object.entries(numericOutputs(r.outputs, arms[r.arm_index]!.scalar_outputs))) {
      names.add(k);
      const list = values[r.arm_index]!.get(k) ?? [];
      list.push(v);
      values[r.arm_index]!.set(k, list);
    }
  }
  const outputs = [...names].sort();
  return {
    descriptive: true,
    note: COMPARISON_NOTE,
    confidence_level: 0.95,
    outputs,
    arms: arms.map((a, i) => ({
      label: a.label,
      completed_runs: completed[i]!,
      metrics: completed[i] ? Object.fromEntries([...values[i]!.entries()].sort(([x], [y]) => x.localeCompare(y)).map(([k, v]) => [k, summarize(v)])) : null,
    })),
    tests: arms.length === 2 ? outputs.map((o) => welch(o, values[0]!.get(o) ?? [], values[1]!.get(o) ?? [])) : [],
  };
}
