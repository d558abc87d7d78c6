import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, Runtime, DefaultLogger } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import * as workflows from '../../workflows/index.ts';

// Workflow code changes are checked against real histories: at least one per workflow
// type (`<Type>.json`, `<Type>.<ending>.json`), captured from the service running its
// integration tests (`SILICO_CAPTURE_HISTORIES=test/replay/histories npm test -- <files>`,
// which adds the endings not yet kept and never replaces one) and committed.
// A change that would make a running workflow take another path fails here.
const dir = fileURLToPath(new URL('./histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

test('every workflow type has a committed history, and every history replays against the current code', async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  const types = [...new Set(files.map((f) => f.split('.')[0]!))].sort();
  assert.deepEqual(types, Object.keys(workflows).sort(), 'histories of every exported workflow, and of no other');
  const histories = await Promise.all(files.map(async (f) => ({ workflowId: path.basename(f, '.json'), history: historyFromJSON(JSON.parse(await readFile(path.join(dir, f), 'utf8'))) })));
  const failures: string[] = [];
  for await (const r of Worker.runReplayHistories({ workflowsPath, replayName: 'committed-histories' }, histories)) {
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  assert.deepEqual(failures, []);
});
