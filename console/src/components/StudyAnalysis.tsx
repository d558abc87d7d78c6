/**
 * What a sensitivity or calibration study found, drawn by Observable Plot (loaded with
 * these charts only): each output's indices per parameter with their 95% intervals (a
 * series output's over time, IndicesOverTime.tsx); or
 * the best fit over the observations and the loss of every evaluated set, with the best
 * parameters and their intervals in a table; or a PEtab calibration's answer
 * (PetabCalibration.tsx).
 */
import type { CalibrationAnalysis, SensitivityAnalysis, StudyAnalysis as Analysis } from '@silico/sdk';
import { valueText } from '../format.ts';
import { PlotFigure } from './PlotFigure.tsx';
import { PetabCalibration } from './PetabCalibration.tsx';
import { IndicesOverTime } from './IndicesOverTime.tsx';
import { drawnIndices, fieldLabel, methodFields, SENSITIVITY_METHODS } from '../../../kernel/sensitivityMethods.ts';

function Sensitivity({ a }: { a: SensitivityAnalysis }) {
  if (!a.complete) return <p>{a.note}</p>;
  return (
    <>
      {a.outputs.map((o) => {
        if (o.over_time) return <IndicesOverTime key={o.output} o={o} method={a.method} fields={a.fields ?? methodFields(a.method)} />;
        // The method's fields in its order, as the analysis lists them (or the registry, for one stored before it did).
        const fields = a.fields ?? methodFields(a.method);
        const drawn = drawnIndices(a.method);
        const rows = o.indices.flatMap((r: any) => drawn.map(({ index, conf }) => [fieldLabel(index), r[index], conf ? r[conf] : null])
          .filter(([, v]) => typeof v === 'number').map(([index, v, c]) => ({ parameter: r.parameter as string, index: index as string, value: v as number, lo: (v as number) - ((c as number) ?? 0), hi: (v as number) + ((c as number) ?? 0) })));
        const by = fieldLabel(SENSITIVITY_METHODS[a.method].rank);
        return (
          <section key={o.output} aria-label={`Indices of ${o.output}`}>
            <PlotFigure
              title={o.output}
              label={`${o.output}: ${rows.map((r) => `${r.parameter} ${r.index} ${valueText(r.value)}`).join('; ')}; ranked ${o.ranking.join(' > ')}`}
              caption={`Ranked by ${by === 'ST' ? 'total index' : by}: ${o.ranking.join(' > ')}. ${a.note}`}
              options={(Plot) => ({
                marginLeft: 60, width: 640, height: 80 + 50 * o.indices.length,
                x: { label: `${drawn.map((i) => fieldLabel(i.index)).join(', ')}${drawn.some((i) => i.conf) ? ' (95% interval)' : ''}`, grid: true }, y: { label: null }, fy: { label: null }, color: { legend: true },
                marks: [
                  Plot.barX(rows, { y: 'index', x: 'value', fy: 'parameter', fill: 'index', ariaHidden: 'true' }),
                  Plot.ruleY(rows, { y: 'index', x1: 'lo', x2: 'hi', fy: 'parameter', stroke: '#333', ariaHidden: 'true' }),
                  Plot.ruleX([0], { ariaHidden: 'true' }),
                ],
              })}
            />
            <table>
              <caption>Indices of {o.output}</caption>
              <thead><tr><th scope="col">Parameter</th>{fields.map((f) => <th key={f} scope="col">{fieldLabel(f)}</th>)}</tr></thead>
              <tbody>{o.indices.map((r: any) => (
                <tr key={r.parameter}><th scope="row">{r.parameter}</th>{fields.map((f) => <td key={f}>{valueText(r[f])}</td>)}</tr>
              ))}</tbody>
            </table>
          </section>
        );
      })}
    </>
  );
}

function Calibration({ a }: { a: CalibrationAnalysis }) {
  if (!a.best) return <p>{a.note}</p>;
  const intervals = a.uncertainty.intervals;
  const losses = a.loss_curve.filter((p) => p.loss !== null);
  return (
    <>
      <table>
        <caption>Best parameters: each estimate with the 95% interval around it, and the best evaluated set (loss {valueText(a.best.loss)}; stopped: {a.stopped})</caption>
        <thead><tr><th scope="col">Parameter</th><th scope="col">Estimate</th><th scope="col">95% interval</th><th scope="col">Best evaluated set</th></tr></thead>
        <tbody>{Object.entries(a.best.parameters).map(([name, v]) => (
          <tr key={name}>
            <th scope="row">{name}</th>
            <td>{intervals?.[name] ? valueText(intervals[name].estimate) : '-'}</td>
            <td>{intervals?.[name] ? `${valueText(intervals[name].low)} to ${valueText(intervals[name].high)}` : '-'}</td>
            <td>{valueText(v)}</td>
          </tr>
        ))}</tbody>
      </table>
      <p class="hint">{a.uncertainty.note}</p>
      {a.fitted.map((s) => {
        const points = s.t.map((t, i) => ({ t, observed: s.observed[i]!, fitted: s.fitted[i]! }));
        return (
          <PlotFigure
            key={s.output}
            title={`${s.output}: fit over the observations`}
            label={`${s.output}${s.units ? ` (${s.units})` : ''}: ${points.length} observations and the best fit`}
            caption={a.note}
            options={(Plot) => ({
              width: 640, height: 300, x: { label: 'time', grid: true }, y: { label: s.units ? `${s.output} (${s.units})` : s.output, grid: true },
              marks: [
                Plot.dot(points, { x: 't', y: 'observed', fill: '#0072B2', r: 3, ariaHidden: 'true', title: (d: { t: number; observed: number }) => `observed ${d.observed} at ${d.t}` }),
                Plot.line(points, { x: 't', y: 'fitted', stroke: '#D55E00', strokeWidth: 2, ariaHidden: 'true' }),
              ],
            })}
          />
        );
      })}
      <PlotFigure
        title="Loss of each evaluated set"
        label={`${losses.length} evaluated sets; best loss ${valueText(a.best.loss)}`}
        caption="Each set's loss in the order asked (dots) and the best so far (line)."
        options={(Plot) => ({
          width: 640, height: 260, x: { label: 'evaluated set', grid: true }, y: { label: 'loss', grid: true },
          marks: [
            Plot.dot(losses, { x: 'run', y: 'loss', fill: '#999', r: 2, ariaHidden: 'true' }),
            Plot.line(losses, { x: 'run', y: 'best_loss', stroke: '#D55E00', curve: 'step-after', ariaHidden: 'true' }),
          ],
        })}
      />
    </>
  );
}

export function StudyAnalysis({ analysis }: { analysis: NonNullable<Analysis> }) {
  switch (analysis.kind) {
    case 'sensitivity': return <Sensitivity a={analysis} />;
    case 'calibration': return <Calibration a={analysis} />;
    case 'petab_calibration': return <PetabCalibration a={analysis} />;
  }
}
