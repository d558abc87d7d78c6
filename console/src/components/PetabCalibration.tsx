/**
 * What a PEtab calibration found, answer first: the best NLL and the waterfall of every
 * start's end; each observable's fit at the best point with its noise band; each profiled
 * parameter's profile against the 95% threshold; then every parameter's intervals in a
 * table, where the profile and the Gauss-Newton view disagree, and the analysis's note.
 */
import type { PetabCalibrationAnalysis } from '@silico/sdk';
import { valueText } from '../format.ts';
import { PlotFigure } from './PlotFigure.tsx';

type Fit = PetabCalibrationAnalysis['fits'][number];
type FitPoint = NonNullable<Fit['points']>[number];
type Profile = PetabCalibrationAnalysis['profiles'][number];
type Parameter = PetabCalibrationAnalysis['parameters'][number];

const DATA = '#0072B2';
const BEST = '#D55E00';

/** The profile's flag as a scientist says it. */
const FLAG: Record<Profile['identifiability'], string> = { identifiable: 'identifiable', one_sided: 'one-sided', flat: 'flat' };

const percent = (share: number) => `${Math.round(share * 100)}%`;

/** The best NLL in words, with the share of starts that reached it (the waterfall's answer). */
function Answer({ a, best }: { a: PetabCalibrationAnalysis; best: NonNullable<PetabCalibrationAnalysis['best']> }) {
  const w = a.within_best;
  return (
    <p data-testid="petab-answer">
      Best NLL <strong>{valueText(best.nll)}</strong>, reached by start {best.start}. {w.starts} of {a.starts_told} starts ({percent(w.fraction)}) ended
      within {valueText(w.threshold)} of it{a.starts_told < a.starts_asked ? ` (${a.starts_asked} asked)` : ''}.
    </p>
  );
}

/** Every start's end NLL, best first: a plateau at the left is the optimum found again and again. */
function Waterfall({ a }: { a: PetabCalibrationAnalysis }) {
  const ends = a.waterfall ?? [];
  const w = a.within_best;
  // A log axis (as pyPESTO's waterfall) keeps a start stuck far off from squashing the rest; it needs every NLL positive.
  const log = ends.every((s) => s.nll > 0);
  return (
    <PlotFigure
      title="Waterfall: every start's end NLL, best first"
      label={`${ends.length} starts' end NLL ranked best first, from ${valueText(ends[0]?.nll)} to ${valueText(ends[ends.length - 1]?.nll)}; ${w.starts} of ${ends.length} within ${valueText(w.threshold)} of the best`}
      caption={`Each start's end point (dots), ranked by NLL; ${w.starts} of ${ends.length} starts (${percent(w.fraction)}) ended within ${valueText(w.threshold)} of the best NLL (ringed).`}
      options={(Plot) => ({
        width: 640, height: 260, marginLeft: 64, grid: true, inset: 12,
        // A tick on each rank while they are few (never between two), else Plot's own.
        x: { label: 'start, ranked by end NLL', ...(ends.length <= 12 ? { ticks: ends.map((s) => s.rank) } : {}), tickFormat: 'd' },
        y: { label: log ? 'end NLL (log axis)' : 'end NLL', type: log ? 'log' : 'linear' },
        marks: [
          Plot.dot(ends, { x: 'rank', y: 'nll', fill: DATA, r: 3, ariaHidden: 'true' }),
          Plot.dot(ends.filter((s) => s.nll - ends[0]!.nll <= w.threshold), { x: 'rank', y: 'nll', stroke: BEST, r: 6, strokeWidth: 2, ariaHidden: 'true' }),
        ],
      })}
    />
  );
}

/** The condition a measurement was taken in, its preequilibration first when it has one. */
const conditionOf = (p: FitPoint) => (p.preequilibration ? `${p.preequilibration} → ${p.condition}` : p.condition);

