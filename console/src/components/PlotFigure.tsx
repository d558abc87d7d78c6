import { useEffect, useRef } from 'preact/hooks';

type PlotOptions = Record<string, unknown>;

/** One Observable Plot chart, drawn into its figure once the library has loaded. */
export function PlotFigure({ label, title, caption, options }: { label: string; title: string; caption: string; options: (Plot: typeof import('@observablehq/plot')) => PlotOptions }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let chart: Element | null = null;
    let gone = false;
    void import('@observablehq/plot').then((Plot) => {
      if (gone || !box.current) return;
      chart = Plot.plot(options(Plot) as never);
      box.current.replaceChildren(chart);
    });
    return () => { gone = true; chart?.remove(); };
  }, [label]);
  return (
    <figure class="chart" data-chart={title}>
      <h3>{title}</h3>
      <div ref={box} role="img" aria-label={label} />
      <figcaption class="hint">{caption}</figcaption>
    </figure>
  );
}
