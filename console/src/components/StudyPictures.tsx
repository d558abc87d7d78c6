/**
 * The pictures a scientist expects of a study's runs, drawn from its runs listing:
 * sensitivity, the studied output against each parameter (one scatter per parameter);
 * calibration, each parameter's value over the evaluated sets and, two parameters at a
 * time, the evaluated sets coloured by their loss, the best marked. The runs table below
 * is their text alternative: it lists every point drawn. A PEtab calibration has none: its
 * runs carry starts or profiles, not one parameter set each, and its analysis draws them.
 *
 * A study of more than PICTURE_RUNS runs is drawn from its first PICTURE_RUNS in start
 * order (a design's first points already spread over its ranges; a calibration's best set
 * is added wherever it is), and each picture says so: a 100,000-run study's page loads
 * twenty pages of its runs, not a thousand.
 */
import { studyOutputKey, type Experiment, type StudyRun } from '@silico/sdk';
import { useSession } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { ErrorNotice } from './ErrorNotice.tsx';
import { PlotFigure } from './PlotFigure.tsx';
import { valueText } from '../format.ts';

type Design = NonNullable<Experiment['design']>;
const BEST = '#D55E00';

/** Runs the pictures draw at most. */
export const PICTURE_RUNS = 2000;

/** What a picture drew, when it drew fewer than the study's runs. */
const sampled = (drawn: number, total: number) => (drawn < total ? ` Drawn from the first ${drawn.toLocaleString('en')} of its ${total.toLocaleString('en')} runs, in start order.` : '');

function SensitivityScatters({ d, runs, total }: { d: Extract<Design, { kind: 'sensitivity' }>; runs: StudyRun[]; total: number }) {
  return (
    <>
      {d.outputs.filter((o) => o.summary !== 'series').map((o) => {
        const key = studyOutputKey(o);
        const told = runs.filter((r) => r.params && typeof r.outputs?.[key] === 'number');
        const yLabel = `${key}${o.units ? ` (${o.units})` : ''}`;
        return (
          <section key={key} class="small-multiples" aria-label={`${key} against each parameter`}>
            {d.parameters.map((p) => (
              <PlotFigure
                key={p.name}
                title={`${key} against ${p.name}`}
                label={`${told.length} runs: ${key} against ${p.name}, from ${valueText(p.low)} to ${valueText(p.high)}; the runs table lists each`}
                caption={`Each completed run's ${key} at the ${p.name} it was given.${sampled(runs.length, total)}`}
                options={(Plot) => ({
                  width: 320, height: 220, marginLeft: 56, grid: true,
                  x: { label: p.name, domain: [p.low, p.high], ticks: 4 }, y: { label: yLabel, ticks: 5 },
                  marks: [Plot.dot(told, { x: (r: StudyRun) => r.params![p.name], y: (r: StudyRun) => r.outputs![key], r: 2, fill: '#0072B2', fillOpacity: 0.6, ariaHidden: 'true' })],
                })}
              />
            ))}
          </section>
        );
      })}
    </>
  );
}

function CalibrationPictures({ d, runs, total }: { d: Extract<Design, { kind: 'calibration' }>; runs: StudyRun[]; total: number }) {
  // The evaluated sets in the order asked (runs are given their sets in start order).
  const told = runs.filter((r) => r.params && r.loss !== null).map((r, i) => ({ ...r, evaluated: i + 1 }));
  if (!told.length) return null;
  const best = told.reduce((b, r) => (r.loss! < b.loss! ? r : b));
  const pairs = d.parameters.flatMap((p, i) => d.parameters.slice(i + 1).map((q) => [p, q] as const));
  return (
    <>
      <section class="small-multiples" aria-label="Each parameter over the evaluated sets">
        {d.parameters.map((p) => (
          <PlotFigure
            key={p.name}
            title={`${p.name} over the evaluated sets`}
            label={`${told.length} evaluated sets: ${p.name} in the order asked; the best set's ${valueText(best.params![p.name])} marked`}
            caption={`The ${p.name} of each evaluated set in the order the optimizer asked for them; the best set is ringed.${sampled(runs.length, total)}`}
            options={(Plot) => ({
              width: 320, height: 220, marginLeft: 56, grid: true,
              x: { label: 'evaluated set', ticks: 5 }, y: { label: p.name, domain: [p.low, p.high], ticks: 5 },
              marks: [
                Plot.dot(told, { x: 'evaluated', y: (r: StudyRun) => r.params![p.name], r: 2, fill: '#0072B2', ariaHidden: 'true' }),
                Plot.dot([best], { x: 'evaluated', y: (r: StudyRun) => r.params![p.name], r: 6, stroke: BEST, strokeWidth: 2, ariaHidden: 'true' }),
              ],
            })}
          />
        ))}
      </section>
      {pairs.length ? (
        <section class="small-multiples" aria-label="The evaluated sets, two parameters at a time">
          {pairs.map(([p, q]) => (
            <PlotFigure
              key={`${p.name}-${q.name}`}
              title={`${q.name} against ${p.name}, by loss`}
              label={`${told.length} evaluated sets by ${p.name} and ${q.name}, coloured by loss; the best set at ${valueText(best.params![p.name])}, ${valueText(best.params![q.name])} marked`}
              caption={`Each evaluated set, coloured by its loss (darker is lower); the best set is ringed.${sampled(runs.length, total)}`}
              options={(Plot) => ({
                width: 320, height: 280, marginLeft: 56, grid: true,
                x: { label: p.name, domain: [p.low, p.high], ticks: 4 }, y: { label: q.name, domain: [q.low, q.high], ticks: 5 },
                color: { scheme: 'viridis', legend: true, label: 'loss' },
                marks: [
                  Plot.dot(told, { x: (r: StudyRun) => r.params![p.name], y: (r: StudyRun) => r.params![q.name], fill: 'loss', r: 3, ariaHidden: 'true' }),
                  Plot.dot([best], { x: (r: StudyRun) => r.params![p.name], y: (r: StudyRun) => r.params![q.name], r: 7, stroke: BEST, strokeWidth: 2, ariaHidden: 'true' }),
                ],
              })}
            />
          ))}
        </section>
      ) : null}
    </>
  );
}

/** A question study's pictures of its runs, once they have told the study something. */
export function StudyPictures({ experiment: e }: { experiment: Experiment }) {
  const { client } = useSession();
  const d = e.design?.kind === 'petab_calibration' ? null : e.design;
  const total = e.run_totals.total;
  const runs = useLoad(async () => {
    const all: StudyRun[] = [];
    if (!d) return all;
    for await (const r of client.experiments.runs(e.id, { limit: 100 })) {
      all.push(r);
      if (all.length >= PICTURE_RUNS) break;
    }
    if (d.kind === 'calibration' && total > all.length) {
      const [best] = (await client.experiments.runs(e.id, { sort: 'loss', limit: 1 })).items;
      if (best && best.loss !== null && !all.some((r) => r.run_id === best.run_id)) all.push(best);
    }
    return all;
  }, [e.id, e.updated_at]);
  if (!d) return null;
  if (runs.error) return <ErrorNotice error={runs.error} />;
  if (!runs.data) return <p aria-busy="true">Loading the runs…</p>;
  return d.kind === 'sensitivity' ? <SensitivityScatters d={d} runs={runs.data} total={total} /> : <CalibrationPictures d={d} runs={runs.data} total={total} />;
}
