/**
 * Silico's own checks of a lab, which it may make although the runtime has none: the
 * table "Silico's own checks" of docs/contract/lab-format.md (api/schemas/labManifest.ts
 * LAB_BOUNDS, storage/trees.ts, api/validation.ts). The generator stays inside every one of
 * them, so a lab the runtime accepts and the service blocks is a disagreement, never a
 * bound. Written out here, not imported: a bound the service tightens shows as failures
 * until this table (and the document) say so.
 */
export const BOUNDS = {
  /** A model's or child's alias, an io name: characters (code points; the long ones generated are BMP-only, so UTF-16 units too). */
  nameChars: 200,
  /** A wiring `from`/`to`, an io `maps_to`. */
  referenceChars: 1000,
  /** `title`, when a string. */
  titleChars: 200,
  /** `compute_class`: Silico's key. */
  computeClasses: ['cpu', 'gpu'],
  // `smoke` is `{inputs: {...}}` only, and an `io.inputs[].schema` an object: Silico's keys, written so.
  /** A path in the lab's tree, UTF-8 bytes; the tree itself is at most 64 MiB. */
  pathBytes: 255,
  /** Deepest nesting of a lab.yaml value (api/validation.ts MAX_NESTING). */
  nesting: 32,
  // Not bounds of the service (it has none on these; the tree's 64 MiB holds them): the
  // generator keeps to them so that a case stays small enough to judge quickly.
  /** Models of one lab.yaml. */
  modelsPerLab: 200,
  /** lab.yaml bytes. */
  labYamlBytes: 1 << 20,
} as const;

/**
 * Further limits of the generator, each for a reason other than a bound of the service:
 * - Text is storable (api/validation.ts unstorableProblem): no U+0000, no lone surrogate,
 *   and numbers are finite, except where an alias is the YAML token `.inf`/`.nan` on
 *   purpose (the runtime refuses a non-string alias anyway).
 * - `runtime.python_version` is absent, 3.11 (the default runtime's) or one the runtime
 *   refuses: for 3.12–3.14 the plan's verdict depends on which Pythons a deployment
 *   provides (api/runs/environment.ts), not on the lab.
 * - model.yaml pins are satisfied by the default runtime or refused outright (a range
 *   where an exact pin is needed): any other pin sends the plan to uv and the package
 *   index (an own environment), which a pure check cannot judge.
 * - Child labs nest at most 3 deep (the runtime allows 5) and package-backed children
 *   come without their lock (the runtime would resolve them through the Hub).
 */
export const GENERATOR = {
  maxChildDepth: 3,
  /** Models of an ordinary case; BOUNDS.modelsPerLab is reached by a rare wide case. */
  modelsUsual: 4,
  childrenUsual: 2,
  portsPerModel: 4,
  wires: 5,
  ioEntries: 3,
  /** Port names (model.yaml, no bound of the service's): long ones up to this. */
  portChars: 200,
} as const;
