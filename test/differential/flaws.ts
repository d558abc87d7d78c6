import { Raw, toYaml, type Node } from './yaml.ts';
import type { Rendered } from './render.ts';
import type { Flaw } from './types.ts';

type Mapping = Record<string, Node>;

const isMap = (v: Node | undefined): v is Mapping => !!v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw);
const maps = (v: Node | undefined): Mapping[] => (Array.isArray(v) ? v.filter(isMap) : []);
const pick = <T>(list: readonly T[], at: number): T | undefined => (list.length ? list[at % list.length] : undefined);
/** A second choice from the same number, so two picks of one flaw are not the same index. */
const other = (at: number) => Math.floor(at / 7);
const aliasOf = (ref: string) => ref.slice(0, ref.lastIndexOf('.'));

const modelsOf = (r: Rendered) => maps(r.doc.models);
const childrenOf = (r: Rendered) => maps(r.doc.children);
const wiresOf = (r: Rendered) => maps(r.doc.wiring);
const runtimeOf = (r: Rendered) => (isMap(r.doc.runtime) ? r.doc.runtime : undefined);
const ioOf = (r: Rendered, side: 'inputs' | 'outputs') => (isMap(r.doc.io) ? maps(r.doc.io[side]) : []);
const modelDocOf = (r: Rendered, at: number) => pick(r.models, at)?.doc;
const biosimOf = (doc: Mapping | undefined) => (doc && isMap(doc.biosim) ? doc.biosim : undefined);
const setModel = (r: Rendered, at: number, key: string, value: Node) => {
  const m = pick(modelsOf(r), at);
  if (m) m[key] = value;
};
/** Gives `to` the alias `from` has; nothing when an earlier flaw took `from`'s away. */
const copyAlias = (from: Mapping, to: Mapping) => {
  if (from.alias !== undefined) to.alias = from.alias;
};
const setRuntime = (r: Rendered, key: string, value: Node) => {
  const rt = runtimeOf(r);
  if (rt) rt[key] = value;
};
const setEntrypoint = (r: Rendered, at: number, value: string) => {
  const b = biosimOf(modelDocOf(r, at));
  if (b) b.entrypoint = value;
};
/** An io output entry to break: an existing one, or a new one when the lab has none. */
const ioOutput = (r: Rendered): Mapping => {
  const existing = ioOf(r, 'outputs')[0];
  if (existing) return existing;
  const entry: Mapping = { name: 'added', maps_to: r.outs[0] ?? 'x.y' };
  r.doc.io = { ...(isMap(r.doc.io) ? r.doc.io : {}), outputs: [entry] };
  return entry;
};

// Values for the flaws that choose among several.
const BLANKS = ['', '   ', '\t', '\n ', '\u00a0', '\u0085', '\u001c', '\ufeff', '\u2003'];
const NON_STRINGS: Node[] = [42, true, null, ['a'], { a: 1 }, 1.5];
const BAD_PACKAGES: Node[] = ['Lab', 'my_lab', '-lab', 'lab-', 'a/b/c', 'x'.repeat(65), ' lab ', '', 'ns/', new Raw('42'), new Raw('yes'), 'acme/Lab'];
const BAD_VERSIONS: Node[] = ['1.0', 'v1.0.0', '1.0.0+build.1', '01.0.0', '1.0.0-', ' 1.0.0 ', '', new Raw('1.0'), new Raw('1'), '1.0.0.0', 'latest', new Raw('yes')];

/**
 * Every flaw: a departure from a well-formed lab that an author could write. Some are
 * wrong for the runtime, some only look wrong (`communication_step: "0.25"`, a title-less
 * lab, a key written twice): the judges, not this table, say which.
 */
