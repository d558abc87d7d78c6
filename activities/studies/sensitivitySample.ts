import type { StudyPoint } from '../../storage/db/studies.ts';
import { outputKey, type SensitivityDesign, type StudyOutput } from '../../storage/studyDesign.ts';

/**
 * A sensitivity study's points as its analysis needs them, in the order asked and packed
 * row-major (NaN where a run gave no number): each parameter's value, and each output's
 * number, or a series output's value at each time of its grid. A study of 100,000 runs is
 * then a few megabytes in the worker, where its points as objects were hundreds.
 */
export interface SensitivitySample {
  /** Points read, and those told without failing. */
  points: number;
  told: number;
  /** Every sampled run told every output: a number, or a series' row. */
  complete: boolean;
  /** `run_count` × parameters. */
  x: Float64Array;
  /** By output key: `run_count` numbers, or `run_count` × its grid's times for a series. */
  y: Map<string, Float64Array>;
}

/** Reads a study's points a page at a time into its packed sample (`grids`: each series output's times). */
export async function readSensitivitySample(
  pages: AsyncIterable<Array<Pick<StudyPoint, 'params' | 'outcome'>>>, d: SensitivityDesign, grids: Map<string, number[]>,
): Promise<SensitivitySample> {
  const n = d.run_count;
  const k = d.parameters.length;
  const width = (o: StudyOutput) => (o.summary === 'series' ? grids.get(o.output)?.length ?? 0 : 1);
  const x = new Float64Array(n * k).fill(NaN);
  const y = new Map(d.outputs.map((o) => [outputKey(o), new Float64Array(n * width(o)).fill(NaN)]));
  let points = 0;
  let told = 0;
  let typed = true;
  for await (const page of pages) {
    for (const p of page) {
      const row = points++;
      if (row >= n) continue;
      d.parameters.forEach((q, j) => { x[row * k + j] = p.params[q.name] ?? NaN; });
      if (!p.outcome || p.outcome.failed) continue;
      told++;
      for (const o of d.outputs) {
        const value = p.outcome[outputKey(o)];
        const column = y.get(outputKey(o))!;
        if (o.summary !== 'series') {
          if (typeof value === 'number') column[row] = value;
          else typed = false;
        } else if (Array.isArray(value)) {
          const w = width(o);
          for (let t = 0; t < w; t++) column[row * w + t] = typeof value[t] === 'number' ? value[t] as number : NaN;
        } else typed = false;
      }
    }
  }
  return { points, told, complete: points === n && told === n && typed, x, y };
}
