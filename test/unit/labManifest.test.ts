import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { labManifestProblems } from '../../api/schemas/labManifest.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

test('every built-in lab.yaml passes the schema of Silico keys', () => {
  const root = path.join(REPO_ROOT, 'labs');
  const labs = readdirSync(root).filter((d) => existsSync(path.join(root, d, 'lab.yaml')));
  assert.ok(labs.length >= 1);
  for (const d of labs) assert.deepEqual(labManifestProblems(YAML.parse(readFileSync(path.join(root, d, 'lab.yaml'), 'utf8'))), [], d);
});

test('bad Silico keys are named by path', () => {
  const base = { schema_version: '2.0', title: 't', models: [{ alias: 'a', path: 'models/a' }] };
  assert.deepEqual(labManifestProblems(base), []);
  assert.match(labManifestProblems({ ...base, io: { inputs: [{ name: 'x', maps_to: 'a.p', value_type: 'float' }] } })[0]!, /^\/io\/inputs\/0\/value_type/);
  assert.match(labManifestProblems({ ...base, io: { outputs: [{ name: 'y', maps_to: 'nodot' }] } })[0]!, /^\/io\/outputs\/0\/maps_to/);
  assert.match(labManifestProblems({ ...base, package: 'Not A Package' })[0]!, /^\/package/);
  assert.match(labManifestProblems({ ...base, models: [{ alias: 'Bad-Alias', path: 'm' }] })[0]!, /^\/models\/0\/alias/);
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
