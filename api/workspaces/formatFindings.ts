import type { Deps } from '../tools/tool.ts';
import type { Finding } from '../../storage/db/plans.ts';
import type { Tree } from '../../storage/trees.ts';

/**
 * What the lab runtime says of a tree's manifests (./runtimeJudge.ts), as findings in its own
 * words. A workspace is a draft, so a change plan hears them as warnings (a lab.yaml may come
 * before its models); what is run or published must be what the runtime accepts, so those
 * plans hear them as blocking.
 */
export async function runtimeFormatFindings(deps: Deps, tree: Tree, severity: 'warning' | 'blocking'): Promise<Finding[]> {
  if (!tree['lab.yaml'] && !tree['lab.yml']) return [];
  const { errors } = await deps.runtimeJudge.judgeTree(deps.objects, tree);
  const runtime = `biosimulant ${deps.runtimeLock.packages.get('biosimulant')}`;
  return errors.map((message) => ({
    severity, code: 'runtime_refuses',
    message: `The lab runtime (${runtime}) refuses this lab${severity === 'warning' ? ' as it stands' : ''}: ${message}`,
    path: 'lab.yaml',
  }));
}
