/**
 * `study.yaml`, the file `silico experiment run` reads: a name, an optional goal, arm
 * defaults at the top level, and either `arms:` (as in the API) or a `sweep:` block of
 * input name → list of values, expanded here into one arm per combination (the grid, in
 * the order written; the last name varies fastest), labelled `name=value,name=value`.
 *
 *   name: Rate sweep
 *   workspace_id: ...
 *   revision_id: ...
 *   replicates: 3
 *   inputs: {noise: 0.05}        # every arm's inputs start from these
 *   sweep:
 *     growth_rate: [0.05, 0.1]
 *     noise: [0.01, 0.1]         # 4 arms; swept values win over shared inputs
 *
 * Or, for one lab (the top-level workspace_id, revision_id, compute_profile_id,
 * max_runtime_seconds, seed and inputs), a question: a `sensitivity:` block (parameters
 * with ranges, outputs, method, base_sample) or a `calibration:` block (parameters with
 * bounds, dataset_id, observations, loss, optimizer, budget, batch_size), as in the API.
 * Or a `petab_calibration:` block alone (import_id, starts, seed, profile, ...): its lab
 * is the import's, so no lab key stands beside it.
 */
import { parse } from 'yaml';
import type { ExperimentArmParams, ExperimentPlanParams } from '../models.ts';
import { UsageError } from './output.ts';

/** Top-level keys that are defaults for every arm. */
const ARM_DEFAULTS = ['workspace_id', 'revision_id', 'compute_profile_id', 'max_runtime_seconds', 'replicates', 'seed', 'fixed_seed', 'inputs'] as const;
const QUESTIONS = ['sensitivity', 'calibration'] as const;
const TOP_LEVEL = new Set<string>(['name', 'goal', 'arms', 'sweep', 'petab_calibration', ...QUESTIONS, ...ARM_DEFAULTS]);
/** The top-level keys that describe the lab of a sensitivity or calibration study. */
const LAB_KEYS = ['workspace_id', 'revision_id', 'compute_profile_id', 'max_runtime_seconds', 'seed', 'inputs'] as const;

type Doc = Record<string, unknown>;

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A swept value as it reads in a label: strings as they are, anything else as JSON. */
function labelValue(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Every combination of the sweep's values, as input objects in grid order. */
function grid(sweep: Doc): Array<Array<[string, unknown]>> {
  let combos: Array<Array<[string, unknown]>> = [[]];
  for (const [name, values] of Object.entries(sweep)) {
    if (!Array.isArray(values) || values.length === 0) throw new UsageError(`sweep.${name} must be a non-empty list of values`);
    combos = combos.flatMap((c) => values.map((v): Array<[string, unknown]> => [...c, [name, v]]));
  }
  return combos;
}

/** An arm with the file's defaults under it: the arm's own fields win, inputs are merged. */
function withDefaults(defaults: Doc, arm: Doc): ExperimentArmParams {
  const shared = isObject(defaults.inputs) ? defaults.inputs : {};
  const own = isObject(arm.inputs) ? arm.inputs : {};
  const merged: Doc = { ...defaults, ...arm };
  if (Object.keys(shared).length || Object.keys(own).length || 'inputs' in arm) merged.inputs = { ...shared, ...own };
  return merged as unknown as ExperimentArmParams;
}

/**
 * The plan request a study file describes. Throws UsageError for a file that is not
 * one (not YAML, no name, both or neither of `arms` and `sweep`, an unknown top-level
 * key); the arms' own fields are checked by the service when the plan is prepared.
 */
export function studyFromYaml(text: string, file = 'study file'): ExperimentPlanParams {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new UsageError(`${file} is not valid YAML: ${(err as Error).message}`);
  }
  if (!isObject(doc)) throw new UsageError(`${file} must be a YAML mapping with name and arms or sweep`);
  const unknown = Object.keys(doc).filter((k) => !TOP_LEVEL.has(k));
  if (unknown.length) throw new UsageError(`${file}: unknown key(s) ${unknown.join(', ')}; expected ${[...TOP_LEVEL].join(', ')}`);
  if (typeof doc.name !== 'string' || !doc.name.trim()) throw new UsageError(`${file} needs a name`);
  if (doc.goal !== undefined && typeof doc.goal !== 'string') throw new UsageError(`${file}: goal must be text`);
  if (doc.inputs !== undefined && !isObject(doc.inputs)) throw new UsageError(`${file}: inputs must be a mapping of input name to value`);
  const kinds = (['arms', 'sweep', 'petab_calibration', ...QUESTIONS] as const).filter((k) => doc[k] !== undefined);
  if (kinds.length !== 1) throw new UsageError(`${file} needs exactly one of arms (a list), sweep (input name → values), sensitivity, calibration or petab_calibration`);
  if (kinds[0] === 'petab_calibration') {
    if (!isObject(doc.petab_calibration)) throw new UsageError(`${file}: petab_calibration must be a mapping`);
    const beside = ARM_DEFAULTS.filter((k) => doc[k] !== undefined);
    if (beside.length) throw new UsageError(`${file}: ${beside.join(', ')} cannot stand beside petab_calibration: it runs its import's lab (compute_profile_id and max_runtime_seconds go inside the block)`);
    return { name: doc.name, ...(doc.goal !== undefined ? { goal: doc.goal } : {}), petab_calibration: doc.petab_calibration } as unknown as ExperimentPlanParams;
  }
  const question = QUESTIONS.find((q) => q === kinds[0]);
  if (question) {
    if (!isObject(doc[question])) throw new UsageError(`${file}: ${question} must be a mapping`);
    const armOnly = ARM_DEFAULTS.filter((k) => doc[k] !== undefined && !(LAB_KEYS as readonly string[]).includes(k));
    if (armOnly.length) throw new UsageError(`${file}: ${armOnly.join(', ')} belong to arms; a ${question} study runs each parameter set once`);
    const lab = Object.fromEntries(LAB_KEYS.filter((k) => doc[k] !== undefined).map((k) => [k, doc[k]]));
    return { name: doc.name, ...(doc.goal !== undefined ? { goal: doc.goal } : {}), lab, [question]: doc[question] } as unknown as ExperimentPlanParams;
  }

  const defaults: Doc = {};
  for (const k of ARM_DEFAULTS) if (doc[k] !== undefined) defaults[k] = doc[k];
  let arms: ExperimentArmParams[];
  if (doc.arms !== undefined) {
    if (!Array.isArray(doc.arms) || doc.arms.length === 0) throw new UsageError(`${file}: arms must be a non-empty list`);
    arms = doc.arms.map((a, i) => {
      if (!isObject(a)) throw new UsageError(`${file}: arms[${i}] must be a mapping`);
      if (a.inputs !== undefined && !isObject(a.inputs)) throw new UsageError(`${file}: arms[${i}].inputs must be a mapping`);
      return withDefaults(defaults, a);
    });
  } else {
    if (!isObject(doc.sweep) || Object.keys(doc.sweep).length === 0) throw new UsageError(`${file}: sweep must map input names to lists of values`);
    arms = grid(doc.sweep).map((combo) => withDefaults(defaults, {
      label: combo.map(([k, v]) => `${k}=${labelValue(v)}`).join(','),
      inputs: Object.fromEntries(combo),
    }));
  }
  return { name: doc.name, ...(doc.goal !== undefined ? { goal: doc.goal } : {}), arms };
}
