import { stringify } from 'csv-stringify/sync';
import { SENSITIVITY_METHODS, type SensitivityMethod } from '../kernel/sensitivityMethods.ts';

type Found = Record<string, any>;

/** One index of one parameter, at a time or over the whole sample, with its 95% interval where the method states one. */
export interface IndexRow { output: string; time: number | null; parameter: string; index: string; value: number | null; low: number | null; high: number | null }

const interval = (value: number | null, conf: number | null | undefined) => (value !== null && typeof conf === 'number'
  ? { low: value - conf, high: value + conf } : { low: null, high: null });

/**
 * Every index a sensitivity analysis states, a row each: per output, per time (none for
 * an output of one number a run), per parameter, per index of the method. A time where
 * no index is stated keeps its rows, their values empty (`over_time.undefined` says why).
 */
export function indexRows(found: Found): IndexRow[] {
  const { indices } = SENSITIVITY_METHODS[found.method as SensitivityMethod];
  const rows: IndexRow[] = [];
  for (const o of found.outputs as Found[]) {
    if (o.over_time) {
      const t = o.over_time;
      (t.times as number[]).forEach((time, j) => {
        for (const p of t.indices as Found[]) {
          for (const { index, conf } of indices) {
            const value = p[index][j] as number | null;
            rows.push({ output: o.output, time, parameter: p.parameter, index, value, ...interval(value, conf ? p[conf][j] : null) });
          }
        }
      });
      continue;
    }
    for (const p of o.indices as Found[]) {
      for (const { index, conf } of indices) {
        const value = p[index] as number | null;
        rows.push({ output: o.output, time: null, parameter: p.parameter, index, value, ...interval(value, conf ? p[conf] : null) });
      }
    }
  }
  return rows;
}

/** `indices.csv`: output, time, parameter, index, value, low, high (the 95% interval; empty where the method states none). */
export function indicesCsv(found: Found): Buffer {
  return Buffer.from(stringify(indexRows(found), { header: true, columns: ['output', 'time', 'parameter', 'index', 'value', 'low', 'high'] }));
}
