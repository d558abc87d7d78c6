import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FULL, SHORT, schedule } from '../soak/faults.ts';

test("the full soak's schedule: 10 worker and 5 api kills interleaved, one rollout, each dependency down 60 s and paused 30 s, spread over the soak in order", () => {
  const faults = schedule({ seconds: 600, quietSeconds: 20, ...FULL });
  const names = faults.map((f) => f.name);
  assert.equal(names.filter((n) => n.startsWith('kill -9 worker')).length, 10);
  assert.equal(names.filter((n) => n.startsWith('kill -9 api')).length, 5);
  // Interleaved: never more than two worker kills in a row before the api kills run out.
  const kinds = names.slice(0, 15).map((n) => (n.includes('api') ? 'a' : 'w')).join('');
  assert.ok(!/www/.test(kinds), kinds);
  assert.deepEqual(names.slice(15), [
    'rolling restart (apis, workers)',
    'postgres down 60 s', 'postgres paused 30 s', 'object_store down 60 s', 'object_store paused 30 s', 'temporal down 60 s', 'temporal paused 30 s',
  ]);
  const at = faults.map((f) => f.plannedAt);
  assert.equal(at[0], 20, 'the first after the quiet start');
  assert.ok(at.every((t, i) => i === 0 || t > at[i - 1]!), 'in order');
  assert.ok(at.at(-1)! < 600 - 20, 'the last before the quiet end');
});

test("the short soak's schedule: one fault of each kind, 10-second outages", () => {
  const names = schedule({ seconds: 100, quietSeconds: 8, ...SHORT }).map((f) => f.name);
  assert.deepEqual(names, [
    'kill -9 worker-1', 'kill -9 api-1', 'rolling restart (apis, workers)',
    'postgres down 10 s', 'postgres paused 10 s', 'object_store down 10 s', 'object_store paused 10 s', 'temporal down 10 s', 'temporal paused 10 s',
  ]);
});
