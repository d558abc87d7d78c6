import { outputKey, type StudyDesign } from './studyDesign.ts';
import type { StudyRunRow } from './db/studyRuns.ts';
import type { RunStatus } from './db/runs.ts';

/**
 * One of a study's runs as its listing (`GET /experiments/{id}/runs`) and `design.csv`
 * show it: its place, the parameter set it was given, and the number it told the study
 * (each studied output's summary for a sensitivity study, the loss for a calibration, the
 * best NLL of its starts for a PEtab calibration).
 */
export interface StudyRunEntry {
  run_id: string;
  position: number;
  status: RunStatus;
  seed: number;
  arm: string;
  replicate: number;
  batch: number | null;
  params: Record<string, number> | null;
  outputs: Record<string, number | null> | null;
  loss: number | null;
}

const numberOr = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** `design` is the study's (null for a comparison of arms); `arms` its arm labels in order. */
export function studyRunEntry(design: StudyDesign | null, arms: string[], row: StudyRunRow): StudyRunEntry {
  const told = row.outcome;
  return {
    run_id: row.run_id, position: row.position, status: row.status, seed: row.seed, arm: arms[row.arm_index] ?? '', replicate: row.replicate,
    batch: row.batch, params: row.params,
    outputs: design?.kind === 'sensitivity' && told ? Object.fromEntries(numberOutputs(design).map((k) => [k, numberOr(told[k])])) : null,
    loss: design && design.kind !== 'sensitivity' ? numberOr(told?.loss) : null,
  };
}

/**
 * The keys of a sensitivity study's outputs that are one number a run: a `series` output's
 * values at each time stay with the run (its results hold the series) and its study's
 * indices, out of the listing and `design.csv`.
 */
function numberOutputs(design: StudyDesign & { kind: 'sensitivity' }): string[] {
  return design.outputs.filter((o) => o.summary !== 'series').map(outputKey);
}

/** The numbers a study's runs can be sorted by, besides their start order: its parameters, and its outputs' keys or `loss`. */
export function studySortKeys(design: StudyDesign | null): { params: string[]; outcomes: string[] } {
  if (!design) return { params: [], outcomes: [] };
  // A PEtab calibration's runs carry starts or profiles, not one parameter set each; its loss is a run's best NLL.
  if (design.kind === 'petab_calibration') return { params: [], outcomes: ['loss'] };
  return { params: design.parameters.map((p) => p.name), outcomes: design.kind === 'sensitivity' ? numberOutputs(design) : ['loss'] };
}

/**
 * `design.csv`'s columns in order: where the run stands (position, run id, status, seed),
 * then each parameter, then each output's key (sensitivity) or `loss` (calibration); and a
 * run's cells under them. A run not yet given a set, or not yet told, has empty cells.
 */
export function designCsvColumns(design: StudyDesign): string[] {
  const { params, outcomes } = studySortKeys(design);
  return ['position', 'run_id', 'status', 'seed', ...params, ...outcomes];
}
export function designCsvRow(design: StudyDesign, e: StudyRunEntry): Array<string | number | null> {
  const { params, outcomes } = studySortKeys(design);
  return [
    e.position, e.run_id, e.status, e.seed, ...params.map((p) => e.params?.[p] ?? null),
    ...outcomes.map((k) => (design.kind === 'sensitivity' ? e.outputs?.[k] ?? null : e.loss)),
  ];
}
