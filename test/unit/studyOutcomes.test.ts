import { test } from 'node:test';
import assert from 'node:assert/strict';
import { calibrationLoss, converged, summarise, valueAt, seriesAt } from '../../activities/studies/outcomes.ts';

const series = { t: [0, 1, 2, 3], y: [1, 4, 2, 2] };

test('a time series becomes one number: final, max, mean of its points, the time of its first max; a number is itself', () => {
  assert.equal(summarise('final', 9, series), 2);
  assert.equal(summarise('max', 9, series), 4);
  assert.equal(summarise('mean', 9, series), 2.25);
  assert.equal(summarise('time_of_max', 9, { t: [0, 1, 2], y: [3, 3, 1] }), 0);
  assert.equal(summarise('value', 9, undefined), 9);
  assert.equal(summarise('value', 'x', undefined), null);
  assert.equal(summarise('final', null, undefined), null, 'no series, nothing to summarise');
});

test('the model at an observation time is linear between its points and held at its ends', () => {
  assert.equal(valueAt(series, 0.5), 2.5);
  assert.equal(valueAt(series, 2), 2);
  assert.equal(valueAt(series, -1), 1);
  assert.equal(valueAt(series, 7), 2);
});

test('losses: the sum of squares, and the Gaussian negative log-likelihood with a stated σ or its estimate', () => {
  const observations = [{ output: 'x', column: 'x', units: null, t: [0.5, 1, 3], y: [2, 5, 2.5] }];
  const runs = new Map([['x', series]]);
  // Residuals 0.5, -1, -0.5: SSE 1.5.
  const sse = calibrationLoss({ observations, loss: 'sum_of_squares', noise_sd: null }, runs)!;
  assert.deepEqual(sse.fitted, [2.5, 4, 2]);
  assert.equal(sse.loss, 1.5);
  const known = calibrationLoss({ observations, loss: 'gaussian_nll', noise_sd: 0.5 }, runs)!;
  assert.ok(Math.abs(known.loss - (1.5 * Math.log(2 * Math.PI * 0.25) + 1.5 / 0.5)) < 1e-12);
  const estimated = calibrationLoss({ observations, loss: 'gaussian_nll', noise_sd: null }, runs)!;
  assert.ok(Math.abs(estimated.loss - (1.5 * (Math.log(2 * Math.PI * 0.5) + 1))) < 1e-12, 'σ² = SSE / n');
  assert.equal(calibrationLoss({ observations, loss: 'sum_of_squares', noise_sd: null }, new Map()), null, 'a run without the series tells no loss');
});

test('a calibration has converged when its best loss moved less than the tolerance over the patience', () => {
  const stop = { patience_batches: 2, relative_tolerance: 0.01 };
  assert.equal(converged(null, [10, 5, 5, 5]), false, 'no rule: the budget is spent');
  assert.equal(converged(stop, [10, 5]), false, 'not yet as many batches as the patience');
  assert.equal(converged(stop, [10, 5, 4.99, 4.96]), true);
  assert.equal(converged(stop, [10, 5, 4.5, 4.4]), false);
});

test('a series at a grid: linear between its points, its end within floating-point reach of a step\'s summed time, null outside it', () => {
  const s = { t: [0.1, 0.2, 0.30000000000000004, 9.999999999999998], y: [1, 2, 3, 4] };
  const [mid, third, end] = seriesAt(s, [0.15, 0.3, 10]) as number[];
  assert.ok(Math.abs(mid! - 1.5) < 1e-12 && Math.abs(third! - 3) < 1e-12, `linear between points: ${mid}, ${third}`);
  assert.equal(end, 4, '10 is the series\' last time, summed to 9.999999999999998');
  assert.deepEqual(seriesAt(s, [0.05, 10.5]), [null, null], 'never extended before or past what the run gave');
  assert.deepEqual(seriesAt({ t: [], y: [] }, [1]), [null]);
});
