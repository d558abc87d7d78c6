import { before, after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { ACCOUNT_KEY, CAPABILITY_REF_KEY, KIND_KEY } from '../../kernel/searchAttributes.ts';

/** The workflows every worker under test loads (the sources, bundled by the worker). */
export const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

/**
 * Workflow tests run against a local Temporal server started from the binary the stack
 * built (never skipped for lack of it), with activities stubbed or real as each test
 * says. Registers the file's before/after hooks; call the result for the environment.
 */
export function useWorkflowEnvironment(): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  before(async () => {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: process.env.SILICO_TEST_TEMPORAL_BIN! },
        // The workflows set our search attributes on the runs they start, as the stack registers them.
        searchAttributes: [ACCOUNT_KEY, KIND_KEY, CAPABILITY_REF_KEY],
        extraArgs: ['--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF'] },
    });
  });
  after(async () => {
    await env?.teardown();
  });
  return () => env!;
}
