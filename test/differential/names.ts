import fc from 'fast-check';
import { BOUNDS, GENERATOR } from './bounds.ts';

/**
 * Characters by class. The runtime takes any alias that is a string with something
 * besides whitespace (biosim/pack.py `_validate_lab_manifest`: `alias.strip()`), any port
 * name that is a non-empty string, and reads a reference `alias.port` at its LAST dot:
 * names of every class below are fair, and a dot is fair in an alias.
 */
export const CHAR_CLASSES = {
  lower: 'abcdefghijklmnopqrstuvwxyz',
  upper: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
  digit: '0123456789',
  underscore: '_',
  hyphen: '-',
  dot: '.',
  space: ' ',
  // Whitespace Python's str.strip() and JavaScript's trim() disagree on: U+001C and U+0085
  // Python strips and JavaScript keeps; U+FEFF JavaScript strips and Python keeps.
  whitespace: '\t\n\u001c\u0085\u00a0\u2003\ufeff',
  letters: 'éßλΩя日本عש',
  // Astral (two UTF-16 units), zero-width space, a combining mark.
  symbols: '😀🧬\u200b\u0301',
  punctuation: ':#@/\'"!%&*[]{},?|><=+~`\\$^();',
} as const;

type CharClass = keyof typeof CHAR_CLASSES;

const charOf = (classes: Array<[CharClass, number]>) =>
  fc.oneof(...classes.map(([c, weight]) => ({ weight, arbitrary: fc.constantFrom(...[...CHAR_CLASSES[c]]) })));

const ALL: Array<[CharClass, number]> = [
  ['lower', 12], ['upper', 2], ['digit', 3], ['underscore', 2], ['hyphen', 2], ['dot', 1], ['space', 1],
  ['whitespace', 1], ['letters', 2], ['symbols', 1], ['punctuation', 2],
];
const NO_DOT = ALL.filter(([c]) => c !== 'dot');
// Long names stay in the BMP, so their length is the same counted either way.
const BMP = ALL.filter(([c]) => c !== 'symbols');

const textOf = (classes: Array<[CharClass, number]>, minLength: number, maxLength: number) =>
  fc.array(charOf(classes), { minLength, maxLength }).map((cs) => cs.join(''));

/** What most labs use: `^[a-z][a-z0-9_]*$`, short. */
export const conventional = fc.tuple(charOf([['lower', 1]]), textOf([['lower', 8], ['digit', 2], ['underscore', 1]], 0, 12)).map(([a, b]) => a + b);

/**
 * YAML tokens that are not strings in YAML 1.1 (PyYAML, the runtime's parser) or in 1.2
 * (`yaml`, the service's), or are strings in one only: `1e3` is a string to PyYAML and a
 * number to `yaml`; `yes`, `1:30` and `2020-01-01` the other way round; `y` is a string to
 * both but a boolean to `yaml`'s own YAML 1.1 schema.
 */
export const YAML_TOKENS = [
  'yes', 'No', 'on', 'OFF', 'y', 'n', 'true', 'null', '~', '1e3', '1.0e3', '1.0e+3', '1_000', '1:30', '0x1F', '0o17', '017', '0b101',
  '.5', '2020-01-01', '=', '.inf', '.nan', 'NaN', '1.0', '2.0', '0',
] as const;

/** A name as written in a YAML file: verbatim (plain, exactly these characters) or quoted as needed. */
export interface Name { text: string; verbatim: boolean }

const quoted = (text: fc.Arbitrary<string>) => text.map((t): Name => ({ text: t, verbatim: false }));

/** A model or child alias: every length up to the bound and every character class. */
export const aliasArb: fc.Arbitrary<Name> = fc.oneof(
  { withCrossShrink: true },
  { weight: 10, arbitrary: quoted(conventional) },
  { weight: 5, arbitrary: quoted(textOf(ALL, 1, 40)) },
  { weight: 1, arbitrary: quoted(textOf(BMP, BOUNDS.nameChars - 60, BOUNDS.nameChars)) },
  { weight: 1, arbitrary: quoted(textOf([['lower', 1]], BOUNDS.nameChars, BOUNDS.nameChars)) },
  { weight: 3, arbitrary: fc.record({ text: fc.constantFrom(...YAML_TOKENS), verbatim: fc.boolean() }) },
);

/** A model's port name: no dot (a reference's last dot ends its alias), otherwise anything. */
export const portArb: fc.Arbitrary<string> = fc.oneof(
  { withCrossShrink: true },
  { weight: 10, arbitrary: conventional },
  { weight: 4, arbitrary: textOf(NO_DOT, 1, 40) },
  { weight: 1, arbitrary: textOf(NO_DOT.filter(([c]) => c !== 'symbols'), 100, GENERATOR.portChars) },
);

/** A lab's io name (`io.inputs[].name`): anything non-empty; a dot too (a parent's wire reads it whole). */
export const ioNameArb: fc.Arbitrary<string> = fc.oneof(
  { withCrossShrink: true },
  { weight: 10, arbitrary: conventional },
  { weight: 4, arbitrary: textOf(ALL, 1, 40) },
  { weight: 1, arbitrary: textOf(BMP, 64, BOUNDS.nameChars) },
);

/** Folder names of models (safe paths: storage/trees.ts normalizePath), some unusual. */
export const DIR_NAMES = ['core', 'm', 'Model One', 'modèle', 'a.b', 'x-y_z', 'UPPER', '0lead'] as const;
