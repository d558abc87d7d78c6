import { readFileSync } from 'node:fs';
import { DIR_NAMES, type Name } from './names.ts';
import { Pairs, Raw, toYaml, type Node, type Style } from './yaml.ts';
import { applyFlaw } from './flaws.ts';
import type { LabSpec, ModelSpec } from './types.ts';

/** The generic BioModule every model folder holds (its ports are its model.yaml's). */
const GENERIC_MODEL = readFileSync(new URL('./generic_model.py', import.meta.url), 'utf8');
/** The class of generic_model.py for each execution policy. */
const ENTRYPOINTS: Record<ModelSpec['policy']['kind'], string> = {
  each_window: 'src.m:Generic', once_before_run: 'src.m:GenericBefore', once_after_run: 'src.m:GenericAfter',
};

const PINS: Record<ModelSpec['pins'], string[]> = {
  none: [],
  exact: ['numpy==2.4.6'],
  // The runtime keeps its own biosimulant and skips a model's pin of another: a warning.
  old_biosimulant: ['biosimulant==0.0.38'],
};

type Mapping = Record<string, Node>;

/** One lab.yaml being written, with what its flaws need to find their targets. */
export interface Rendered {
  doc: Mapping;
  /** This lab's folder in the tree: '' for the root, `labs/c0/` for a child. */
  dir: string;
  /** model.yaml documents by model folder (relative to the lab), written after the flaws. */
  models: Array<{ dir: string; doc: Mapping; present: boolean }>;
  /** Wire endpoints: `alias.port` of outputs and inputs (a child's io names included). */
  outs: string[];
  ins: string[];
  duplicateKey: boolean;
  /** The whole lab.yaml text instead of `doc` (a flaw that is not a mapping). */
  wholeText?: string;
  /** Child labs' lab.yaml files a flaw removed. */
  removed: string[];
}

const nameNode = (n: Name): Node => (n.verbatim ? new Raw(n.text) : n.text);
const uniqueDir = (i: number, pick: number) => `${DIR_NAMES[pick % DIR_NAMES.length]}${i}`;

function modelDoc(m: ModelSpec): Mapping {
  return {
    schema_version: '2.0',
    title: 'Generic model',
    biosim: { entrypoint: ENTRYPOINTS[m.policy.kind], ...(m.policy.declared ? { execution_policy: m.policy.kind } : {}) },
    io: { inputs: m.inputs.map((name) => ({ name })), outputs: m.outputs.map((name) => ({ name })) },
    runtime: { dependencies: { packages: PINS[m.pins] } },
    ...m.extras,
  };
}

/** Writes a lab (and its child labs, models and module files) into `files`; returns its io names for a parent's wires. */
export function renderLab(spec: LabSpec, style: Style, dir: string, files: Record<string, string>): { inputs: string[]; outputs: string[] } {
  const models = spec.models.map((use, i) => ({ use, dir: `models/${uniqueDir(i, use.model.dir)}` }));
  const children = spec.children.map((use, i) => ({ use, dir: `labs/c${i}`, io: renderLab(use.lab, style, `${dir}labs/c${i}/`, files) }));
  const port = (alias: Name, p: string) => `${alias.text}.${p}`;
  const outs = [
    ...models.flatMap((m) => m.use.model.outputs.map((p) => port(m.use.alias, p))),
    ...children.flatMap((c) => c.io.outputs.map((p) => port(c.use.alias, p))),
  ];
  const ins = [
    ...models.flatMap((m) => m.use.model.inputs.map((p) => port(m.use.alias, p))),
    ...children.flatMap((c) => c.io.inputs.map((p) => port(c.use.alias, p))),
  ];
  const modelIns = models.flatMap((m) => m.use.model.inputs.map((p) => port(m.use.alias, p)));
  const modelOuts = models.flatMap((m) => m.use.model.outputs.map((p) => port(m.use.alias, p)));
  const io = (choices: LabSpec['inputs'], targets: string[]) => (targets.length
    ? choices.map((c) => ({ name: c.name, maps_to: targets[c.at % targets.length]!, ...c.silico }))
    : []);
  const ioInputs = io(spec.inputs, modelIns);
  const ioOutputs = io(spec.outputs, modelOuts);
  const wiring = outs.length && ins.length
    ? spec.wires.map((w) => ({ from: outs[w.from % outs.length]!, to: [...new Set(w.to.map((t) => ins[t % ins.length]!))] }))
    : [];
  const path = (p: string, form: string) => (form === 'dot' ? `./${p}` : form === 'slash' ? `${p}/` : p);
  const doc: Mapping = {
    schema_version: '2.0',
    title: spec.title,
    ...(spec.description === null ? {} : { description: spec.description }),
    ...(spec.identity.package ? { package: nameNode(spec.identity.package) } : {}),
    ...(spec.identity.version ? { version: nameNode(spec.identity.version) } : {}),
    ...spec.silico,
    models: models.map((m) => ({
      alias: nameNode(m.use.alias), path: path(m.dir, m.use.pathForm),
      ...(m.use.parameters ? { parameters: m.use.parameters } : {}), ...m.use.extras,
    })),
    ...(children.length ? { children: children.map((c) => ({ alias: nameNode(c.use.alias), path: c.dir })) } : {}),
    wiring,
    runtime: {
      duration: spec.runtime.duration,
      communication_step: spec.runtime.step,
      ...(spec.runtime.settle === null ? {} : { settle_steps: spec.runtime.settle }),
      initial_inputs: {},
      ...(spec.runtime.python === 'none' ? {} : { python_version: spec.runtime.python === 'quoted' ? '3.11' : new Raw('3.11') }),
    },
    ...(ioInputs.length || ioOutputs.length ? { io: { inputs: ioInputs, outputs: ioOutputs } } : {}),
    ...spec.extras,
  };
  const r: Rendered = {
    doc, dir, outs, ins, duplicateKey: false, removed: [],
    models: models.map((m) => ({ dir: m.dir, doc: modelDoc(m.use.model), present: true })),
  };
  for (const flaw of spec.flaws) applyFlaw(r, flaw);
  for (const m of r.models) {
    if (m.present) files[`${dir}${m.dir}/model.yaml`] = toYaml(m.doc, style);
    files[`${dir}${m.dir}/src/m.py`] = GENERIC_MODEL;
  }
  const body = r.duplicateKey ? new Pairs([...Object.entries(r.doc), ['description', 'a key written twice: YAML 1.2 refuses it, PyYAML keeps the last']]) : r.doc;
  files[`${dir}lab.yaml`] = r.wholeText ?? toYaml(body, style);
  for (const f of r.removed) delete files[f];
  return {
    inputs: ioInputs.map((e) => e.name),
    outputs: ioOutputs.map((e) => e.name),
  };
}

/** The files of a lab case: the root lab and everything under it. */
export function renderCase(spec: LabSpec, style: Style): Record<string, string> {
  const files: Record<string, string> = {};
  renderLab(spec, style, '', files);
  return files;
}
