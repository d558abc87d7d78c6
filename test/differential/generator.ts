import fc from 'fast-check';
import { BOUNDS, GENERATOR } from './bounds.ts';
import { aliasArb, conventional, ioNameArb, portArb, type Name } from './names.ts';
import { FLAW_KINDS } from './flaws.ts';
import { renderCase } from './render.ts';
import type { Node, Style } from './yaml.ts';
import type { ChildUse, Flaw, IoChoice, LabCase, LabSpec, ModelSpec, ModelUse } from './types.ts';

/**
 * The property-based generator of lab source trees for the differential tests: lab.yaml
 * (aliases of every length and character class, unusual port and io names, quoted and
 * unquoted versions, unknown keys, child labs in subfolders, several models wired
 * together), model folders with model.yaml and a generic BioModule, and flaws mixed in.
 * Everything is a choice fast-check can shrink; ./render.ts writes the files.
 */

// Strings of descriptive values: printable ASCII (fast-check's default unit), so always storable.
const text = (maxLength: number) => fc.string({ maxLength });
const key = fc.stringMatching(/^[a-z][a-z0-9_-]{0,10}$/);
// Keys of lab.yaml the generator writes itself: an extra key never shadows one of them.
const TAKEN = new Set(['schema_version', 'title', 'description', 'package', 'version', 'models', 'children', 'wiring', 'runtime', 'io', 'tags', 'intended_use', 'compute_class', 'smoke', 'licenses', 'authors', 'visualization', 'alias', 'path', 'parameters', 'biosim', 'repo', 'manifest_path', 'min_dt', 'priority', 'lab_id']);
const freeKey = key.filter((k) => !TAKEN.has(k));

/** A value of an unknown key: scalars, lists and mappings a few levels deep (well inside BOUNDS.nesting). */
const { value: anyValue } = fc.letrec<{ value: Node }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(text(20), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(freeKey, tie('value'), { maxKeys: 3 }),
  ),
}));
const extrasArb = fc.oneof({ withCrossShrink: true }, { weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.dictionary(freeKey, anyValue, { maxKeys: 3 }) });

const positive = fc.oneof(fc.constantFrom(0.1, 0.5, 1, 0.0078125, 1e-6), fc.double({ min: 1e-9, max: 1e6, noNaN: true }));

const modelArb: fc.Arbitrary<ModelSpec> = fc.record({
  dir: fc.nat(),
  inputs: fc.uniqueArray(portArb, { maxLength: GENERATOR.portsPerModel }),
  outputs: fc.uniqueArray(portArb, { minLength: 1, maxLength: GENERATOR.portsPerModel }),
  policy: fc.record({
    kind: fc.oneof({ withCrossShrink: true }, { weight: 8, arbitrary: fc.constant('each_window' as const) }, { weight: 1, arbitrary: fc.constantFrom('once_before_run' as const, 'once_after_run' as const) }),
    declared: fc.boolean(),
  }),
  pins: fc.constantFrom('none', 'none', 'exact', 'old_biosimulant'),
  extras: extrasArb,
});

const modelUseArb: fc.Arbitrary<ModelUse> = fc.record({
  alias: aliasArb,
  model: modelArb,
  parameters: fc.option(fc.dictionary(conventional, fc.double({ min: -1e3, max: 1e3, noNaN: true }), { maxKeys: 3 }), { freq: 3 }),
  pathForm: fc.constantFrom('plain', 'plain', 'plain', 'dot', 'slash'),
  extras: extrasArb,
});

/** Sibling aliases, unique as the runtime compares them (the text read); a duplicate is a flaw of its own. */
const models = (minLength: number, maxLength: number) => fc.uniqueArray(modelUseArb, { minLength, maxLength, selector: (m) => m.alias.text });

const ioArb: fc.Arbitrary<IoChoice> = fc.record({
  name: ioNameArb,
  at: fc.nat(),
  silico: fc.record({
    value_type: fc.constantFrom('number', 'integer', 'string', 'boolean', 'object', 'array', 'timeseries', 'table'),
    required: fc.boolean(),
    description: text(40),
    schema: fc.constant({ type: 'number' }),
  }, { requiredKeys: [] }),
});

const flawsArb: fc.Arbitrary<Flaw[]> = fc.oneof(
  { withCrossShrink: true },
  { weight: 5, arbitrary: fc.constant<Flaw[]>([]) },
  { weight: 6, arbitrary: fc.array(fc.record({ kind: fc.constantFrom(...FLAW_KINDS), at: fc.nat() }), { minLength: 1, maxLength: 2 }) },
);

