/**
 * An experiment's comparison for one output: each arm's mean with its 95% interval, drawn
 * by Observable Plot (loaded with this chart, not with the console's first page).
 */
import { useEffect, useRef } from 'preact/hooks';
import type { Comparison } from '@silico/sdk';

export function ComparisonChart({ comparison, output }: { comparison: Comparison; output: string }) {
  const box = useRef<HTMLDivElement>(null);
  const rows = comparison.arms.flatMap((a) => {
    const m = a.metrics?.[output];
    return m ? [{ arm: a.label, mean: m.mean, lo: m.ci95?.[0] ?? m.mean, hi: m.ci95?.[1] ?? m.mean, n: m.n }] : [];
  });
  useEffect(() => {
    let chart: Element | null = null;
    let gone = false;
    void import('@observablehq/plot').then((Plot) => {
      if (gone || !box.current) return;
      chart = Plot.plot({
        marginLeft: 70,
        width: 640,
        height: 60 + 40 * rows.length,
        x: { label: `${output} (mean, ${Math.round(comparison.confidence_level * 100)}% interval)`, grid: true },
        y: { label: null },
        marks: [
          // The figure's own label describes the chart: the marks are hidden from assistive technology.
          Plot.ruleY(rows, { y: 'arm', x1: 'lo', x2: 'hi', stroke: '#0072B2', strokeWidth: 2, ariaHidden: 'true' }),
          Plot.dot(rows, { y: 'arm', x: 'mean', fill: '#D55E00', r: 4, ariaHidden: 'true', title: (d: (typeof rows)[number]) => `${d.arm}: mean ${d.mean}, ${d.lo} to ${d.hi} (n = ${d.n})` }),
        ],
      });
      box.current.replaceChildren(chart);
    });
    return () => { gone = true; chart?.remove(); };
  }, [comparison, output]);
  return (
    <figure class="chart" data-output={output}>
      <h3>{output}</h3>
      <div ref={box} role="img" aria-label={`${output}: ${rows.map((r) => `${r.arm} mean ${r.mean}`).join('; ')}`} />
      <figcaption class="hint">{comparison.note}</figcaption>
    </figure>
  );
}
