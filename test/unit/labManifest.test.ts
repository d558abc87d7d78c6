import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { LAB_BOUNDS, labManifestProblems } from '../../api/schemas/labManifest.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

test('every built-in lab.yaml passes the schema of Silico keys', () => {
  const root = path.join(REPO_ROOT, 'labs');
  const labs = readdirSync(root).filter((d) => existsSync(path.join(root, d, 'lab.yaml')));
  assert.ok(labs.length >= 1);
  for (const d of labs) assert.deepEqual(labManifestProblems(YAML.parse(readFileSync(path.join(root, d, 'lab.yaml'), 'utf8'))), [], d);
});

test('Silico\'s own bounds and keys are named by path', () => {
  const base = { schema_version: '2.0', title: 't', models: [{ alias: 'a', path: 'models/a' }] };
  assert.deepEqual(labManifestProblems(base), []);
  assert.match(labManifestProblems({ ...base, models: [{ alias: 'a'.repeat(LAB_BOUNDS.nameChars + 1), path: 'm' }] })[0]!, /^\/models\/0\/alias: must NOT have more than 200 characters/);
  assert.match(labManifestProblems({ ...base, io: { outputs: [{ name: 'y'.repeat(201), maps_to: 'a.y' }] } })[0]!, /^\/io\/outputs\/0\/name/);
  assert.match(labManifestProblems({ ...base, wiring: [{ from: 'a.x', to: [`a.${'p'.repeat(LAB_BOUNDS.referenceChars)}`] }] })[0]!, /^\/wiring\/0\/to\/0/);
  assert.match(labManifestProblems({ ...base, compute_class: 'tpu' })[0]!, /^\/compute_class/);
  assert.match(labManifestProblems({ ...base, smoke: { inputs: {}, extra: 1 } })[0]!, /^\/smoke/);
  assert.match(labManifestProblems({ ...base, io: { inputs: [{ name: 'x', maps_to: 'a.x', schema: 'number' }] } })[0]!, /^\/io\/inputs\/0\/schema/);
});

test('what the runtime decides is never refused by a pattern, enum, type or required key of ours', () => {
  // An alias as the ecosystem generates it (88 characters), and others the runtime takes.
  const long = 'pharmacology_sbml_silico2026_one_compartment_oral_pharmacokinetics_silico000000043_model';
  assert.equal(long.length, 88);
  for (const alias of [long, 'Predator-1', 'a.b', 'with space', 'é', '_', '1st']) {
    assert.deepEqual(labManifestProblems({ models: [{ alias, path: 'models/a' }], wiring: [{ from: `${alias}.out`, to: [`${alias}.in-put`] }], io: { outputs: [{ name: 'Final value (mM)', maps_to: `${alias}.out` }] } }), [], alias);
  }
  // No schema_version, title or package pattern of ours; lists the runtime would refuse are its to refuse.
  assert.deepEqual(labManifestProblems({ package: ' Acme/SIR ', version: 1.0, models: 'abc', children: [{ alias: 'c', path: 'c' }], wiring: 5, io: { inputs: 5 } }), []);
  assert.deepEqual(labManifestProblems({ title: 7, io: { inputs: [{ name: 3, maps_to: null, value_type: 'float' }] } }), []);
});

test('descriptive and unknown keys are never refused, whatever their shape', () => {
  const base = { schema_version: '2.0', title: 't', models: [{ alias: 'a', path: 'models/a' }] };
  assert.deepEqual(labManifestProblems({
    ...base, intended_use: 'Teaching SIR dynamics to undergraduates', tags: ['x'.repeat(300), ...Array(40).fill('t')], licenses: [{ spdx: 'MIT' }, 'CC-BY'],
    authors: 'Ada', description: 'd'.repeat(20000), ui: { layout: [{ panel: 'chart' }] }, anything_else: { nested: [1, 'two'] },
    package: 'acme/sir-teaching', version: '1.2.0',
    io: { inputs: [{ name: 'x', maps_to: 'a.x', label: 'X', description: 'y'.repeat(5000) }] },
  }), []);
});