const FLAWS = {
  // Aliases
  alias_blank: (r, at) => setModel(r, at, 'alias', BLANKS[other(at) % BLANKS.length]!),
  alias_duplicate: (r, at) => {
    const ms = modelsOf(r);
    if (ms.length >= 2) copyAlias(ms[at % ms.length]!, ms[(at + 1) % ms.length]!);
  },
  alias_not_string: (r, at) => setModel(r, at, 'alias', NON_STRINGS[other(at) % NON_STRINGS.length]!),
  alias_absent: (r, at) => {
    const m = pick(modelsOf(r), at);
    if (m) delete m.alias;
  },
  child_alias_as_model_alias: (r, at) => {
    const c = pick(childrenOf(r), at);
    const m = pick(modelsOf(r), other(at));
    if (c && m) copyAlias(m, c);
  },
  child_alias_duplicate: (r) => {
    const cs = childrenOf(r);
    if (cs.length >= 2) copyAlias(cs[0]!, cs[1]!);
  },
  child_alias_blank: (r, at) => {
    const c = pick(childrenOf(r), at);
    if (c) c.alias = BLANKS[other(at) % BLANKS.length]!;
  },
  // Wiring
  wire_to_missing_port: (r, at) => {
    const w = pick(wiresOf(r), at);
    if (w && Array.isArray(w.to) && typeof w.to[0] === 'string') w.to[0] = `${aliasOf(w.to[0])}.no_such_port`;
  },
  wire_from_missing_alias: (r, at) => {
    const w = pick(wiresOf(r), at);
    if (w && typeof w.from === 'string') w.from = `ghost_model.${w.from.slice(w.from.lastIndexOf('.') + 1)}`;
  },
  wire_to_not_list: (r, at) => {
    const w = pick(wiresOf(r), at);
    if (w && Array.isArray(w.to)) w.to = w.to[0] ?? 'x.y';
  },
  wire_from_not_string: (r, at) => {
    const w = pick(wiresOf(r), at);
    if (w) w.from = 42;
  },
  wire_ref_without_dot: (r, at) => {
    const w = pick(wiresOf(r), at);
    if (w) w.to = ['nodot'];
  },
  wire_not_mapping: (r) => {
    if (Array.isArray(r.doc.wiring)) r.doc.wiring.push('a.out -> b.in');
  },
  wiring_absent: (r) => {
    delete r.doc.wiring;
  },
  wiring_not_list: (r) => {
    r.doc.wiring = { from: r.outs[0] ?? 'a.b', to: [r.ins[0] ?? 'c.d'] };
  },
  // io
  io_to_missing_alias: (r) => {
    ioOutput(r).maps_to = 'ghost_model.x';
  },
  io_to_missing_port: (r) => {
    const e = ioOutput(r);
    e.maps_to = typeof e.maps_to === 'string' && e.maps_to.includes('.') ? `${aliasOf(e.maps_to)}.no_such_port` : 'x.no_such_port';
  },
  io_ref_without_dot: (r) => {
    ioOutput(r).maps_to = 'nodot';
  },
  io_name_not_string: (r) => {
    ioOutput(r).name = 42;
  },
  io_name_duplicate: (r) => {
    const e = ioOutput(r);
    const list = (r.doc.io as Mapping).outputs as Node[];
    list.push({ ...e });
  },
  // runtime
  runtime_absent: (r) => {
    delete r.doc.runtime;
  },
  step_absent: (r) => {
    const rt = runtimeOf(r);
    if (rt) delete rt.communication_step;
  },
  step_zero: (r) => setRuntime(r, 'communication_step', 0),
  step_negative: (r) => setRuntime(r, 'communication_step', -0.1),
  step_numeric_string: (r) => setRuntime(r, 'communication_step', '0.25'),
  step_word: (r) => setRuntime(r, 'communication_step', 'fast'),
  step_boolean: (r) => setRuntime(r, 'communication_step', true),
  settle_negative: (r) => setRuntime(r, 'settle_steps', -1),
  settle_fraction: (r) => setRuntime(r, 'settle_steps', 1.5),
  settle_numeric_string: (r) => setRuntime(r, 'settle_steps', '2'),
  settle_boolean: (r) => setRuntime(r, 'settle_steps', true),
  tick_dt: (r) => setRuntime(r, 'tick_dt', 0.1),
  duration_word: (r) => setRuntime(r, 'duration', 'long'),
  python_unsupported: (r) => setRuntime(r, 'python_version', '3.9'),
  python_310_as_number: (r) => setRuntime(r, 'python_version', new Raw('3.10')),
  python_boolean: (r) => setRuntime(r, 'python_version', true),
  // Identity
  package_unusual: (r, at) => {
    r.doc.package = BAD_PACKAGES[at % BAD_PACKAGES.length]!;
  },
  version_unusual: (r, at) => {
    r.doc.version = BAD_VERSIONS[at % BAD_VERSIONS.length]!;
  },
  // models[] entries
  model_package_key: (r, at) => setModel(r, at, 'package', 'acme/x'),
  model_version_key: (r, at) => setModel(r, at, 'version', '1.0.0'),
  model_repo_key: (r, at) => setModel(r, at, 'repo', 'https://github.com/acme/x'),
  model_min_dt: (r, at) => setModel(r, at, 'min_dt', 0.1),
  model_path_missing: (r, at) => setModel(r, at, 'path', 'models/nowhere'),
  model_path_escapes: (r, at) => setModel(r, at, 'path', '../outside'),
  model_path_absolute: (r, at) => setModel(r, at, 'path', '/etc'),
  model_path_not_string: (r, at) => setModel(r, at, 'path', 42),
  model_path_absent: (r, at) => {
    const m = pick(modelsOf(r), at);
    if (m) delete m.path;
  },
  models_empty: (r) => {
    r.doc.models = [];
  },
  models_absent: (r) => {
    delete r.doc.models;
  },
  models_not_list: (r) => {
    r.doc.models = modelsOf(r)[0] ?? { alias: 'a', path: 'models/a' };
  },
  // children[] entries
  child_package_reference: (r, at) => {
    const c = pick(childrenOf(r), at);
    if (c) {
      delete c.path;
      c.package = 'acme/child';
      c.version = '1.0.0';
    }
  },
  child_path_missing: (r, at) => {
    const c = pick(childrenOf(r), at);
    if (c) c.path = 'labs/nowhere';
  },
  child_lab_yaml_missing: (r, at) => {
    const c = pick(childrenOf(r), at);
    if (c && typeof c.path === 'string') r.removed.push(`${r.dir}${c.path}/lab.yaml`);
  },
  // model.yaml
  policy_contradicts_source: (r, at) => {
    const b = biosimOf(modelDocOf(r, at));
    if (b) b.execution_policy = b.entrypoint === 'src.m:GenericAfter' ? 'each_window' : 'once_after_run';
  },
  policy_unknown: (r, at) => {
    const b = biosimOf(modelDocOf(r, at));
    if (b) b.execution_policy = 'sometimes';
  },
  pin_range: (r, at) => {
    const d = modelDocOf(r, at);
    if (d) d.runtime = { dependencies: { packages: ['numpy>=2'] } };
  },
  pin_not_string: (r, at) => {
    const d = modelDocOf(r, at);
    if (d) d.runtime = { dependencies: { packages: [42] } };
  },
  port_duplicate: (r, at) => {
    const d = modelDocOf(r, at);
    const io = d && isMap(d.io) ? d.io : undefined;
    const outs = io && Array.isArray(io.outputs) ? io.outputs : undefined;
    if (outs) outs.push(outs[0] ?? { name: 'x' }, outs[0] ?? { name: 'x' });
  },
  model_biosim_absent: (r, at) => {
    const d = modelDocOf(r, at);
    if (d) delete d.biosim;
  },
  model_yaml_missing: (r, at) => {
    const m = pick(r.models, at);
    if (m) m.present = false;
  },
  entrypoint_dotted: (r, at) => setEntrypoint(r, at, 'src.m.Generic'),
  entrypoint_module_missing: (r, at) => setEntrypoint(r, at, 'src.nope:Generic'),
  entrypoint_class_missing: (r, at) => setEntrypoint(r, at, 'src.m:Nope'),
  // Keys that describe, or that only Silico reads (within its own checks: ./bounds.ts)
  visualization_unusual: (r) => {
    r.doc.visualization = { layout: 'grid' };
  },
  visualization_opt_out: (r) => {
    r.doc.visualization = { schema_version: '1', opt_out_reason: 'no plots' };
  },
  schema_version_as_number: (r) => {
    r.doc.schema_version = new Raw('2.0');
  },
  schema_version_absent: (r) => {
    delete r.doc.schema_version;
  },
  schema_version_other: (r) => {
    r.doc.schema_version = '1.0';
  },
  title_absent: (r) => {
    delete r.doc.title;
  },
  title_not_string: (r) => {
    r.doc.title = new Raw('1.0');
  },
  value_type_unusual: (r) => {
    ioOutput(r).value_type = 'float';
  },
  required_not_boolean: (r) => {
    ioOutput(r).required = 'yes';
  },
  // The file as a whole
  key_written_twice: (r) => {
    r.duplicateKey = true;
  },
  lab_yaml_not_mapping: (r) => {
    r.wholeText = '- models\n- wiring\n';
  },
  lab_yaml_empty: (r) => {
    r.wholeText = '';
  },
  lab_yaml_two_documents: (r) => {
    r.wholeText = `${toYaml(r.doc)}---\n${toYaml(r.doc)}`;
  },
} satisfies Record<string, (r: Rendered, at: number) => void>;

export type FlawKind = keyof typeof FLAWS;
export const FLAW_KINDS = Object.keys(FLAWS) as FlawKind[];

export function applyFlaw(r: Rendered, flaw: Flaw): void {
  FLAWS[flaw.kind](r, flaw.at);
}
