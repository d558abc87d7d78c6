import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Connection, Client } from '@temporalio/client';
import { call, closeTestDb, directFinalOutputs, downloadArtifact, newAccount, publishFixtureLab, testDb, waitForRun } from '../helpers.ts';
import { runWorkflowId } from '../../kernel/workflowNames.ts';

// Outputs of any size: whatever grows with a lab's output goes from the execution
// activity to the object store (claim check); the workflow carries identifiers and a
// few numbers, and the results route stays bounded.

after(closeTestDb);
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
let owner: Awaited<ReturnType<typeof newAccount>>;
let connection: Connection;
before(async () => {
  owner = await newAccount({ usd: 20 });
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
});
after(async () => connection?.close());

const download = (runId: string, artifactId: string) => downloadArtifact(owner.key, runId, artifactId);

/** The largest payload bytes carried by any one event of a run's workflow history. */
async function largestHistoryEvent(runId: string): Promise<number> {
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
  const history = await client.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
  const bytesIn = (v: unknown): number => {
    if (v instanceof Uint8Array) return v.length;
    if (Array.isArray(v)) return v.reduce((n: number, x) => n + bytesIn(x), 0);
    if (v && typeof v === 'object') return Object.values(v).reduce((n: number, x) => n + bytesIn(x), 0);
    return 0;
  };
  assert.ok(history.events?.length, 'the run has a history');
  return Math.max(...history.events!.map(bytesIn));
}

async function runFixture(name: string, inputs: Record<string, unknown> = {}, extra: { seed?: number } = {}) {
  const ref = await publishFixtureLab(owner, name);
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref, inputs, max_runtime_seconds: 300, ...extra } });
  assert.equal(res.status, 200, res.text);
  const run = await waitForRun(owner.key, res.body.id, 240000);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  const results = await call('GET', `/runs/${run.id}/results`, { key: owner.key });
  assert.equal(results.status, 200);
  return { ref, run, results };
}

/** An output's final value from results: inline, or from its artifact when too large to keep inline. */
async function finalValue(runId: string, value: any): Promise<unknown> {
  return value?.artifact_ref ? JSON.parse((await download(runId, value.artifact_ref.artifact_id)).toString()) : value;
}

test('a record output that grows every step runs its 5,000 steps to the end: final values equal a direct run with the seed, each step keeps a bounded sample', { timeout: 300_000 }, async () => {
  // The shape of an ecosystem lab that stopped at step ~2,000: a record holding the whole
  // trajectory so far, every step (2,000 such samples passed the protocol's 8 MiB line).
  const { ref, run, results } = await runFixture('growing-record', {}, { seed: 42 });
  const direct = await directFinalOutputs(ref, 42);
  for (const name of ['trajectory', 'state', 'x']) assert.deepEqual(await finalValue(run.id, results.body.outputs[name]), direct[name], `${name}: the final value whole, as the runtime gives it`);
  const trajectory = direct.trajectory as { steps: number; points: unknown[] };
  assert.equal(trajectory.steps, 5000);
  assert.equal(trajectory.points.length, 5000);
  const byName = Object.fromEntries(results.body.artifacts.map((a: any) => [a.file_name, a]));
  // Per step, the large record keeps its top-level numbers; the small one is kept whole.
  const rows = (await download(run.id, byName['trajectory.csv'].artifact_id)).toString().trimEnd().split('\n');
  assert.equal(rows.length, 5001, 'a header and one sample per step');
  assert.deepEqual(JSON.parse(JSON.parse(rows.at(-1)!.slice(rows.at(-1)!.indexOf(',') + 1))), { steps: 5000, latest: trajectory.points.at(-1)![1 as never] });
  assert.ok(byName['trajectory.csv'].size_bytes < 1_000_000, `the trajectory's samples are linear in the steps: ${byName['trajectory.csv'].size_bytes} bytes`);
  const state = (await download(run.id, byName['state.csv'].artifact_id)).toString().trimEnd().split('\n');
  assert.deepEqual(JSON.parse(JSON.parse(state.at(-1)!.slice(state.at(-1)!.indexOf(',') + 1))), direct.state, 'a small record, nested lists and all, is kept whole each step');
  assert.ok(await largestHistoryEvent(run.id) < 256 * 1024, 'no Temporal payload over 256 KiB');
});