/** One observable: its measurements (dots), the simulation at the best point (line) and one noise scale about it (band). */
function ObservableFit({ f }: { f: Fit }) {
  const points = [...f.points ?? []].sort((p, q) => p.time - q.time).map((p) => ({ ...p, series: conditionOf(p) }));
  const conditions = [...new Set(points.map((p) => p.series))];
  const many = conditions.length > 1;
  const measured = points.filter((p) => p.measurement !== null);
  const simulated = points.filter((p) => p.simulation !== null);
  const banded = points.filter((p) => p.low !== null && p.high !== null);
  // A log-transformed observable's noise is multiplicative: its band reads straight on a log axis.
  const log = f.transformation !== 'lin' && points.every((p) => (p.measurement ?? 1) > 0 && (p.low ?? 1) > 0);
  // One condition: fixed colours; several: one colour each, named in the legend.
  const colour = (fixed: string) => (many ? 'series' : fixed);
  return (
    <PlotFigure
      title={`${f.observable}: fit with its noise band`}
      label={`${f.observable}: ${measured.length} measurements, the simulation at the best point and its band of one noise scale (${f.noise_distribution} noise, ${f.transformation} scale)${many ? `; ${conditions.length} conditions: ${conditions.join(', ')}` : ''}`}
      caption={`Measurements (dots), the simulation at the best point (line) and one noise scale about it (band, ${f.noise_distribution} on the ${f.transformation} scale)${many ? ', one colour per condition' : ''}.`}
      options={(Plot) => ({
        width: 320, height: 240, marginLeft: 56, grid: true,
        x: { label: 'time', ticks: 5 }, y: { label: log ? `${f.observable} (log axis)` : f.observable, type: log ? 'log' : 'linear', ticks: 5 },
        ...(many ? { color: { legend: true, domain: conditions } } : {}),
        marks: [
          Plot.areaY(banded, { x: 'time', y1: 'low', y2: 'high', z: 'series', fill: colour(BEST), fillOpacity: 0.2, ariaHidden: 'true' }),
          Plot.line(simulated, { x: 'time', y: 'simulation', z: 'series', stroke: colour(BEST), strokeWidth: 2, ariaHidden: 'true' }),
          Plot.dot(measured, { x: 'time', y: 'measurement', fill: colour(DATA), r: 3, ariaHidden: 'true' }),
        ],
      })}
    />
  );
}

/** A side of a profile's 95% interval: where it crossed the threshold, or the bound it reached without crossing. */
function side(value: number | null, bound: number): string {
  return value === null ? `${valueText(bound)} (bound, not crossed)` : valueText(value);
}

/** The profile's 95% interval in words, or why there is none. */
function profileInterval(p: Parameter): string {
  if (!p.profile) return 'not profiled';
  if (p.profile.identifiability === 'flat') return 'none: flat within the bounds';
  return `${side(p.profile.low, p.lb)} to ${side(p.profile.high, p.ub)}`;
}

/** The Gauss-Newton view of a parameter: its interval, or why it gives none. */
function gaussNewtonInterval(p: Parameter): string {
  const g = p.gauss_newton;
  if (!g) return '—';
  if (g.status === 'at_bound') return g.bound ? `at ${g.bound} bound` : 'at a bound';
  if (g.status === 'flat') return 'flat';
  return `${valueText(g.low)} to ${valueText(g.high)}`;
}

/** One profiled parameter: ΔNLL from the best against its value on its scale, with the 95% threshold dashed. */
function ProfileFigure({ pr, p, bestNll }: { pr: Profile; p: Parameter | undefined; bestNll: number }) {
  const points = (pr.points ?? []).filter((q): q is [number, number] => typeof q[0] === 'number' && typeof q[1] === 'number').map(([value, nll]) => ({ value, delta: nll - bestNll }));
  const scale = p?.scale ?? 'lin';
  const flag = FLAG[pr.identifiability];
  const crossings = [pr.low, pr.high].filter((v): v is number => v !== null);
  // A profile that dips below the best end point found a better fit than every start did: say so, it changes how to read the rest.
  const below = Math.min(0, ...points.map((q) => q.delta));
  const lower = below < -0.01 ? ` The profile reaches ${valueText(-below)} below the best NLL: the starts did not find the optimum along ${pr.parameter}.` : '';
  return (
    <PlotFigure
      title={`${pr.parameter} profile: ${flag}`}
      label={`${pr.parameter}'s profile, ${flag}: ΔNLL against ${pr.parameter} on its ${scale} scale, ${points.length} points; 95% interval ${p ? profileInterval(p) : `${valueText(pr.low)} to ${valueText(pr.high)}`} where it crosses ΔNLL = ${pr.threshold.toFixed(2)}`}
      caption={`ΔNLL (the profile's NLL minus the best) along ${pr.parameter} on its ${scale} scale; the dashed line is ΔNLL = ${pr.threshold.toFixed(2)}, the 95% threshold, and the interval's ends are marked where the profile crosses it.${lower}`}
      options={(Plot) => ({
        width: 320, height: 240, marginLeft: 56, grid: true,
        x: { label: `${pr.parameter} (${scale})`, ticks: 5 }, y: { label: 'ΔNLL', ticks: 5 },
        marks: [
          Plot.ruleY([pr.threshold], { stroke: '#333', strokeDasharray: '5,4', ariaHidden: 'true' }),
          Plot.ruleX(crossings, { stroke: BEST, strokeDasharray: '2,3', ariaHidden: 'true' }),
          Plot.line(points, { x: 'value', y: 'delta', stroke: DATA, strokeWidth: 2, ariaHidden: 'true' }),
          Plot.dot(points, { x: 'value', y: 'delta', fill: DATA, r: 2.5, ariaHidden: 'true' }),
        ],
      })}
    />
  );
}

