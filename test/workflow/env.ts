import { before, after } from 'node:test';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime, DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';
import { ACCOUNT_KEY, CAPABILITY_REF_KEY, KIND_KEY } from '../../kernel/searchAttributes.ts';
import { captureHistories } from '../replayCapture.ts';

/** The workflows every worker under test loads (the sources, bundled by the worker). */
export const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

let bundle: Promise<{ code: string }> | undefined;
/** The workflows bundled once, for a file that starts many workers (`workflowBundle: await bundledWorkflows()`). */
export function bundledWorkflows(): Promise<{ code: string }> {
  return (bundle ??= bundleWorkflowCode({ workflowsPath, logger: Runtime.instance().logger }).then(({ code }) => ({ code })));
}

export interface WorkflowEnvironmentOptions {
  /**
   * Dynamic configuration of the test server (`--dynamic-config-value KEY=VALUE`), e.g.
   * `limit.historyCount.suggestContinueAsNew` low, for a long-lived workflow to be told
   * to continue as new after a few changes rather than thousands.
   */
  dynamicConfig?: Record<string, string | number | boolean>;
  /**
   * When SILICO_CAPTURE_HISTORIES names the folder of the committed replay histories, the
   * histories of this file's closed workflows are saved there before the server stops
   * (test/replayCapture.ts: the endings not yet kept, never replacing one). For files
   * whose workflows close the way the running service's seldom do (failed, cancelled,
   * continued as new): the workflow code is the real one, whatever the activities answer.
   */
  captureHistories?: boolean;
}

/**
 * Workflow tests run against a local Temporal server started from the binary the stack
 * built (never skipped for lack of it), with activities stubbed or real as each test
 * says. Registers the file's before/after hooks; call the result for the environment.
 */
export function useWorkflowEnvironment(opts: WorkflowEnvironmentOptions = {}): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  before(async () => {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: process.env.SILICO_TEST_TEMPORAL_BIN! },
        // The workflows set our search attributes on the runs they start, as the stack registers them.
        searchAttributes: [ACCOUNT_KEY, KIND_KEY, CAPABILITY_REF_KEY],
        extraArgs: [
          '--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF',
          ...Object.entries(opts.dynamicConfig ?? {}).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
        ] },
    });
  });
  after(async () => {
    try {
      const dir = process.env.SILICO_CAPTURE_HISTORIES;
      if (env && opts.captureHistories && dir) {
        await closedVisible(env);
        const saved = await captureHistories(env.address, process.env.SILICO_TEST_TEMPORAL_BIN!, path.resolve(fileURLToPath(new URL('../../', import.meta.url)), dir), { maintenance: false });
        process.stdout.write(`[replay] histories captured from ${path.basename(process.argv[1] ?? 'a workflow test')}: ${saved.join(', ') || 'none new'}\n`);
      }
    } finally {
      await env?.teardown();
    }
  });
  return () => env!;
}

/** Waits (a while, at most) until the server's listing shows no workflow running: every close the tests awaited is listed. */
async function closedVisible(env: TestWorkflowEnvironment): Promise<void> {
  for (let waited = 0; waited < 10_000; waited += 200) {
    const running = env.client.workflow.list({ query: 'ExecutionStatus = "Running"' })[Symbol.asyncIterator]();
    if ((await running.next()).done) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}
