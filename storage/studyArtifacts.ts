import type { Db } from './db/knex.ts';
import type { ObjectStore } from './objects.ts';
import { setExperimentArtifacts, type ExperimentArtifact, type ExperimentRow } from './db/experiments.ts';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { recordExperimentFiles, renderVegaLite, storeExperimentFiles, type ExperimentFile } from './experimentArtifacts.ts';
import type { StudyDesign } from './studyDesign.ts';
import { studyRunPages } from './db/studyRuns.ts';
import { HashingStream } from './digest.ts';
import { designCsvColumns, designCsvRow, studyRunEntry } from './studyRunEntries.ts';
import { indexRows, indicesCsv } from './indicesCsv.ts';
import { drawnIndices, fieldLabel, SENSITIVITY_METHODS, type SensitivityMethod } from '../kernel/sensitivityMethods.ts';

type Found = Record<string, any>;

/**
 * Sensitivity: per output of one number a run, each parameter's indices as bars with
 * their 95% intervals; per `series` output, each index over time as a line a parameter,
 * with its band. The indices drawn are those the method states intervals for (PAWN's,
 * which has none, its median). Null when no index is defined to draw.
 */
function sensitivitySpec(found: Found, title: string): unknown {
  const method = found.method as SensitivityMethod;
  const drawn = drawnIndices(method);
  const names = new Set(drawn.map((i) => i.index));
  const rows = indexRows(found).filter((r) => names.has(r.index) && r.value !== null).map((r) => ({ ...r, index: fieldLabel(r.index) }));
  const scalar = rows.filter((r) => r.time === null);
  const overTime = rows.filter((r) => r.time !== null);
  if (!rows.length) return null;
  const bars = {
    data: { values: scalar },
    facet: { row: { field: 'output', type: 'nominal', title: null } },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 360, height: 160,
      layer: [
        { mark: 'bar', encoding: { x: { field: 'parameter', type: 'nominal' }, xOffset: { field: 'index' }, y: { field: 'value', type: 'quantitative', title: 'index' }, color: { field: 'index', type: 'nominal' } } },
        { mark: 'rule', encoding: { x: { field: 'parameter', type: 'nominal' }, xOffset: { field: 'index' }, y: { field: 'low', type: 'quantitative' }, y2: { field: 'high' } } },
      ],
    },
  };
  const curves = {
    data: { values: overTime.map((r) => ({ ...r, series: `${r.output} ${r.index}` })) },
    facet: { row: { field: 'series', type: 'nominal', title: null } },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 420, height: 160,
      layer: [
        { mark: { type: 'area', opacity: 0.2 }, encoding: { x: { field: 'time', type: 'quantitative' }, y: { field: 'low', type: 'quantitative', title: 'index' }, y2: { field: 'high' }, color: { field: 'parameter', type: 'nominal' } } },
        { mark: 'line', encoding: { x: { field: 'time', type: 'quantitative' }, y: { field: 'value', type: 'quantitative' }, color: { field: 'parameter', type: 'nominal' } } },
      ],
    },
  };
  const intervals = drawn.every((i) => i.conf) ? ', 95% intervals' : '';
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: `${SENSITIVITY_METHODS[method].title}: ${drawn.map((i) => fieldLabel(i.index)).join(' and ')}${intervals}${overTime.length ? ', over time' : ''} (descriptive)` },
    vconcat: [...(scalar.length ? [bars] : []), ...(overTime.length ? [curves] : [])],
  };
}

/** Calibration: each observed output with the best fit over it, and the loss of every evaluated set. */
function calibrationSpec(found: Found, title: string): unknown {
  const points = (found.fitted as Found[]).flatMap((s) => (s.t as number[]).map((t, i) => ({
    output: s.units ? `${s.output} (${s.units})` : s.output, t, observed: s.observed[i], fitted: s.fitted[i],
  })));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: 'Observations and the best fit; the loss of each evaluated set (descriptive)' },
    vconcat: [
      {
        data: { values: points },
        facet: { row: { field: 'output', type: 'nominal', title: null } },
        resolve: { scale: { y: 'independent' } },
        spec: {
          width: 420, height: 160,
          layer: [
            { mark: { type: 'point', filled: true }, encoding: { x: { field: 't', type: 'quantitative', title: 'time' }, y: { field: 'observed', type: 'quantitative', title: 'value' } } },
            { mark: { type: 'line', color: '#d62728' }, encoding: { x: { field: 't', type: 'quantitative' }, y: { field: 'fitted', type: 'quantitative' } } },
          ],
        },
      },
      {
        data: { values: (found.loss_curve as Found[]).filter((p) => p.loss !== null) },
        width: 420, height: 140,
        layer: [
          { mark: { type: 'point', opacity: 0.5 }, encoding: { x: { field: 'run', type: 'quantitative', title: 'evaluated set' }, y: { field: 'loss', type: 'quantitative', title: 'loss', scale: { zero: false } } } },
          { mark: { type: 'line', interpolate: 'step-after' }, encoding: { x: { field: 'run', type: 'quantitative' }, y: { field: 'best_loss', type: 'quantitative' } } },
        ],
      },
    ],
  };
}

