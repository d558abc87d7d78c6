import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAnalysis, packed } from '../../activities/studies/analysis.ts';
import { readSensitivitySample } from '../../activities/studies/sensitivitySample.ts';
import { methodFields } from '../../kernel/sensitivityMethods.ts';
import type { SensitivityDesign } from '../../storage/studyDesign.ts';

// A sensitivity study's analysis reads its points packed (a few numbers a run) and sends
// them packed: the analysis must answer exactly what it answers for the same numbers as lists.

const PYTHON = process.env.SILICO_ANALYSIS_PYTHON;
const analysis = PYTHON ? createAnalysis(PYTHON) : undefined;
after(() => analysis?.close());

async function* pagesOf<T>(...pages: T[][]): AsyncGenerator<T[]> {
  for (const p of pages) yield p;
}

const design = {
  kind: 'sensitivity', method: 'sobol', run_count: 3, base_sample: 1, num_levels: 4, num_resamples: 10, seed: 1,
  parameters: [{ name: 'a', low: 0, high: 1 }, { name: 'b', low: 0, high: 1 }],
  outputs: [{ output: 'y', summary: 'value' }, { output: 'z', summary: 'series' }],
} as unknown as SensitivityDesign;
const grids = new Map([['z', [0, 1]]]);

test('a study\'s points read page by page are packed in the order asked: parameters and outputs row-major, NaN where none', async () => {
  const sample = await readSensitivitySample(pagesOf(
    [{ params: { a: 0.1, b: 0.2 }, outcome: { y: 1, 'z.series': [5, null] } }, { params: { a: 0.3, b: 0.4 }, outcome: { y: 2, 'z.series': [6, 7] } }],
    [{ params: { a: 0.5, b: 0.6 }, outcome: { y: 3, 'z.series': [8, 9] } }],
  ), design, grids);
  assert.deepEqual({ points: sample.points, told: sample.told, complete: sample.complete }, { points: 3, told: 3, complete: true });
  assert.deepEqual([...sample.x], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
  assert.deepEqual([...sample.y.get('y')!], [1, 2, 3]);
  assert.deepEqual([...sample.y.get('z.series')!], [5, NaN, 6, 7, 8, 9]);
});

test('a sample is complete only when every sampled run told every output', async () => {
  const ok = { params: { a: 0, b: 0 }, outcome: { y: 1, 'z.series': [1, 2] } };
  const cases: Array<[string, Array<{ params: Record<string, number>; outcome: Record<string, unknown> | null }>, number]> = [
    ['a run failed', [ok, ok, { params: { a: 0, b: 0 }, outcome: { failed: 'failed' } }], 2],
    ['a run not told', [ok, ok, { params: { a: 0, b: 0 }, outcome: null }], 2],
    ['a run told no number', [ok, ok, { params: { a: 0, b: 0 }, outcome: { y: null, 'z.series': [1, 2] } }], 3],
    ['a run told no series', [ok, ok, { params: { a: 0, b: 0 }, outcome: { y: 1, 'z.series': null } }], 3],
    ['fewer points than runs', [ok, ok], 2],
  ];
  for (const [what, points, told] of cases) {
    const sample = await readSensitivitySample(pagesOf(points), design, grids);
    assert.equal(sample.complete, false, what);
    assert.equal(sample.told, told, what);
  }
});

test('packed numbers answer exactly as lists do: indices over the whole sample and at each time, a NaN where the list has null', { skip: !PYTHON }, async () => {
  const parameters = ['a', 'b'].map((name) => ({ name, low: 0, high: 1, distribution: 'uniform' }));
  const request = { method: 'sobol', parameters, base_sample: 64, num_levels: 4, num_resamples: 50, seed: 5, fields: methodFields('sobol') };
  const { points } = await analysis!<{ points: number[][] }>('sample', request);
  const times = [0, 1, 2];
  const y = points.map(([a, b]) => a! + 2 * b! * b!);
  const z = points.map(([a, b], i) => times.map((t) => (i === 3 && t === 2 ? null : a! * t + b!)));
  const lists = await analysis!<Record<string, unknown>>('analyze', { ...request, points, outputs: { y }, series: { z }, times: { z: times } });
  const n = points.length;
  const pack = (rows: Array<number | null>[]) => packed(Float64Array.from(rows.flat(), (v) => v ?? NaN), [n, rows[0]!.length]);
  const packedAnswer = await analysis!<Record<string, unknown>>('analyze', {
    ...request, points: pack(points), outputs: { y: packed(Float64Array.from(y), [n]) }, series: { z: pack(z) }, times: { z: times },
  });
  assert.deepEqual(packedAnswer, lists);
  assert.deepEqual((lists as { over_time: { z: { undefined: unknown[] } } }).over_time.z.undefined, [{ time: 2, reason: 'missing', runs: 1 }], 'the none is seen as none');
});
