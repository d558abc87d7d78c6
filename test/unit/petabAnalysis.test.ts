import { test } from 'node:test';
import assert from 'node:assert/strict';
import { petabAnalysis, tellPetab } from '../../activities/studies/petab.ts';
import type { StudyPoint } from '../../storage/db/studies.ts';
import type { PetabCalibrationDesign } from '../../storage/studyDesign.ts';

// What a PEtab calibration's analysis makes of what its runs told: the waterfall, the
// warnings that the best may not be the optimum, the fits' bands, and where the profile
// and the Gauss-Newton view disagree.

const design: PetabCalibrationDesign = {
  kind: 'petab_calibration', import_id: 'petab_x', yaml: 'petab/p.yaml', files: [],
  parameters: [{ id: 'a', scale: 'log10', lb: -3, ub: 3, nominal: 0 }, { id: 'b', scale: 'lin', lb: 0, ub: 10, nominal: 1 }, { id: 'c', scale: 'log10', lb: -5, ub: 5, nominal: 0 }],
  optimizer: 'fides', starts: 4, starts_per_run: 2, max_evaluations: 1000, seed: 1, profile: { parameters: ['a', 'b', 'c'], options: {} }, profile_runs: 1, run_count: 3,
};

const end = (index: number, fval: number) => ({ index, fval, x: [0.5, 2, -5], n_fval: 100 + index, ended: 'converged', message: '', seconds: 1, evaluations_sha256: 'f'.repeat(64) });
const point = (idx: number, batch: number, outcome: Record<string, unknown>): StudyPoint => ({ idx, batch, run_id: `00000000-0000-4000-8000-00000000000${idx}`, params: {}, attrs: {}, outcome, status: 'completed' });
const profile = (parameter: string, points: Array<[number, number]>, identifiability: string, low: number | null, high: number | null) => ({ parameter, points, threshold: 1.92, low, high, identifiability, lb: -3, ub: 3 });
const hessian = {
  x: [0.5, 2, -5], free: ['a', 'b'], eigenvalues: [1, 2], positive_definite: true, flat: ['b'], at_bound: [null, null, 'lower'],
  se: [0.1, null, null], low: [0.3, null, null], high: [0.7, null, null],
};
const fit = {
  x: [0.5, 2, -5], fval: 10, transformations: { obs_lin: 'lin', obs_log10: 'log10' }, noise_distributions: { obs_lin: 'normal', obs_log10: 'laplace' },
  rows: [['obs_lin', 'c1', null, 0, 1.1, 1, 0.2], ['obs_log10', 'c1', 'pre', 5, 95, 100, 1]],
};

test('the waterfall ranks every start told, best first; with two starts at the best and profiles above it there is no warning', () => {
  const points = [
    point(0, 0, tellPetab('completed', { starts: [end(0, 12), end(1, 10)] }, [])),
    point(1, 0, tellPetab('completed', { starts: [end(2, 10.05), end(3, 30)] }, [])),
    point(2, 1, { profiles: [profile('a', [[0.2, 12.5], [0.5, 10], [0.8, 12.3]], 'identifiable', 0.31, 0.69)], hessian, fit, versions: { petab: '0.10.0' } }),
  ];
  assert.equal(points[0]!.outcome!.loss, 10, 'a run tells its best start as its loss');
  const a = petabAnalysis(design, points, { closed: false }) as Record<string, any>;
  assert.deepEqual(a.waterfall.map((w: any) => [w.rank, w.start, w.nll]), [[1, 1, 10], [2, 2, 10.05], [3, 0, 12], [4, 3, 30]]);
  assert.deepEqual(a.within_best, { threshold: 0.1, starts: 2, fraction: 0.5 });
  assert.deepEqual(a.best, { nll: 10, start: 1, run_id: points[0]!.run_id, parameters: { a: 0.5, b: 2, c: -5 } });
  assert.deepEqual(a.warnings, []);
  assert.deepEqual(a.library_versions, { petab: '0.10.0' });
  // a: the profile and the Gauss-Newton interval agree within a tenth of the profile's width.
  const [pa, pb, pc] = a.parameters;
  assert.deepEqual([pa.gauss_newton.status, pa.agreement], ['interval', 'agree']);
  assert.deepEqual([pb.gauss_newton.status, pb.profile, pb.agreement], ['flat', null, null]);
  assert.deepEqual([pc.gauss_newton.status, pc.gauss_newton.bound], ['at_bound', 'lower']);
  // The bands: one σ about the simulation on a lin scale, a factor of 10^σ on a log10 one.
  const [lin, log10] = a.fits;
  assert.deepEqual([lin.observable, lin.points[0].low, lin.points[0].high], ['obs_lin', 0.8, 1.2]);
  assert.deepEqual([log10.noise_distribution, log10.points[0].preequilibration, log10.points[0].low, log10.points[0].high], ['laplace', 'pre', 10, 1000]);
});

test('a waterfall without a plateau, and a profile that went below the best, each say the best may not be the optimum', () => {
  const points = [
    point(0, 0, tellPetab('completed', { starts: [end(0, 12), end(1, 10)] }, [])),
    point(1, 1, { profiles: [profile('a', [[0.2, 9.5], [0.5, 10], [0.8, 12.3]], 'identifiable', 0.31, 0.69)], hessian: null, fit: null }),
  ];
  const a = petabAnalysis(design, points, { closed: false }) as Record<string, any>;
  assert.equal(a.warnings.length, 2);
  assert.match(a.warnings[0], /^Only 1 of 2 starts ended within 0\.1 of the best NLL/);
  assert.match(a.warnings[1], /^a's profile reached NLL 9\.5000000, 0\.500 below the best start's 10\.000000/);
  assert.deepEqual(a.fits, []);
  assert.equal(a.gauss_newton, null);
});

test('where the two views disagree: a finite Gauss-Newton interval on a flat profile, and endpoints further apart than a tenth of the profile\'s width', () => {
  const wide = { ...hessian, flat: [], at_bound: [null, null, null], se: [0.1, 0.1, 0.1], low: [0.3, 1, -5.5], high: [0.7, 3, -4.5] };
  const points = [
    point(0, 0, tellPetab('completed', { starts: [end(0, 10), end(1, 10.01)] }, [])),
    point(1, 1, {
      profiles: [profile('a', [[0.5, 10]], 'identifiable', 0.1, 0.9), profile('b', [[2, 10]], 'flat', null, null), profile('c', [[-5, 10]], 'one_sided', -5.4, null)],
      hessian: wide, fit: null,
    }),
  ];
  const a = petabAnalysis(design, points, { closed: false }) as Record<string, any>;
  assert.deepEqual(a.parameters.map((p: any) => p.agreement), ['disagree', 'disagree', 'disagree']);
  assert.match(a.disagreements[0], /^a: the Gauss-Newton interval \[0\.3, 0\.7\] differs from the profile's \[0\.1, 0\.9\]/);
  assert.match(a.disagreements[1], /^b: the Gauss-Newton interval \[1, 3\] is finite, but the profile is flat/);
  assert.match(a.disagreements[2], /^c: .* the profile is one-sided: the data do not bound it on one side/);
});

test('a run that did not complete tells the starts it ended; a study with none told has no best and says why it stopped', () => {
  const told = tellPetab('failed', null, [end(4, 11)]);
  assert.deepEqual([told.failed, told.loss], ['failed', 11]);
  const a = petabAnalysis(design, [point(0, 0, tellPetab('failed', null, []))], { closed: true }) as Record<string, any>;
  assert.deepEqual([a.stopped, a.best, a.waterfall, a.warnings], ['closed', null, [], []]);
});
