import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Bundles the workflow code once, before the worker starts (Temporal's production
 * pattern): the worker then loads the file instead of running webpack on start.
 */
export async function buildWorkflowBundle(outPath: string): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never });
  await writeFile(outPath, code);
  return outPath;
}