function ParameterTable({ parameters }: { parameters: Parameter[] }) {
  return (
    <div class="table-scroll">
      <table>
        <caption>Parameters on their scales: the best value, the profile's 95% interval and flag, and the Gauss-Newton interval beside it</caption>
        <thead><tr>{['Parameter', 'Scale', 'Best', 'Profile 95% interval', 'Profile flag', 'Gauss-Newton 95% interval', 'Agreement'].map((h) => <th key={h} scope="col">{h}</th>)}</tr></thead>
        <tbody>{parameters.map((p) => (
          <tr key={p.id}>
            <th scope="row">{p.id}</th>
            <td>{p.scale}</td>
            <td class="number">{valueText(p.best)}</td>
            <td>{profileInterval(p)}</td>
            <td>{p.profile ? FLAG[p.profile.identifiability] : '—'}</td>
            <td>{gaussNewtonInterval(p)}</td>
            <td>{p.agreement ?? '—'}</td>
          </tr>
        ))}</tbody>
      </table>
    </div>
  );
}

/** The whole answer. Its per-point lists (waterfall, fits' and profiles' points) are absent from an answer asked without them (include_points=false); the console asks with them. */
export function PetabCalibration({ a }: { a: PetabCalibrationAnalysis }) {
  if (!a.best) return <p>No start ended ({a.stopped.replace('_', ' ')}). {a.note}</p>;
  const best = a.best;
  const byId = new Map(a.parameters.map((p) => [p.id, p]));
  return (
    <>
      <Answer a={a} best={best} />
      {a.warnings.length ? (
        <section aria-labelledby="petab-warnings" class="plan">
          <h3 id="petab-warnings">Is the best the optimum?</h3>
          <ul>{a.warnings.map((w) => <li key={w}>{w}</li>)}</ul>
        </section>
      ) : null}
      {a.waterfall?.length ? <Waterfall a={a} /> : null}
      {a.fits.length ? (
        <section class="small-multiples" aria-label="Each observable's fit with its noise band">
          {a.fits.map((f) => <ObservableFit key={f.observable} f={f} />)}
        </section>
      ) : <p>No fit at the best point was told.</p>}
      {a.profiles.length ? (
        <section class="small-multiples" aria-label="Each profiled parameter's profile">
          {a.profiles.map((pr) => <ProfileFigure key={pr.parameter} pr={pr} p={byId.get(pr.parameter)} bestNll={best.nll} />)}
        </section>
      ) : null}
      <ParameterTable parameters={a.parameters} />
      {a.disagreements.length ? (
        <section aria-labelledby="petab-disagreements">
          <h3 id="petab-disagreements">Where the profile and the Gauss-Newton view disagree</h3>
          <ul>{a.disagreements.map((d) => <li key={d}>{d}</li>)}</ul>
        </section>
      ) : a.profiles.length ? <p>The profile and the Gauss-Newton view agree on every profiled parameter they both see.</p> : null}
      <p class="hint">{a.note}</p>
    </>
  );
}
