import type { Name } from './names.ts';
import type { Node, Style } from './yaml.ts';
import type { FlawKind } from './flaws.ts';

/** One model folder: model.yaml (its ports, policy, pins, entrypoint) beside the generic module. */
export interface ModelSpec {
  dir: number;
  inputs: string[];
  outputs: string[];
  /**
   * The class's execution policy (a class of generic_model.py each), and whether model.yaml
   * declares it (biosim.execution_policy): the runtime's phase rules read declarations.
   */
  policy: { kind: 'each_window' | 'once_before_run' | 'once_after_run'; declared: boolean };
  /** runtime.dependencies.packages: none, or pins the default runtime satisfies or only warns about. */
  pins: 'none' | 'exact' | 'old_biosimulant';
  extras: Record<string, Node>;
}

/** A `models[]` entry of a lab.yaml and the model it names. */
export interface ModelUse {
  alias: Name;
  model: ModelSpec;
  parameters: Record<string, number> | null;
  /** How the path is written: `models/x`, `./models/x` or `models/x/` (the runtime normalises all three). */
  pathForm: 'plain' | 'dot' | 'slash';
  extras: Record<string, Node>;
}

export interface ChildUse { alias: Name; lab: LabSpec }

/** A wire as choices among the lab's output and input endpoints (indices taken modulo their count). */
export interface WireChoice { from: number; to: number[] }

/** An io entry: its name and the model port it maps to (an index into the lab's ports). */
export interface IoChoice {
  name: string;
  at: number;
  silico: { value_type?: string; required?: boolean; description?: string; schema?: Record<string, Node> };
}

export interface RuntimeSpec {
  duration: number;
  step: number;
  settle: number | null;
  python: 'none' | 'quoted' | 'number';
}

/** A flaw: a deliberate departure from a well-formed lab, at a position chosen modulo what is there. */
export interface Flaw { kind: FlawKind; at: number }

/** A lab (the root, or a child lab in a subfolder) as choices; rendered by ./render.ts. */
export interface LabSpec {
  title: string;
  description: string | null;
  models: ModelUse[];
  children: ChildUse[];
  wires: WireChoice[];
  inputs: IoChoice[];
  outputs: IoChoice[];
  runtime: RuntimeSpec;
  /** Declared identity (package, version), as written: a string quoted or a token verbatim. */
  identity: { package: Name | null; version: Name | null };
  /** Silico's own top-level keys (compute_class, tags, intended_use, smoke). */
  silico: Record<string, Node>;
  /** Keys neither Silico nor the runtime name, kept as written. */
  extras: Record<string, Node>;
  flaws: Flaw[];
}

/** What the generator hands the judges: the choices, how they are written, and the files. */
export interface LabCase {
  spec: LabSpec;
  style: Style;
  files: Record<string, string>;
}
