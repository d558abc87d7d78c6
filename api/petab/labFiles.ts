import path from 'node:path';
import { stringify } from 'yaml';
import type { ProblemDescription } from '../../activities/petab/engine.ts';
import { readRuntimeLock, TOOLKIT_LOCK_FILE, TOOLKIT_PINS } from '../../storage/runtimePins.ts';

/** The Python version the toolkit's lock names (petab 0.10 needs 3.12). */
const TOOLKIT_PYTHON = readRuntimeLock(TOOLKIT_LOCK_FILE).python;

/** Where an imported lab keeps its PEtab problem, unchanged: the engine reads it there. */
export const PROBLEM_DIR = 'petab';
const MODEL_DIR = 'models/model';
const ALIAS = 'model';
/** Points per simulated trajectory of the lab's own runs. */
const STEPS = 200;

export interface PetabLabSource {
  title: string;
  /** The problem as the engine described it. */
  problem: ProblemDescription;
  /** The problem's YAML and every file it names, by their paths relative to the YAML. */
  files: Array<{ path: string; bytes: Buffer }>;
  /** The SBML file among them. */
  sbml: string;
}

/**
 * The files of the lab an imported PEtab problem becomes: one model that simulates the
 * problem's SBML through the runtime's own SBML support (biosim's TelluriumSBMLBioModule,
 * libroadrunner underneath), its inputs the model's global parameters (the SBML values
 * their defaults) and its outputs the model's entities the observable formulas read, over
 * the measurements' time span; the problem itself kept unchanged under `petab/`, with the
 * toolkit's pins declared so that the lab's environment is the one its calibrations run in.
 */
export function petabLabFiles(src: PetabLabSource): Array<{ path: string; bytes: Buffer }> {
  const { problem } = src;
  const inputs = Object.keys(problem.model.parameters).sort();
  const outputs = problem.model.observed;
  const duration = problem.max_time > 0 ? problem.max_time : 1;
  const step = duration / STEPS;
  const title = src.title.slice(0, 200);
  const io = {
    inputs: inputs.map((name) => ({ name, description: `SBML parameter \`${name}\`${problem.parameters.includes(name) ? ', estimated by the PEtab problem' : ''}.` })),
    outputs: outputs.map((name) => ({ name, description: `SBML entity \`${name}\`, read by the problem's observable formulas.` })),
  };
  const lab = {
    schema_version: '2.0', title, description: `The SBML model of the PEtab problem ${title}, simulated by libroadrunner through the runtime's SBML support. The problem's own files are under ${PROBLEM_DIR}/.`,
    models: [{ alias: ALIAS, path: MODEL_DIR }],
    wiring: [],
    runtime: { duration, communication_step: step },
    io: {
      inputs: inputs.map((name) => ({ name, maps_to: `${ALIAS}.${name}` })),
      outputs: outputs.map((name) => ({ name, maps_to: `${ALIAS}.${name}` })),
    },
  };
  const sbmlName = path.posix.basename(src.sbml);
  const model = {
    schema_version: '2.0', title, description: `The SBML model ${problem.model.name ?? problem.model.id ?? sbmlName}, as the PEtab problem gives it.`,
    biosim: { entrypoint: 'src.petab_model:PetabModel', init_kwargs: { model_path: `data/${sbmlName}`, integration_step: step } },
    runtime: { python_version: TOOLKIT_PYTHON, dependencies: { packages: TOOLKIT_PINS } },
    io,
  };
  const literal = (v: unknown) => JSON.stringify(v); // the dicts below hold only strings and numbers: JSON is a Python literal
  const source = [
    '"""The SBML model of an imported PEtab problem, simulated by the runtime\'s SBML support."""',
    'from biosim.contrib.sbml import TelluriumSBMLBioModule',
    '',
    '',
    'class PetabModel(TelluriumSBMLBioModule):',
    `    _SBML_ID = ${literal(problem.model.id ?? '')}`,
    `    _TITLE = ${literal(title)}`,
    '    _TIME_UNIT = "model_time"',
    `    _PARAMETER_INPUTS = ${literal(Object.fromEntries(inputs.map((n) => [n, [n, problem.model.parameters[n], 'native SBML value', `SBML parameter ${n}.`]])))}`,
    `    _HEADLINE_OUTPUTS = ${literal(Object.fromEntries(outputs.map((n) => [n, [n, 'native SBML value', `SBML entity ${n}.`]])))}`,
    '    _EXPOSE_INTEGRATION_STEP_INPUT = False',
    '    # Headline outputs are the values at the moment, not a mean over a trailing window.',
    '    _HEADLINE_WINDOW_S = 0.0',
    '',
    `    def __init__(self, model_path: str = ${literal(`data/${sbmlName}`)}, integration_step: float = ${step}) -> None:`,
    '        super().__init__(model_path=model_path, integration_step=integration_step)',
    '',
  ].join('\n');
  const sbml = src.files.find((f) => f.path === src.sbml);
  if (!sbml) throw new Error(`the problem's SBML ${src.sbml} is not among its files`);
  return [
    { path: 'lab.yaml', bytes: Buffer.from(stringify(lab)) },
    { path: `${MODEL_DIR}/model.yaml`, bytes: Buffer.from(stringify(model)) },
    { path: `${MODEL_DIR}/src/petab_model.py`, bytes: Buffer.from(source) },
    { path: `${MODEL_DIR}/data/${sbmlName}`, bytes: sbml.bytes },
    ...src.files.map((f) => ({ path: path.posix.join(PROBLEM_DIR, f.path), bytes: f.bytes })),
  ];
}