/** PEtab calibration: the waterfall of every start's end point, and each profile's NLL above the best with its threshold. */
function petabSpec(found: Found, title: string): unknown {
  const best = found.best.nll as number;
  const profiles = (found.profiles as Found[]).flatMap((p) => (p.points as Array<[number, number | null]>).filter(([, f]) => f !== null).map(([x, f]) => ({
    parameter: `${p.parameter} (${p.identifiability.replace('_', '-')})`, x, delta: (f as number) - best, threshold: p.threshold,
  })));
  const waterfall = { data: { values: found.waterfall }, width: 420, height: 160, mark: { type: 'point', filled: true }, encoding: {
    x: { field: 'rank', type: 'quantitative', title: 'start, best first', axis: { tickMinStep: 1, format: 'd' } }, y: { field: 'nll', type: 'quantitative', title: 'NLL at its end point', scale: { type: 'log' } },
  } };
  const profile = {
    data: { values: profiles },
    facet: { column: { field: 'parameter', type: 'nominal', title: null } },
    resolve: { scale: { x: 'independent' } },
    spec: {
      width: 160, height: 140,
      layer: [
        { mark: 'line', encoding: { x: { field: 'x', type: 'quantitative', title: 'value on its scale' }, y: { field: 'delta', type: 'quantitative', title: 'ΔNLL' } } },
        { mark: { type: 'rule', strokeDash: [4, 4] }, encoding: { y: { field: 'threshold', type: 'quantitative', aggregate: 'max' } } },
      ],
    },
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: 'Each start\'s end point; profile likelihoods with the 95% threshold (ΔNLL = 1.92) (descriptive)' },
    vconcat: profiles.length ? [waterfall, profile] : [waterfall],
  };
}

/**
 * `design.csv`: one row per run of the study in start order, as its runs listing shows
 * them (for pandas or SALib). Written to a scratch file a page of runs at a time and
 * hashed as it is written, so a 100,000-run study's (about 10 MB) is never held whole;
 * `use` stores it before the file is removed.
 */
async function withDesignCsv<T>(db: Db, e: { id: string; design: StudyDesign; arms: Array<{ label: string }> }, use: (file: ExperimentFile) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'design-'));
  try {
    const file = path.join(dir, 'design.csv');
    const labels = e.arms.map((a) => a.label);
    const hashing = new HashingStream();
    const csv = stringify({ header: true, columns: designCsvColumns(e.design) });
    const rows = async function* () {
      for await (const page of studyRunPages(db, e.id)) for (const r of page) yield designCsvRow(e.design, studyRunEntry(e.design, labels, r));
    };
    await pipeline(Readable.from(rows()), csv, hashing, createWriteStream(file));
    return await use({ file_name: 'design.csv', content_type: 'text/csv', format: 'csv', path: file, sha256: hashing.digest(), size: hashing.bytes });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A finished question study's `design.csv` written again from its runs as they stand, in
 * place of the one among its files (the others kept): a run detached since (PATCH
 * /experiments) is no longer in it. Nothing for a comparison of arms, a study still
 * running (its workflow writes the file when it finishes) or one that has no such file.
 * Returns the study's files.
 */
export async function rewriteDesignCsv(
  deps: { db: Db; objects: ObjectStore }, e: Pick<ExperimentRow, 'id' | 'account_id' | 'kind' | 'design' | 'arms' | 'artifacts' | 'completed_at'>,
): Promise<ExperimentArtifact[]> {
  if (e.kind === 'arms' || !e.design || !e.completed_at || !e.artifacts.some((a) => a.file_name === 'design.csv')) return e.artifacts;
  const [design] = await withDesignCsv(deps.db, { ...e, design: e.design }, (f) => recordExperimentFiles(deps, e, [f], 'study_analysis'));
  const artifacts = e.artifacts.map((a) => (a.file_name === 'design.csv' ? design! : a));
  await setExperimentArtifacts(deps.db, e.id, artifacts);
  return artifacts;
}

/**
 * A finished study's files: `analysis.json` (what it found, as its record states it),
 * `design.csv` (every run with its parameter set and what it told), and its chart,
 * `analysis.svg` (indices, or the fit and its loss curve) when there is something to
 * draw, and what its kind adds: a sensitivity's `indices.csv` (storage/indicesCsv.ts),
 * `more`. Listed on the study like a comparison's files.
 */
export async function storeStudyArtifacts(
  deps: { db: Db; objects: ObjectStore }, e: { id: string; account_id: string; name: string; design: StudyDesign; arms: Array<{ label: string }> }, found: Found,
  more: Array<{ file_name: string; content_type: string; format: string; bytes: Buffer }> = [],
): Promise<ExperimentArtifact[]> {
  const files: ExperimentFile[] = [
    { file_name: 'analysis.json', content_type: 'application/json', format: 'json', bytes: Buffer.from(`${JSON.stringify(found, null, 2)}\n`) },
  ];
  const drawable = found.kind === 'sensitivity' ? found.outputs.length > 0 : found.best !== null;
  const spec = !drawable ? null
    : found.kind === 'sensitivity' ? sensitivitySpec(found, e.name) : found.kind === 'petab_calibration' ? petabSpec(found, e.name) : calibrationSpec(found, e.name);
  if (spec) files.push({ file_name: 'analysis.svg', content_type: 'image/svg+xml', format: 'svg', bytes: Buffer.from(await renderVegaLite(spec)) });
  // Every index at every time, for a reader's own tools: a complete sensitivity analysis's.
  if (found.kind === 'sensitivity' && found.outputs.length) files.push({ file_name: 'indices.csv', content_type: 'text/csv', format: 'csv', bytes: indicesCsv(found) });
  // In the order a study's files have always been listed: its analysis, its design, its chart, then its kind's (a sensitivity's indices.csv).
  return withDesignCsv(deps.db, e, (design) => storeExperimentFiles(deps, e, [files[0]!, design, ...files.slice(1), ...more], 'study_analysis'));
}