const semver = fc.tuple(fc.nat(20), fc.nat(20), fc.nat(20), fc.option(fc.constantFrom('rc.1', 'alpha', 'beta.2'), { freq: 4 }))
  .map(([a, b, c, pre]) => `${a}.${b}.${c}${pre ? `-${pre}` : ''}`);
const packageSegment = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,20}[a-z0-9])?$/);
const identityArb = fc.record({
  package: fc.option(fc.oneof(packageSegment, fc.tuple(packageSegment, packageSegment).map(([ns, n]) => `${ns}/${n}`)).map((t): Name => ({ text: t, verbatim: false })), { freq: 2 }),
  // Quoted, or unquoted (a string in both YAML versions), or a YAML number (the runtime then reads no version).
  version: fc.option(fc.oneof(
    semver.map((t): Name => ({ text: t, verbatim: false })),
    semver.map((t): Name => ({ text: t, verbatim: true })),
    fc.constantFrom<Name>({ text: '1.0', verbatim: true }, { text: '2', verbatim: true }),
  ), { freq: 2 }),
});

const silicoArb = fc.record({
  compute_class: fc.constantFrom(...BOUNDS.computeClasses),
  tags: fc.array(text(20), { maxLength: 3 }),
  intended_use: text(40),
  smoke: fc.constant({ inputs: {} }),
}, { requiredKeys: [] });

/** A lab at `depth` (0: the root); child labs are smaller and fewer the deeper they are. */
function labArb(depth: number): fc.Arbitrary<LabSpec> {
  const children: fc.Arbitrary<ChildUse[]> = depth >= GENERATOR.maxChildDepth
    ? fc.constant<ChildUse[]>([])
    : fc.oneof(
      { withCrossShrink: true },
      { weight: 6 + depth * 6, arbitrary: fc.constant<ChildUse[]>([]) },
      { weight: 1, arbitrary: fc.uniqueArray(fc.record({ alias: aliasArb, lab: labArb(depth + 1) }), { minLength: 1, maxLength: GENERATOR.childrenUsual, selector: (c) => c.alias.text }) },
    );
  return fc.record({
    title: fc.oneof(text(60), fc.constantFrom('SIR', 'Predator–prey, two wired models')),
    description: fc.option(text(200), { freq: 2 }),
    // A rare wide lab reaches the bound; each of its models is a folder of its own.
    models: depth === 0
      ? fc.oneof({ withCrossShrink: true }, { weight: 1000, arbitrary: models(1, GENERATOR.modelsUsual) }, { weight: 1, arbitrary: models(BOUNDS.modelsPerLab - 50, BOUNDS.modelsPerLab) })
      : models(1, 2),
    children,
    wires: fc.array(fc.record({ from: fc.nat(), to: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }) }), { maxLength: GENERATOR.wires }),
    inputs: fc.array(ioArb, { maxLength: GENERATOR.ioEntries }),
    outputs: fc.array(ioArb, { maxLength: GENERATOR.ioEntries }),
    runtime: fc.record({
      duration: positive,
      step: positive,
      settle: fc.option(fc.nat(5), { freq: 2 }),
      python: fc.constantFrom('none', 'none', 'none', 'quoted', 'number'),
    }),
    identity: depth === 0 ? identityArb : fc.constant({ package: null, version: null }),
    silico: depth === 0 ? silicoArb : fc.constant({}),
    extras: extrasArb,
    flaws: flawsArb,
  });
}

const styleArb: fc.Arbitrary<Style> = fc.record({
  quote: fc.constantFrom('plain', 'plain', 'single', 'double'),
  flowFrom: fc.constantFrom(Infinity, Infinity, 2, 3, 4),
  crlf: fc.oneof({ withCrossShrink: true }, { weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  comment: fc.boolean(),
});

/** A whole lab source tree: its choices, how they are written, and its files. */
export const labCaseArb: fc.Arbitrary<LabCase> = fc.record({ spec: labArb(0), style: styleArb })
  .map(({ spec, style }) => {
    const files = renderCase(spec, style);
    // How fast-check prints a failing case: the failure's own message shows its files.
    return Object.assign({ spec, style, files }, { [fc.toStringMethod]: () => `a lab of ${Object.keys(files).length} files (shown in the error)` });
  });
