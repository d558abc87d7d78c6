import { test } from 'node:test';
import assert from 'node:assert/strict';
import { responseProblem } from '../responseSchemas.ts';

// The suite holds every answer to its route's schema (test/helpers.ts call()): this is the
// check itself, on a run record as the api gives it and as it might drift.
const run = {
  id: '7b7f4f7c-3d1a-4f55-9a43-2f0f7b1d6a10', run_id: '7b7f4f7c-3d1a-4f55-9a43-2f0f7b1d6a10', object: 'run', kind: 'hub', status: 'completed',
  ref: 'platform/sir-epidemic', resolved_ref: 'platform/sir-epidemic@1.0.0', package_sha256: `sha256:${'a'.repeat(64)}`, inputs: {}, metadata: {},
  compute_profile: 'cpu-small', max_runtime_seconds: 60, credits_reserved: 0.0006, credits_settled: 0.00001,
  created_at: '2026-11-26T10:00:00.000Z', started_at: '2026-11-26T10:00:01.000Z', finished_at: '2026-11-26T10:00:02.000Z',
  error: null, progress: 1, artifact_count: 3, experiment_id: null, plan_id: null,
};
const envelope = { schema_version: '2026-11-01', request_id: 'c0a8012e-0000-4000-8000-000000000001', warnings: [], next_actions: [], links: {} };
const url = `http://127.0.0.1:8080/v1/runs/${run.id}`;

test('an answer as its operation declares it passes; a drifted one names the route and what drifted', () => {
  assert.equal(responseProblem('GET', url, 200, { ...run, ...envelope }), null);
  assert.match(responseProblem('GET', url, 200, { ...run, ...envelope, surprise: 1 })!, /run_get.*must NOT have additional properties/);
  const missing: Record<string, unknown> = { ...run, ...envelope };
  delete missing.artifact_count;
  assert.match(responseProblem('GET', url, 200, missing)!, /must have required property 'artifact_count'/);
  assert.match(responseProblem('GET', url, 200, { ...run, ...envelope, status: 'lost' })!, /status/);
});

test('failures, unknown paths and literal routes beside parameters are matched as the router does', () => {
  assert.equal(responseProblem('GET', url, 404, { error: {} }), null, 'errors have their own envelope');
  assert.equal(responseProblem('GET', 'http://127.0.0.1:8080/v1/nowhere', 200, {}), null);
  // /runs/{run_id}/events is not /runs/{run_id}: its own schema applies.
  assert.match(responseProblem('GET', `${url}/events`, 200, { ...envelope, items: [{ seq: 0, at: 'x', type: 'log', message: '', data: {} }], has_more: false, next_after: 0 })!, /run_events/);
});

/** Where `schema` has an object that names fields without saying whether others may appear, or which are required. */
function looseObjects(schema: unknown, at: string, out: string[]): string[] {
  if (!schema || typeof schema !== 'object') return out;
  const s = schema as Record<string, unknown>;
  if (s.properties) {
    const names = Object.keys(s.properties as object);
    // A closed object names its fields; one left open on purpose (a record whose kinds add
    // fields of their own) says so with `additionalProperties: true`.
    if (s.additionalProperties === undefined) out.push(`${at}: neither closed nor declared open`);
    if (!Array.isArray(s.required)) out.push(`${at}: no required list`);
    for (const n of names) looseObjects((s.properties as Record<string, unknown>)[n], `${at}.${n}`, out);
  }
  for (const k of ['items', 'additionalProperties']) if (typeof s[k] === 'object') looseObjects(s[k], `${at}[${k}]`, out);
  for (const k of ['oneOf', 'anyOf', 'allOf']) if (Array.isArray(s[k])) (s[k] as unknown[]).forEach((x, i) => looseObjects(x, `${at}.${k}[${i}]`, out));
  return out;
}

test('every operation declares what it answers: bytes, or a closed object whose every level lists its fields and which are required', async () => {
  const { TOOLS } = await import('../../api/tools/index.ts');
  const undeclared = [...TOOLS.values()].filter((t) => !t.output).map((t) => t.name);
  assert.deepEqual(undeclared, []);
  const loose = [...TOOLS.values()].flatMap((t) => (t.output === 'bytes' ? [] : looseObjects(t.output, t.name, [])));
  assert.deepEqual(loose, []);
});
