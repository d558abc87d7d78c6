import type { Deps } from '../tools/tool.ts';
import type { Finding } from '../../storage/db/plans.ts';
import type { Tree } from '../../storage/trees.ts';

const runtimeName = (deps: Deps) => `biosimulant ${deps.runtimeLock.packages.get('biosimulant')}`;
const hasLabYaml = (tree: Tree) => Boolean(tree['lab.yaml'] || tree['lab.yml']);

/**
 * What the lab runtime says of a tree's manifests (./runtimeJudge.ts), as findings in its own
 * words. A workspace is a draft, so a change plan hears them as warnings (a lab.yaml may come
 * before its models); what is run or published must be what the runtime accepts, so those
 * plans hear them as blocking.
 */
export async function runtimeFormatFindings(deps: Deps, tree: Tree, severity: 'warning' | 'blocking'): Promise<Finding[]> {
  if (!hasLabYaml(tree)) return [];
  return refusals(deps, (await deps.runtimeJudge.judgeTree(deps.objects, tree)).errors, severity);
}

function refusals(deps: Deps, errors: string[], severity: 'warning' | 'blocking'): Finding[] {
  const runtime = runtimeName(deps);
  return errors.map((message) => ({
    severity, code: 'runtime_refuses',
    message: `The lab runtime (${runtime}) refuses this lab${severity === 'warning' ? ' as it stands' : ''}: ${message}`,
    path: 'lab.yaml',
  }));
}

/**
 * What a change plan hears of the runtime on a draft: its refusals (warnings), each model
 * whose entrypoint names no file of the tree where the runtime looks for it (warnings:
 * the lab would fail when it loads, unless the lab's environment provides the module),
 * and, when there is neither, that the runtime accepts the manifests: an empty list would
 * not say whether anything was checked.
 */
export async function draftRuntimeFindings(deps: Deps, tree: Tree): Promise<Finding[]> {
  if (!hasLabYaml(tree)) return [];
  const { errors, entrypoints } = await deps.runtimeJudge.judgeTree(deps.objects, tree);
  const refused = refusals(deps, errors, 'warning');
  const unresolved: Finding[] = entrypoints.map((e) => (e.module === null
    ? {
      severity: 'warning', code: 'entrypoint_invalid', path: `${e.manifest}#/biosim/entrypoint`,
      message: `${e.manifest} names entrypoint ${JSON.stringify(e.entrypoint)}, which is not module:Class (src.growth:Growth is the class Growth of src/growth.py in the model's folder); the runtime refuses it when the lab loads.`,
    }
    : {
      severity: 'warning', code: 'entrypoint_missing', path: `${e.manifest}#/biosim/entrypoint`,
      message: `${e.module} is not in the tree: ${e.manifest} names entrypoint ${e.entrypoint}, and the runtime looks for its module at ${e.module} (or ${e.module.replace(/\.py$/, '/__init__.py')}) before importing it from the lab's environment, where a lab's own modules are not. Put the module's file, or correct biosim.entrypoint.`,
    }));
  if (refused.length || unresolved.length) return [...refused, ...unresolved];
  return [{
    severity: 'info', code: 'runtime_accepts', path: 'lab.yaml',
    message: `The lab runtime (${runtimeName(deps)}) accepts these manifests, and every model's entrypoint module is in the tree. The models' code is first loaded by a run (run_prepare checks the manifests again, run_create runs): what the code gets wrong is the run's error, in the runtime's words.`,
  }];
}
