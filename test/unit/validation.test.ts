import { test } from 'node:test';
import assert from 'node:assert/strict';
import { check, compileInput } from '../../api/validation.ts';
import { ApiError } from '../../api/errors.ts';
import { decodeCursor, encodeCursor } from '../../api/pagination.ts';
import { TOOLS } from '../../api/tools/index.ts';

function errorFor(tool: string, part: 'body' | 'query' | 'path', data: unknown): ApiError {
  const compiled = compileInput(TOOLS.get(tool)!);
  try {
    check(compiled[part], data);
  } catch (err) {
    return err as ApiError;
  }
  assert.fail('expected a validation error');
}

test('nested body errors name the field as a path', () => {
  const e = errorFor('dataset_register', 'body', {
    name: 'd', source: 's', license: 'l', attribution: 'a', annotation_version: '1',
    members: [{ file_id: '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d', sha256: 'A'.repeat(64), size_bytes: 1, sample_id: 's', group_id: 'g', role: 'image', split: 'train' }],
  });
  assert.equal(e.status, 422);
  assert.equal(e.code, 'parameter_invalid_format');
  assert.equal(e.param, 'members[0].sha256');
  assert.equal(errorFor('experiment_prepare', 'body', { name: 'x', arms: [{ label: 'a' }] }).param, 'arms[0].workspace_id');
  assert.equal(errorFor('experiment_prepare', 'body', { name: 'x', arms: [], extra: 1 }).code, 'parameter_unknown');
  assert.equal(errorFor('run_create', 'body', { inputs: {} }).code, 'parameter_invalid_combination');
});

test('query values are coerced to their declared types; bad ones are refused', () => {
  const compiled = compileInput(TOOLS.get('capability_list')!);
  const q: Record<string, unknown> = { limit: '25' };
  check(compiled.query, q);
  assert.equal(q.limit, 25);
  assert.equal(errorFor('capability_list', 'query', { limit: '0' }).code, 'parameter_out_of_range');
  assert.equal(errorFor('hosted_release_get', 'query', {}).param, 'sha256');
});

test('cursors round-trip; anything else, or a value its sort column cannot take, is a 422 on cursor', () => {
  const id = '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d';
  assert.deepEqual(decodeCursor(encodeCursor(['2026-11-22T06:02:00.000000', id]), ['text', 'uuid']), ['2026-11-22T06:02:00.000000', id]);
  assert.deepEqual(decodeCursor(encodeCursor([40]), ['offset']), [40]);
  assert.equal(decodeCursor(null, ['text', 'uuid']), null);
  const forged = [
    'x', encodeCursor(['a']), Buffer.from('{"a":1}').toString('base64url'), Buffer.from('[{}, 1]').toString('base64url'),
    encodeCursor(['x', 'y']), encodeCursor([1, 2]), encodeCursor(['a\u0000', id]), encodeCursor(['x'.repeat(513), id]),
    Buffer.from([0x5b, 0x22, 0xff, 0xfe, 0x22, 0x2c, 0x22, 0x61, 0x22, 0x5d]).toString('base64url'),
  ];
  for (const bad of forged) {
    assert.throws(() => decodeCursor(bad, ['text', 'uuid']), (e: ApiError) => e.status === 422 && e.code === 'invalid_cursor' && e.param === 'cursor', bad);
  }
  for (const bad of [encodeCursor([2 ** 63]), encodeCursor([-1]), encodeCursor([1.5]), encodeCursor(['1'])]) {
    assert.throws(() => decodeCursor(bad, ['offset']), (e: ApiError) => e.code === 'invalid_cursor', bad);
  }
});

test('a one-of error names its alternatives, whichever way it is missed', () => {
  const neither = errorFor('run_prepare', 'body', { inputs: {} });
  assert.equal(neither.code, 'parameter_invalid_combination');
  assert.equal(neither.message, 'The body must contain exactly one of: {capability_ref} or {workspace_id, revision_id}.');
  assert.deepEqual(neither.details.accepted, [['capability_ref'], ['workspace_id', 'revision_id']]);
  const both = errorFor('run_create', 'body', { plan_id: '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d', plan_sha256: 'a'.repeat(64), ref: 'platform/x' });
  assert.match(both.message, /exactly one of: \{plan_id, plan_sha256\} or \{ref\}/);
});
