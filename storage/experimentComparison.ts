import tQuantile from '@stdlib/stats-base-dists-t-quantile';
import ttest2 from '@stdlib/stats-ttest2';
import type { ArmOutcomes, OutputAggregate } from './db/armOutcomes.ts';

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

/** An output's metrics from its aggregates: the 95% interval for the mean (Student t) needs two runs. */
function summarize(a: OutputAggregate): OutputMetrics {
  const { n, mean, stddev, min, max } = a;
  if (n < 2 || stddev === null) return { n, mean, stddev: null, min, max, ci95: null };
  const half = tQuantile(0.975, n - 1) * stddev / Math.sqrt(n);
  return { n, mean, stddev, min, max, ci95: [mean - half, mean + half] };
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
 * numbers) any such run produced, sorted by name. Computed from the study's aggregates
 * (armOutcomes), so it costs the same whatever the number of runs.
 */
export function compareArms(arms: Array<{ label: string; scalar_outputs: string[] }>, o: ArmOutcomes): Comparison {
  const outputs = [...new Set(o.aggregates.flatMap((m) => [...m.keys()]))].sort();
  return {
    descriptive: true,
    note: COMPARISON_NOTE,
    confidence_level: 0.95,
    outputs,
    arms: arms.map((a, i) => ({
      label: a.label,
      completed_runs: o.completed[i]!,
      metrics: o.completed[i] ? Object.fromEntries([...o.aggregates[i]!.entries()].sort(([x], [y]) => x.localeCompare(y)).map(([k, v]) => [k, summarize(v)])) : null,
    })),
    tests: arms.length === 2 && o.values ? outputs.map((k) => welch(k, o.values![0]!.get(k) ?? [], o.values![1]!.get(k) ?? [])) : [],
  };
}
