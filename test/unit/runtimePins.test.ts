import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { parseRuntimeLock, readRuntimeLock, runtimePinFindings, type LabManifests } from '../../storage/runtimePins.ts';

const lock = parseRuntimeLock('# python 3.11\nbiosimulant==0.0.40\nnumpy==2.4.6\nPyYAML==6.0.3\ntyping_extensions==4.16.0\n');
const lab = (model: Record<string, unknown>, labYaml: Record<string, unknown> = {}): LabManifests => ({
  lab: { schema_version: '2.0', models: [{ alias: 'core', path: 'models/core' }], ...labYaml },
  models: [{ dir: 'models/core', manifest: { schema_version: '2.0', biosim: { entrypoint: 'src.m:M' }, ...model } }],
});
const codes = (f: ReturnType<typeof runtimePinFindings>) => f.map((x) => `${x.severity}:${x.code}:${x.path}`);

test('pins the runtime satisfies give no finding (exact, ranges, other spellings of a name, markers that do not apply)', () => {
  assert.deepEqual(runtimePinFindings(lock, lab({
    runtime: { python_version: '3.11', dependencies: { packages: ['numpy==2.4.6', 'pyyaml==6.0.3', 'typing-extensions==4.16.0', 'scipy==1.14.1; python_version < "3.9"'] } },
    requirements: ['biosimulant>=0.0.30', 'numpy>=2,<3', 'biosimulant~=0.0.35'],
  }, { runtime: { python_version: 3.11 } })), []);
});

test('a biosimulant exact pin the runtime replaces is a warning; a range it falls outside is blocking', () => {
  const f = runtimePinFindings(lock, lab({ runtime: { dependencies: { packages: ['biosimulant==0.0.38'] } }, requirements: ['biosimulant>=0.1'] }));
  assert.deepEqual(codes(f), [
    'warning:runtime_version_differs:models/core/model.yaml#/runtime/dependencies/packages/0',
    'blocking:runtime_unsatisfiable:models/core/model.yaml#/requirements/0',
  ]);
  assert.match(f[0]!.message, /biosimulant==0\.0\.38.*biosimulant 0\.0\.40/);
  assert.match(f[1]!.message, /biosimulant>=0\.1 is required; the lab runtime has biosimulant 0\.0\.40/);
});

test('what the runtime cannot satisfy is blocking and names the pin: another version, a missing package, another Python', () => {
  const f = runtimePinFindings(lock, lab(
    { runtime: { python_version: '3.12', dependencies: { packages: ['numpy==1.26.4', 'tellurium==2.2.11.2'] } } },
    { runtime: { python_version: '3.10' } },
  ));
  assert.deepEqual(codes(f), [
    'blocking:runtime_unsatisfiable:lab.yaml#/runtime/python_version',
    'blocking:runtime_unsatisfiable:models/core/model.yaml#/runtime/python_version',
    'blocking:runtime_unsatisfiable:models/core/model.yaml#/runtime/dependencies/packages/0',
    'blocking:runtime_unsatisfiable:models/core/model.yaml#/runtime/dependencies/packages/1',
  ]);
  assert.match(f[0]!.message, /"3\.10".*Python 3\.11/);
  assert.match(f[2]!.message, /numpy==1\.26\.4 is required; the lab runtime has numpy 2\.4\.6/);
  assert.match(f[3]!.message, /tellurium==2\.2\.11\.2 is not installed/);
});

test('packages the runtime would refuse are blocking: ranges where it takes exact pins, non-requirements, a URL, a non-list', () => {
  assert.deepEqual(codes(runtimePinFindings(lock, lab({ runtime: { dependencies: { packages: ['numpy>=2', 42, 'foo @ https://example.org/foo.whl'] } }, requirements: 'numpy' }))), [
    'blocking:dependency_pin_invalid:models/core/model.yaml#/runtime/dependencies/packages/0',
    'blocking:dependency_invalid:models/core/model.yaml#/runtime/dependencies/packages/1',
    'blocking:runtime_unsatisfiable:models/core/model.yaml#/runtime/dependencies/packages/2',
    'blocking:dependency_invalid:models/core/model.yaml#/requirements',
  ]);
});

test('malformed manifests give findings, never an exception', () => {
  assert.deepEqual(runtimePinFindings(lock, { lab: 'not a mapping', models: [{ dir: 'm', manifest: undefined }, { dir: 'n', manifest: { runtime: 'x' } }] }), []);
});

test('the committed lock parses, is the runtime this machine built (pip freeze), and holds the direct pins', () => {
  const committed = readRuntimeLock();
  assert.equal(committed.packages.get('biosimulant'), '0.0.40');
  assert.equal(committed.packages.get('numpy'), '2.4.6');
  const python = process.env.SILICO_PYTHON;
  if (!python) return;
  const frozen = execFileSync(python, ['-m', 'pip', 'freeze', '--disable-pip-version-check'], { encoding: 'utf8' });
  assert.deepEqual(parseRuntimeLock(`# python ${committed.python}\n${frozen}`).packages, committed.packages);
  assert.equal(execFileSync(python, ['-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'], { encoding: 'utf8' }).trim(), committed.python);
});
