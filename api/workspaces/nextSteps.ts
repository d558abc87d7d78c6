import { choose, type NextStep } from '../tools/tool.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { contractOf } from '../../storage/labContract.ts';

/** The published skill that teaches the lab format, with a template lab among its files. */
export const AUTHORING_SKILL = 'authoring-labs';

export const readAuthoringSkill: NextStep = {
  tool: 'skill_get',
  description: 'Read how to write a lab: lab.yaml, a model.yaml and its BioModule, how inputs reach it; the template lab\'s files are this skill\'s files under template/ (skill_get with path).',
  arguments: { name: AUTHORING_SKILL },
};

/** A workspace whose tree has no lab.yaml yet: nothing there the runtime could judge or run. */
export const manifestAbsent: Finding = {
  severity: 'info', code: 'manifest_absent',
  message: `No lab.yaml yet: nothing in this tree is a lab the runtime can judge or run. The ${AUTHORING_SKILL} skill (GET /v1/skills/${AUTHORING_SKILL}) has a minimal lab to start from.`,
  path: 'lab.yaml',
};

/**
 * A change plan on `base`, its operations the caller's to write: the first files of a lab
 * when the tree has no lab.yaml yet, else any change of the lab.
 */
export function proposeChange(workspaceId: string, base: string, hasLab: boolean): NextStep {
  const content = hasLab
    ? choose('the new text of lab.yaml; or put, delete and move other files instead (file_put, file_delete, file_move)')
    : choose(`the text of lab.yaml (the ${AUTHORING_SKILL} skill's template/lab.yaml is a start); add a file_put for each other file: models/<dir>/model.yaml, models/<dir>/src/<module>.py`);
  return {
    tool: 'workspace_change_prepare',
    description: hasLab ? 'Propose a change of the lab\'s files as a change plan; nothing changes until it is applied.' : 'Propose the lab\'s files as one change plan; the runtime judges them before anything is applied.',
    arguments: { workspace_id: workspaceId, base_revision_id: base, operations: [{ kind: 'file_put', path: 'lab.yaml', content }] },
  };
}

/**
 * A run plan of one revision, with a placeholder for each input its lab.yaml requires
 * (an input it does not require may be left out: the model's own default applies).
 */
export function prepareRunOf(workspaceId: string, revisionId: string, manifest: unknown): NextStep {
  const required = contractOf((manifest ?? {}) as never).inputs.filter((i) => i.required);
  return {
    tool: 'run_prepare',
    description: 'Check a run of this revision: its inputs against the lab\'s contract, the runtime\'s verdict, and the price. Nothing runs.',
    arguments: {
      workspace_id: workspaceId, revision_id: revisionId,
      ...(required.length ? { inputs: Object.fromEntries(required.map((i) => [i.name, choose(`a ${i.value_type} for the required input ${i.name}`)])) } : {}),
    },
  };
}
