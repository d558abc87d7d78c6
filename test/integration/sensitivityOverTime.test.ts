import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { call, closeTestDb, errorOf, fileBytes, newAccount, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { openStudy, waitForStudy } from '../studies.ts';
import { listedRuns } from '../studyRuns.ts';
import { analysisText } from '../../sdk/src/cli/commands/experiment.ts';

// Sensitivity over time on the real stack: a lab whose output is y(t) = a·t + b, with a
// and b independent and uniform on [0, 1], has first-order indices known at every time,
// S_a(t) = t²/(t² + 1) and S_b(t) = 1/(t² + 1); its lagged output z(t) = a·max(t − 2, 0)
// is the same in every run until t = 2. Sobol' and eFAST studies state the indices at each
// output time from the same runs, and say where none is defined.

const LINEAR = path.join(REPO_ROOT, 'test/fixtures/labs/linear-trend');
const PARAMETERS = ['a', 'b'].map((input) => ({ input, low: 0, high: 1 }));
const S_A = (t: number) => t ** 2 / (t ** 2 + 1);
const S_B = (t: number) => 1 / (t ** 2 + 1);

let owner: Awaited<ReturnType<typeof newAccount>>;
let ws: Awaited<ReturnType<typeof workspaceOfLab>>;
before(async () => {
  owner = await newAccount({ usd: 100 });
  ws = await workspaceOfLab(owner.key, 'Linear trend', LINEAR);
});
after(closeTestDb);

const lab = () => ({ workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: 10 });
const plan = (sensitivity: Record<string, unknown>) => call('POST', '/experiment-plans', { key: owner.key, body: { name: 'Over time', lab: lab(), sensitivity } });

/** Each parameter's first-order index at each time is the analytic one within 0.05. */
function assertAnalytic(o: any, what: string): void {
  const [a, b] = ['a', 'b'].map((p) => o.over_time.indices.find((r: any) => r.parameter === p));
  (o.over_time.times as number[]).forEach((t, j) => {
    assert.ok(Math.abs(a.S1[j] - S_A(t)) <= 0.05, `${what}: S_a(${t}) = ${a.S1[j]}, analytic ${S_A(t).toFixed(4)}`);
    assert.ok(Math.abs(b.S1[j] - S_B(t)) <= 0.05, `${what}: S_b(${t}) = ${b.S1[j]}, analytic ${S_B(t).toFixed(4)}`);
  });
}

test('Sobol\' and eFAST over time: S1(t) of y = a·t + b is t²/(t² + 1) and 1/(t² + 1) within 0.05 at every output time; z\'s indices are undefined while it is the same in every run, with why; who dominates when; indices.csv holds every index', { timeout: 600_000 }, async () => {
  const sobol = await openStudy(owner.key, {
    name: 'Linear trend over time (Sobol\')', lab: lab(),
    sensitivity: { parameters: PARAMETERS, outputs: [{ output: 'y', summary: 'series' }, { output: 'z', summary: 'series' }], method: 'sobol', base_sample: 128, seed: 58 },
  });
  assert.equal(sobol.plan.run_count, 128 * 4, 'Saltelli\'s N(D + 2): no extra runs for the times');
  // eFAST on a grid the study names, between the run's own times (y is linear in t: its value there is exact).
  const efast = await openStudy(owner.key, {
    name: 'Linear trend over time (eFAST)', lab: lab(),
    sensitivity: { parameters: PARAMETERS, outputs: [{ output: 'y', summary: 'series', times: [1.5, 2.5, 4, 10] }], method: 'efast', base_sample: 129, seed: 58 },
  });
  assert.equal(efast.plan.run_count, 129 * 2, 'eFAST\'s N·D');
  assert.deepEqual(efast.plan.design.outputs[0].times, [1.5, 2.5, 4, 10]);
  const [s, e] = await Promise.all([waitForStudy(owner.key, sobol.study.id), waitForStudy(owner.key, efast.study.id)]);

  const a = s.analysis;
  assert.equal(a.complete, true, a.note);
  const [y, z] = a.outputs;
  assert.equal(y.output, 'y.series');
  assert.deepEqual(y.over_time.times, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'the series\' own times');
  assert.deepEqual(y.indices, [], 'no single number stands for a series');
  assertAnalytic(y, 'Sobol\'');
  assert.deepEqual(y.over_time.undefined, []);
  assert.equal(y.over_time.rank, 'ST');
  // a dominates from t = 2 on (at t = 1 both are 0.5: either may lead there).
  const last = y.over_time.leaders.at(-1);
  assert.deepEqual([last.parameter, last.to], ['a', 10]);
  assert.ok(last.from <= 2, JSON.stringify(y.over_time.leaders));
  assert.deepEqual(y.ranking, ['a', 'b'], 'a moves y most over the run');
  // z = a·max(t − 2, 0): 0 in every run at t = 1 and 2, a alone after.
  assert.deepEqual(z.over_time.undefined.map((u: any) => [u.time, u.reason]), [[1, 'constant'], [2, 'constant']]);
  assert.match(z.over_time.undefined[0].message, /same in every run/);
  const za = z.over_time.indices.find((r: any) => r.parameter === 'a');
  assert.deepEqual([za.S1[0], za.ST[0], za.S1_conf[1]], [null, null, null], 'undefined, not NaN or 0');
  za.S1.slice(2).forEach((v: number, j: number) => assert.ok(Math.abs(v - 1) <= 0.05, `S_a of z at t = ${j + 3}: ${v}`));
  assert.deepEqual(z.over_time.leaders, [{ parameter: 'a', from: 3, to: 10 }]);
  assert.match(analysisText(a), /over time \(10 times, by ST\): .*a from \d to 10/);

  const f = e.analysis;
  assert.equal(f.method, 'efast');
  assert.deepEqual(f.outputs[0].over_time.times, [1.5, 2.5, 4, 10]);
  assertAnalytic(f.outputs[0], 'eFAST');
  for (const r of f.outputs[0].over_time.indices) for (const k of ['S1', 'S1_conf', 'ST', 'ST_conf']) assert.equal(r[k].length, 4, `${r.parameter} ${k} at each time`);

  // indices.csv: a row per output, time, parameter and index, as the analysis states them.
  const file = s.artifacts.find((x: any) => x.file_name === 'indices.csv');
  assert.ok(file, JSON.stringify(s.artifacts.map((x: any) => x.file_name)));
  const rows: Array<Record<string, string>> = parse(await fileBytes(owner.key, file.download_url), { columns: true });
  assert.deepEqual(Object.keys(rows[0]!), ['output', 'time', 'parameter', 'index', 'value', 'low', 'high']);
  assert.equal(rows.length, 2 * 10 * 2 * 2, 'outputs × times × parameters × (S1, ST)');
  const row = rows.find((r) => r.output === 'y.series' && r.time === '3' && r.parameter === 'a' && r.index === 'S1')!;
  const ya = y.over_time.indices.find((r: any) => r.parameter === 'a');
  assert.equal(Number(row.value), ya.S1[2]);
  assert.ok(Math.abs(Number(row.low) - (ya.S1[2] - ya.S1_conf[2])) < 1e-12 && Math.abs(Number(row.high) - (ya.S1[2] + ya.S1_conf[2])) < 1e-12);
  const blank = rows.find((r) => r.output === 'z.series' && r.time === '1' && r.index === 'S1')!;
  assert.deepEqual([blank.value, blank.low, blank.high], ['', '', ''], 'undefined: empty, not 0');
  // A series is no number to list a run by: the runs listing carries none for it.
  const [first] = await listedRuns(owner.key, s.id, '', 1);
  assert.deepEqual(first.outputs, {});
});

test('bad designs over time and for the new methods are refused at plan time with precise codes and params', async () => {
  const series = (extra: Record<string, unknown> = {}) => [{ output: 'y', summary: 'series', ...extra }];
  const cases: Array<[Record<string, unknown>, number, string, string]> = [
    [{ outputs: series({ times: [1, 11] }), method: 'sobol', base_sample: 8 }, 422, 'parameter_out_of_range', 'sensitivity.outputs[0].times[1]'],
    [{ outputs: series({ times: [-1] }), method: 'sobol', base_sample: 8 }, 422, 'parameter_out_of_range', 'sensitivity.outputs[0].times[0]'],
    [{ outputs: series({ times: [2, 2] }), method: 'sobol', base_sample: 8 }, 422, 'parameter_out_of_range', 'sensitivity.outputs[0].times[1]'],
    [{ outputs: [{ output: 'y', summary: 'final', times: [1] }], method: 'sobol', base_sample: 8 }, 422, 'parameter_not_allowed', 'sensitivity.outputs[0].times'],
    [{ outputs: series(), method: 'efast', base_sample: 64 }, 422, 'parameter_out_of_range', 'sensitivity.base_sample'],
    [{ outputs: series(), method: 'rbd_fast', base_sample: 43 }, 422, 'parameter_out_of_range', 'sensitivity.base_sample'],
    // The run samples after each step of 1, never at 0.
    [{ outputs: series({ times: [0.5, 2] }), method: 'sobol', base_sample: 8 }, 422, 'parameter_out_of_range', 'sensitivity.outputs[0].times[0]'],
    [{ outputs: series(), method: 'pawn', base_sample: 99 }, 422, 'parameter_out_of_range', 'sensitivity.base_sample'],
    [{ outputs: [{ output: 'y', summary: 'time_of_max' }], method: 'delta', base_sample: 100 }, 422, 'parameter_not_allowed', 'sensitivity.outputs[0].summary'],
    [{ outputs: series(), method: 'delta', base_sample: 100, num_levels: 4 }, 422, 'parameter_not_allowed', 'sensitivity.num_levels'],
    [{ outputs: series({ times: Array.from({ length: 1000 }, (_, i) => 1 + i * 0.009) }), method: 'delta', base_sample: 2001 }, 422, 'study_too_large', 'sensitivity.base_sample'],
    [{ outputs: series(), method: 'fast', base_sample: 100 }, 422, 'parameter_invalid_value', 'sensitivity.method'],
  ];
  for (const [design, status, code, param] of cases) {
    const res = await plan({ parameters: PARAMETERS, ...design });
    assert.equal(res.status, status, `${JSON.stringify(design)}: ${res.text}`);
    assert.deepEqual([errorOf(res).code, errorOf(res).param], [code, param], JSON.stringify(design));
  }
  // Each method's plan counts its own runs: eFAST N·D, a Latin hypercube N.
  for (const [method, n, runs] of [['efast', 65, 130], ['rbd_fast', 44, 44], ['delta', 50, 50], ['pawn', 100, 100], ['morris', 4, 12]] as const) {
    const res = await plan({ parameters: PARAMETERS, outputs: series(), method, base_sample: n });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.run_count, runs, method);
  }
});