test('a 50,000-point, 10 MB trajectory completes: CSV and SVG artifacts that re-hash to their sha256, a bounded results body, no large Temporal payload', async () => {
  const { run, results } = await runFixture('long-trajectory');
  assert.ok(results.text.length < 64 * 1024, `results body is ${results.text.length} bytes`);
  const phases = results.body.outputs.phases;
  assert.equal(phases.length, 14, 'the final value, inline: fourteen phases');
  const byName = Object.fromEntries(results.body.artifacts.map((a: any) => [a.file_name, a]));
  assert.equal(byName['phases.svg'], undefined, 'a series of vectors has a CSV, not a line plot');
  for (const f of ['phases.csv', 'order.csv', 'order.svg', 'outputs.json']) assert.ok(byName[f], `${f} stored`);
  const csv = await download(run.id, byName['phases.csv'].artifact_id);
  assert.ok(csv.length > 10_000_000, `trajectory CSV is ${csv.length} bytes`);
  assert.equal(createHash('sha256').update(csv).digest('hex'), byName['phases.csv'].sha256);
  assert.equal(csv.length, byName['phases.csv'].size_bytes);
  const lines = csv.toString().trimEnd().split('\n');
  assert.equal(lines.length, 50_001, 'a header and one row per communication step');
  assert.equal(lines[0], 't,phases');
  assert.deepEqual(JSON.parse(JSON.parse(lines.at(-1)!.slice(lines.at(-1)!.indexOf(',') + 1))), phases, 'the last row is the final value');
  const order = (await download(run.id, byName['order.csv'].artifact_id)).toString().trimEnd().split('\n');
  const r = order.slice(1).map((l) => Number(l.split(',')[1]));
  assert.ok(r.every((x) => x >= 0 && x <= 1 + 1e-9), 'the order parameter stays in [0, 1]');
  const svg = await download(run.id, byName['order.svg'].artifact_id);
  assert.match(svg.toString(), /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.length < 512 * 1024, 'the plot is thinned, not 50,000 points');
  assert.equal(createHash('sha256').update(svg).digest('hex'), byName['order.svg'].sha256);
  assert.ok(await largestHistoryEvent(run.id) < 256 * 1024, 'no Temporal payload over 256 KiB');
});

test('a lab with 200 outputs completes with every public one in outputs and a CSV each; the one it keeps private is in neither', async () => {
  const { run, results } = await runFixture('many-outputs');
  const outputs = results.body.outputs;
  assert.equal(Object.keys(outputs).length, 199);
  for (let i = 0; i < 199; i++) assert.equal(outputs[`o${String(i).padStart(3, '0')}`], i * 5, 'o<i> = i × the last step');
  assert.equal(outputs.o199, undefined, 'not public: not in results');
  const csvs = results.body.artifacts.filter((a: any) => a.format === 'csv');
  assert.equal(csvs.length, 199);
  assert.ok(!results.body.artifacts.some((a: any) => a.file_name.startsWith('o199') || a.file_name === 'private-outputs.json'));
  const all = await download(run.id, results.body.artifacts.find((a: any) => a.file_name === 'outputs.json').artifact_id);
  assert.ok(!('o199' in JSON.parse(all.toString())), 'nor in outputs.json');
  const kept = await testDb()('run_artifacts').where({ run_id: run.id, public: false }).pluck('file_name');
  assert.deepEqual(kept.sort(), ['o199.csv', 'o199.svg', 'private-outputs.json'], 'kept with the owner\'s evidence');
  const o7 = csvs.find((a: any) => a.file_name === 'o007.csv');
  const bytes = await download(run.id, o7.artifact_id);
  assert.equal(bytes.toString(), 't,o007\n1,7\n2,14\n3,21\n4,28\n5,35\n');
  assert.equal(createHash('sha256').update(bytes).digest('hex'), o7.sha256);
  assert.ok(await largestHistoryEvent(run.id) < 256 * 1024);
});

test('a final value too large to keep inline is an artifact, referenced from outputs by id and digest', async () => {
  const { run, results } = await runFixture('hostile-lab', { attack: 15, target: { ports: [], hosts: [], paths: [] } });
  const ref = results.body.outputs.report.artifact_ref;
  assert.ok(ref, `a reference, got ${JSON.stringify(results.body.outputs.report).slice(0, 200)}`);
  assert.ok(ref.size_bytes > 300_000);
  const bytes = await download(run.id, ref.artifact_id);
  assert.equal(createHash('sha256').update(bytes).digest('hex'), ref.sha256);
  assert.equal(JSON.parse(bytes.toString()).report.uid > 0, true);
  assert.ok(results.text.length < 64 * 1024);
});
