import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnalysis, type Analysis } from '../../activities/studies/analysis.ts';
import {
  MORRIS_TARGET_RELATIVE_HALF_WIDTH, SOBOL_TARGET_HALF_WIDTH, predictedHalfWidth, sampleSizeAdvice, suggestedBaseSample,
} from '../../storage/sampleSize.ts';
import { methodFields } from '../../kernel/sensitivityMethods.ts';

test('the suggested base sample is the smallest that meets the target: a power of 2 for Sobol\', any count of trajectories for Morris', () => {
  const sobol = suggestedBaseSample('sobol');
  assert.equal(sobol, 1024);
  assert.ok(predictedHalfWidth('sobol', sobol) <= SOBOL_TARGET_HALF_WIDTH);
  assert.ok(predictedHalfWidth('sobol', sobol / 2) > SOBOL_TARGET_HALF_WIDTH, 'the power of 2 below it does not');
  const morris = suggestedBaseSample('morris');
  assert.equal(morris, 16);
  assert.ok(predictedHalfWidth('morris', morris) <= MORRIS_TARGET_RELATIVE_HALF_WIDTH);
  assert.ok(predictedHalfWidth('morris', morris - 1) > MORRIS_TARGET_RELATIVE_HALF_WIDTH);
  // Half-widths shrink as 1/√N: four times the sample halves them.
  assert.ok(Math.abs(predictedHalfWidth('sobol', 64) / predictedHalfWidth('sobol', 256) - 2) < 1e-12);
});

test('advice is given below the suggested sample, with its run count; none at or above it', () => {
  const small = sampleSizeAdvice('sobol', 2, 3, 10_000)!;
  assert.equal(small.suggested, 1024);
  assert.equal(small.suggested_run_count, 1024 * (3 + 2), 'Saltelli\'s N(D + 2)');
  assert.equal(small.target, SOBOL_TARGET_HALF_WIDTH);
  assert.ok(small.half_width > 1, `a base sample of 2 says nothing (±${small.half_width})`);
  assert.equal(sampleSizeAdvice('sobol', 1024, 3, 10_000), null);
  assert.equal(sampleSizeAdvice('sobol', 4096, 3, 10_000), null);
  assert.equal(sampleSizeAdvice('morris', 10, 3, 10_000)!.suggested_run_count, 16 * (3 + 1), 'Morris\'s r(D + 1)');
  assert.equal(sampleSizeAdvice('morris', 16, 3, 10_000), null);
  assert.equal(small.parameters_within, null, '5120 runs fit in 10000');
  // Over the study limit: 1024 × (8 + 2) runs; 7 parameters take 9216.
  const many = sampleSizeAdvice('sobol', 8, 8, 10_000)!;
  assert.equal(many.suggested_run_count, 10_240);
  assert.equal(many.parameters_within, 7);
  assert.equal(sampleSizeAdvice('morris', 4, 20, 100)!.parameters_within, 5, 'Morris: 16 × (5 + 1) = 96 runs fit in 100');
});

/** The Ishigami function, a standard test of sensitivity methods: non-linear, non-monotonic, with an interaction and a heavy-tailed term. */
const ishigami = ([x1, x2, x3]: number[]) => Math.sin(x1!) + 7 * Math.sin(x2!) ** 2 + 0.1 * x3! ** 4 * Math.sin(x1!);
const PARAMETERS = ['x1', 'x2', 'x3'].map((name) => ({ name, low: -Math.PI, high: Math.PI, distribution: 'uniform' }));
type Indices = Record<string, number[]>;

/** SALib's indices of the Ishigami function over a seeded sample of this size, as a study's analysis computes them. */
async function ishigamiIndices(analysis: Analysis, method: 'sobol' | 'morris', baseSample: number): Promise<Indices> {
  const design = { method, parameters: PARAMETERS, base_sample: baseSample, num_levels: 4, num_resamples: 100, seed: 7 };
  const { points } = await analysis<{ points: number[][] }>('sample', design);
  const { indices } = await analysis<{ indices: Record<string, Indices> }>('analyze', { ...design, fields: methodFields(method), points, outputs: { y: points.map(ishigami) } });
  return indices.y!;
}

test('SALib\'s own intervals agree with the rule: on the Ishigami function the widest Sobol\' interval is about the predicted width, and within the target at the suggested sample', { skip: !process.env.SILICO_ANALYSIS_PYTHON }, async () => {
  const analysis = createAnalysis(process.env.SILICO_ANALYSIS_PYTHON!);
  try {
    const widest = async (n: number) => {
      const si = await ishigamiIndices(analysis, 'sobol', n);
      return Math.max(...si.S1_conf!, ...si.ST_conf!);
    };
    const at64 = await widest(64);
    const predicted = predictedHalfWidth('sobol', 64);
    assert.ok(at64 > 0.5 * predicted && at64 < 1.25 * predicted, `at N = 64 SALib's widest half-width ${at64} is about the predicted ${predicted}`);
    const atSuggested = await widest(suggestedBaseSample('sobol'));
    assert.ok(atSuggested <= SOBOL_TARGET_HALF_WIDTH, `at the suggested sample every interval is within ±${SOBOL_TARGET_HALF_WIDTH} (widest ${atSuggested})`);
  } finally {
    analysis.close();
  }
});

test('SALib\'s Morris intervals agree with the rule: μ* of a parameter whose σ is at most its μ* is within ±50% at the suggested trajectories, and not at a quarter of them', { skip: !process.env.SILICO_ANALYSIS_PYTHON }, async () => {
  const analysis = createAnalysis(process.env.SILICO_ANALYSIS_PYTHON!);
  try {
    const relative = async (r: number) => {
      const si = await ishigamiIndices(analysis, 'morris', r);
      // Only the parameters within the rule's assumption (σ ≤ μ*) are held to it.
      return si.mu_star!.flatMap((m, i) => (si.sigma![i]! <= m && m > 0 ? [si.mu_star_conf![i]! / m] : []));
    };
    const suggested = await relative(suggestedBaseSample('morris'));
    assert.ok(suggested.length > 0);
    assert.ok(suggested.every((w) => w <= MORRIS_TARGET_RELATIVE_HALF_WIDTH), `within ±50% of μ*: ${suggested}`);
    const few = await relative(4);
    assert.ok(few.some((w) => w > MORRIS_TARGET_RELATIVE_HALF_WIDTH), `4 trajectories leave some μ* less certain than ±50%: ${few}`);
  } finally {
    analysis.close();
  }
});
