import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { RuntimeJudge } from '../../api/workspaces/runtimeJudge.ts';
import { testObjects } from '../helpers.ts';
import type { Tree } from '../../storage/trees.ts';

// The api's judge of lab manifests: the default runtime's validate_lab_source, in a process
// of its own, over the real object store.

const judge = new RuntimeJudge(process.env.SILICO_PYTHON!);
after(() => judge.close());

async function treeOf(files: Record<string, string>): Promise<Tree> {
  const tree: Tree = {};
  for (const [p, text] of Object.entries(files)) {
    const bytes = Buffer.from(text);
    tree[p] = { sha256: await testObjects().putBlob(bytes), size: bytes.length };
  }
  return tree;
}

const model = 'biosim: { entrypoint: "src.m:M" }\n';

test('the runtime accepts what it accepts and refuses in its own words, naming files inside the lab only', async () => {
  const long = 'pharmacology_sbml_silico2026_one_compartment_oral_pharmacokinetics_silico000000043_model';
  const ok = await judge.judgeTree(testObjects(), await treeOf({
    'lab.yaml': `models:\n  - { alias: ${long}, path: models/a }\n  - { alias: Plot-1.x, path: models/b }\nwiring:\n  - { from: ${long}.state, to: [Plot-1.x.state] }\nruntime: { communication_step: 0.25 }\n`,
    'models/a/model.yaml': model, 'models/b/model.yaml': model, 'models/a/src/m.py': 'this is not even Python', 'models/a/data/x.xml': '<sbml/>',
  }));
  // models/b's module is not in the lab: the runtime accepts the manifests, and says where it would not find it.
  assert.deepEqual(ok, { errors: [], entrypoints: [{ manifest: 'models/b/model.yaml', entrypoint: 'src.m:M', module: 'models/b/src/m.py' }] });
  const refused = await judge.judgeTree(testObjects(), await treeOf({ 'lab.yaml': 'models:\n  - { alias: a, path: models/a }\nwiring: []\nruntime: { communication_step: 1 }\n', 'models/a/model.yaml': 'biosim: {}\n' }));
  assert.equal(refused.errors.length, 1);
  assert.match(refused.errors[0]!, /^Invalid embedded model manifest at models\/a\/model\.yaml: Model manifest must contain biosim\.entrypoint$/);
  assert.doesNotMatch(refused.errors[0]!, /silico-judge-/, 'no scratch path');
});

test('a YAML bomb is refused within the judge\'s bounds, and the judge answers the next lab', async () => {
  // Nine levels of nine aliases each: 387 million strings once expanded.
  const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 9; i++) {
    const prev = String.fromCharCode(96 + i);
    const name = String.fromCharCode(97 + i);
    levels.push(`${name}: &${name} [*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev}]`);
  }
  const started = Date.now();
  const bomb = await judge.judgeTree(testObjects(), await treeOf({ 'lab.yaml': `${levels.join('\n')}\nmodels: *i\n` }));
  assert.equal(bomb.errors.length, 1);
  assert.ok(Date.now() - started < 15_000, 'within its time bound');
  const next = await judge.judgeTree(testObjects(), await treeOf({ 'lab.yaml': 'models: []\n' }));
  assert.deepEqual(next, { errors: ['Lab manifest must contain a non-empty models list or children list'], entrypoints: [] });
});
