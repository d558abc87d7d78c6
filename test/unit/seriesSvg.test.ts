import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seriesSvg, type Point } from '../../activities/execution/artifacts.ts';

/** The path's vertices, read back from its `d`. */
function vertices(svg: string): Array<[number, number]> {
  const d = /<path [^>]*d="([^"]*)"/.exec(svg)?.[1] ?? '';
  return [...d.matchAll(/[ML](-?[\d.]+),(-?[\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
}

test('a series chart draws one vertex per finite point, inside its axes, in order, with its title escaped', () => {
  const points: Point[] = Array.from({ length: 500 }, (_, i) => [i * 0.1, Math.exp(i / 100)]);
  points.splice(10, 0, [1.05, null], [1.06, 'n/a'], [1.07, Number.NaN]);
  const svg = seriesSvg('biomass <g/L> & "x"', 'g/L', points);
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.includes('biomass &#60;g/L&#62; &#38; &#34;x&#34;'));
  const v = vertices(svg);
  assert.equal(v.length, 500);
  for (const [x, y] of v) assert.ok(x >= 76 && x <= 624 && y >= 36 && y <= 312, `${x},${y} inside the plot`);
  for (let i = 1; i < v.length; i++) assert.ok(v[i]![0] >= v[i - 1]![0], 'time runs left to right');
  assert.ok(v[v.length - 1]![1] < v[0]![1], 'a growing series rises');
  assert.ok(!svg.includes('NaN'));
});

test('a constant or empty series still draws axes with ticks and no NaN', () => {
  for (const points of [[[0, 5], [1, 5]], [[0, 'x'], [1, null]]] as Point[][]) {
    const svg = seriesSvg('flat', null, points);
    assert.ok(!svg.includes('NaN'), svg);
    assert.ok((svg.match(/<text /g) ?? []).length >= 4, 'title, axis label and ticks');
  }
});
