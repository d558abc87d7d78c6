import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createPetabActivities, type PetabInspection } from '../../activities/petab/activities.ts';
import { createWarmParents } from '../../activities/execution/warmParents.ts';
import { loadConfig } from '../../kernel/config.ts';
import type { Tree } from '../../storage/trees.ts';
import { testObjects, testSandbox } from '../helpers.ts';
import { petabSkip, problemOf } from '../petabProblems.ts';

// An import's inspection (activities/petab/activities.ts) as a compute worker runs it, on
// Boehm_JProteomeRes2014 (test/fixtures/petab/SOURCES.md) stored in the stack's object store.
test('an account\'s inspections fork from a warm instance of the engine of its own and answer as a cold one does; another account\'s start their own; one without an account runs cold', { skip: petabSkip }, async () => {
  const objects = testObjects();
  const files = await problemOf('Boehm_JProteomeRes2014');
  const tree: Tree = {};
  for (const f of files) tree[f.path] = { sha256: await objects.putBlob(f.bytes), size: f.bytes.length };
  const yaml = files.find((f) => f.path.endsWith('.yaml'))!.path;
  const environments = loadConfig().environments;
  const parents = createWarmParents({ max: 4, perKey: 1, idleSeconds: 60, coldSeconds: 60 });
  try {
    const warm = createPetabActivities({ objects, sandbox: testSandbox(), environments, warm: parents });
    const cold = createPetabActivities({ objects, sandbox: testSandbox(), environments });
    const env = new MockActivityEnvironment();
    const inspect = (acts: typeof warm, account?: string): Promise<PetabInspection> => env.run(acts.inspectPetabProblem, { tree, yaml, ...(account ? { account } : {}) });

    const reference = await inspect(cold, 'acct_inspect_a');
    assert.equal(reference.error, null, JSON.stringify(reference.error));
    assert.ok(reference.nominal && reference.nominal.nll !== null, 'Boehm has a value at nominal');
    const a = [await inspect(warm, 'acct_inspect_a'), await inspect(warm, 'acct_inspect_a')];
    assert.deepEqual(parents.stats(), { parents: 1, busy: 0, keys: 1 }, 'one instance served both of the account\'s');
    const b = await inspect(warm, 'acct_inspect_b');
    assert.deepEqual(parents.stats(), { parents: 2, busy: 0, keys: 2 }, 'another account\'s is its own');
    const anonymous = await inspect(warm);
    assert.equal(parents.stats().parents, 2, 'without an account: cold');
    for (const r of [...a, b, anonymous]) assert.deepEqual(r, reference);
  } finally {
    await parents.close();
  }
});
