import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, Runtime, DefaultLogger } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import * as workflows from '../../workflows/index.ts';

// Workflow code changes are checked against real histories: one per workflow type,
// captured from the service running its integration tests
// (`SILICO_CAPTURE_HISTORIES=test/replay/histories npm test -- <files>`) and committed.
// A change that would make a running workflow take another path fails here.
const dir = fileURLToPath(new URL('./histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

test('every workflow type has a committed history, and every history replays against the current code', async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  const types = files.map((f) => path.basename(f, '.json'));
  assert.deepEqual(types, Object.keys(workflows).sort(), 'one history per exported workflow');
  const histories = await Promise.all(files.map(async (f) => ({ workflowId: path.basename(f, '.json'), history: historyFromJSON(JSON.parse(await readFile(path.join(dir, f), 'utf8'))) })));
  const failures: string[] = [];
  for await (const r of Worker.runReplayHistories({ workflowsPath, replayName: 'committed-histories' }, histories)) {
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  assert.deepEqual(failures, []);
});
