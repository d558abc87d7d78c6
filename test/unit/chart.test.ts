import { test } from 'node:test';
import assert from 'node:assert/strict';
import { axisLabel, axisOffset, chartSvg, tickLabels } from '../../kernel/chart.ts';
import { seriesSvg, type Point } from '../../activities/execution/artifacts.ts';

// The rules every chart follows (the console's, their downloads, a run's SVG artifacts):
// distinct, short tick labels; a narrow range as an offset plus deltas; units on the axis.

const texts = (svg: string, cls: string) => [...svg.matchAll(new RegExp(`<text class="${cls}"[^>]*>([^<]*)</text>`, 'g'))].map((m) => m[1]!);

test('tick labels are distinct and as short as their spacing allows, at any range', () => {
  assert.deepEqual(tickLabels([1.546, 1.5465, 1.547, 1.5475]), ['1.5460', '1.5465', '1.5470', '1.5475']);
  assert.deepEqual(tickLabels([0, 0.0005, 0.001]), ['0.0000', '0.0005', '0.0010']);
  assert.deepEqual(tickLabels([0, 250000, 500000]), ['0', '250,000', '500,000']);
  assert.deepEqual(tickLabels([-0.1 + 0.1, 0.2]), ['0.0', '0.2'], 'a rounding error is zero');
  const tiny = tickLabels([1e-9, 2e-9, 3e-9]);
  assert.equal(new Set(tiny).size, 3, tiny.join(' '));
});

test('a range a hundred times narrower than its magnitude is an offset plus deltas; a wide one is not', () => {
  assert.equal(axisOffset(1.5462, 1.5478), 1.546);
  assert.equal(axisOffset(1000.02, 1000.09), 1000.02);
  assert.equal(axisOffset(-2.00031, -2.00012), -2.0004);
  assert.equal(axisOffset(0, 1), null);
  assert.equal(axisOffset(1.2, 1.9), null);
  assert.equal(axisOffset(5, 5), null, 'a constant has no range to narrow');
  assert.equal(axisLabel('density (a.u.)', 1.546), 'density (a.u.), value − 1.546');
  assert.equal(axisLabel(null, 1.546), 'value − 1.546');
  assert.equal(axisLabel('g/L', null), 'g/L');
});

test('a narrow series\' SVG (predator-prey\'s invariant) reads its offset, distinct delta ticks and its units', () => {
  const points: Point[] = Array.from({ length: 400 }, (_, i) => [i * 0.05, 1.5462 + 0.0016 * Math.sin(i / 30) ** 2]);
  const svg = seriesSvg('invariant', 'density (a.u.)', points);
  assert.match(svg, /data-y-offset="1.546"/);
  const y = texts(svg, 'tick y');
  assert.ok(y.length >= 3 && new Set(y).size === y.length, `distinct: ${y.join(' ')}`);
  assert.ok(y.every((l) => l.length <= 6), `short: ${y.join(' ')}`);
  const x = texts(svg, 'tick x');
  assert.equal(new Set(x).size, x.length);
  assert.deepEqual(texts(svg, 'axis-label y'), ['density (a.u.), value − 1.546']);
});

test('several series on one chart: one path each, a legend naming each with its units', () => {
  const t = [0, 1, 2, 3];
  const svg = chartSvg('S, I, R (people)', [
    { name: 'S', units: 'people', t, y: [990, 900, 700, 500] },
    { name: 'I', units: 'people', t, y: [10, 80, 200, 250] },
  ]);
  assert.equal((svg.match(/<path /g) ?? []).length, 2);
  assert.deepEqual(texts(svg, 'legend'), ['S (people)', 'I (people)']);
  assert.ok(!svg.includes('data-y-offset'));
  assert.deepEqual(texts(svg, 'axis-label y'), ['people']);
});
