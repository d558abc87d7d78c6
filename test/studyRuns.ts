import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { call, errorOf, fileBytes, newAccount, testDb } from './helpers.ts';

/** Every run of a study through GET /experiments/{id}/runs, page after page of `limit`. */
export async function listedRuns(key: string, experimentId: string, query = '', limit = 7): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const res = await call('GET', `/experiments/${experimentId}/runs?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`, { key });
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.items.length <= limit);
    out.push(...res.body.items);
    cursor = res.body.next_cursor;
    assert.equal(res.body.has_more, cursor !== null);
  } while (cursor);
  return out;
}

/**
 * A finished question study's runs listing says what its runs and parameter sets are, in
 * start order, page after page; sorted by `sortKey` either way, the extremes come first and
 * runs without a value last; `design.csv` re-hashes to its recorded digest and matches the
 * listing row for row. `told` reads the sorted number from a listed run.
 */
export async function assertRunsListing(key: string, e: any, sortKey: string, told: (r: any) => number | null): Promise<any[]> {
  const listed = await listedRuns(key, e.id);
  assert.deepEqual(listed.map((r) => r.run_id), e.arms[0].runs.map((r: any) => r.run_id), 'every run, in start order');
  const points: Array<{ run_id: string; params: Record<string, number>; batch: number }> = await testDb()('experiment_points').where({ experiment_id: e.id }).select('run_id', 'params', 'batch');
  const pointOf = new Map(points.map((p) => [p.run_id, p]));
  for (const r of listed) {
    assert.deepEqual(r.params, pointOf.get(r.run_id)?.params ?? null, `run ${r.position}: its parameter set`);
    assert.equal(r.batch, pointOf.get(r.run_id)?.batch ?? null);
    assert.equal(r.status, e.arms[0].runs.find((x: any) => x.run_id === r.run_id).status);
  }
  for (const order of ['asc', 'desc'] as const) {
    const sorted = await listedRuns(key, e.id, `&sort=${encodeURIComponent(sortKey)}&order=${order}`);
    const values = sorted.map(told);
    const present = values.filter((v): v is number => v !== null);
    assert.ok(present.length > 0, 'runs told the study a number');
    assert.deepEqual(present, [...present].sort((a, b) => (order === 'asc' ? a - b : b - a)), `sorted ${order} by ${sortKey}`);
    assert.ok(values.slice(present.length).every((v) => v === null), 'runs without a value come last');
    assert.deepEqual(sorted.map((r) => r.run_id).sort(), listed.map((r) => r.run_id).sort(), 'every run once');
  }
  const completed = await listedRuns(key, e.id, '&status=completed', 100);
  assert.deepEqual(completed.map((r) => r.run_id), listed.filter((r) => r.status === 'completed').map((r) => r.run_id), 'filtered by status');

  const file = e.artifacts.find((a: any) => a.file_name === 'design.csv');
  assert.ok(file, 'design.csv is among the study\'s files');
  const bytes = await fileBytes(key, file.download_url);
  assert.equal(createHash('sha256').update(bytes).digest('hex'), file.sha256, 'design.csv re-hashes to its recorded sha256');
  const rows: Array<Record<string, string>> = parse(bytes, { columns: true });
  assert.equal(rows.length, listed.length, 'one row per run');
  const cell = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  rows.forEach((row, i) => {
    const r = listed[i];
    assert.equal(row.run_id, r.run_id, `row ${i} is the listing's`);
    assert.equal(row.position, String(r.position));
    assert.equal(row.status, r.status);
    assert.equal(row.seed, String(r.seed));
    for (const name of e.design.parameters.map((p: any) => p.name)) assert.equal(row[name], cell(r.params?.[name]), `row ${i}: ${name}`);
    if (e.kind === 'calibration') assert.equal(row.loss, cell(r.loss), `row ${i}: loss`);
    else for (const [k, v] of Object.entries(r.outputs ?? {})) assert.equal(row[k], cell(v as number | null), `row ${i}: ${k}`);
  });

  const refused = errorOf(await call('GET', `/experiments/${e.id}/runs?sort=params.nothing`, { key }));
  assert.equal(refused.code, 'invalid_sort');
  assert.equal(refused.param, 'sort');
  assert.equal(errorOf(await call('GET', `/experiments/${e.id}/runs?cursor=bm9wZQ`, { key })).code, 'invalid_cursor');
  const other = await newAccount();
  const missing = await call('GET', `/experiments/${e.id}/runs`, { key: other.key });
  assert.equal(missing.status, 404);
  assert.equal(errorOf(missing).code, 'experiment_not_found', 'another account\'s study answers like a missing one');
  return listed;
}
