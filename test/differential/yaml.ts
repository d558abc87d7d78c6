/**
 * A small YAML writer for the differential tests: it writes a value the way an author
 * might (block or flow collections, plain, single- or double-quoted strings, CRLF, a
 * comment), and both parsers involved, PyYAML (YAML 1.1, the runtime's) and `yaml` (1.2,
 * the service's), must read back the same value. Where a case means the two to differ
 * (`version: 1.0`, `alias: yes`), it writes a Raw token verbatim instead.
 */

/** A scalar written exactly as given: an intended ambiguity (`yes`, `1e3`, `2.0`, `!!str 1`). */
export class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** A mapping as key/value pairs: a key may repeat (the duplicate-key case) and order is kept. */
export class Pairs {
  readonly entries: Array<[string, Node]>;
  constructor(entries: Array<[string, Node]>) {
    this.entries = entries;
  }
}

export type Node = null | boolean | number | string | Raw | Pairs | Node[] | { [key: string]: Node };

export interface Style {
  /** How strings are quoted when plain is safe: plain, or always one quote style. */
  quote: 'plain' | 'single' | 'double';
  /** Collections at and below this depth are written in flow style (`{a: 1}`); Infinity: never. */
  flowFrom: number;
  crlf: boolean;
  comment: boolean;
}

export const PLAIN_STYLE: Style = { quote: 'plain', flowFrom: Infinity, crlf: false, comment: false };

// Words YAML 1.1 (PyYAML) or 1.2 reads as booleans or null when plain.
const SPECIAL_WORDS = /^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL)$/;
// A string both read as the same string when plain: starts with a letter or `_` (never a
// number, date, sexagesimal or indicator), no `: `, ` #`, flow indicators or edge spaces.
const SAFE_PLAIN = /^[\p{L}_][\p{L}\p{N}_./ -]*$/u;
// Characters PyYAML refuses raw in a stream, or reads as line breaks in YAML 1.1: escaped.
const ESCAPED = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\ufeff\\ufffe\\uffff';
const ESCAPE = new RegExp(`[${ESCAPED}]`, 'g');
const NEEDS_ESCAPE = new RegExp(`[${ESCAPED}]`);

function doubleQuoted(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(ESCAPE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

function plainSafe(s: string): boolean {
  return SAFE_PLAIN.test(s) && !s.endsWith(' ') && !SPECIAL_WORDS.test(s);
}

export function scalar(value: string, style: Style): string {
  if (style.quote === 'plain' && plainSafe(value)) return value;
  // Single quotes fold line breaks and cannot escape: anything unusual is double-quoted.
  if (style.quote === 'single' && !NEEDS_ESCAPE.test(value)) return `'${value.replace(/'/g, "''")}'`;
  return doubleQuoted(value);
}

/** A number both read as the same number: PyYAML's floats need a dot and a signed exponent. */
export function number(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`not a finite number: ${n}`);
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return String(n);
  // String(n) is `123.5`, `1e-7` or `1.5e+21` (its exponent always signed).
  const [, sign, whole, fraction, exponent] = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(n))!;
  return `${sign}${whole}.${fraction ?? '0'}${exponent ? `e${exponent}` : ''}`;
}

const entriesOf = (node: Pairs | { [key: string]: Node }): Array<[string, Node]> => (node instanceof Pairs ? node.entries : Object.entries(node));
const isMap = (node: Node): node is Pairs | { [key: string]: Node } => node !== null && typeof node === 'object' && !Array.isArray(node) && !(node instanceof Raw);

function leaf(node: Node, style: Style): string {
  if (node === null) return 'null';
  if (node instanceof Raw) return node.text;
  if (typeof node === 'boolean') return String(node);
  if (typeof node === 'number') return number(node);
  if (typeof node === 'string') return scalar(node, style);
  throw new Error(`not a scalar: ${typeof node} ${String(node)}`);
}

function flow(node: Node, style: Style): string {
  if (Array.isArray(node)) return `[${node.map((n) => flow(n, style)).join(', ')}]`;
  if (isMap(node)) return `{${entriesOf(node).map(([k, v]) => `${scalar(k, style)}: ${flow(v, style)}`).join(', ')}}`;
  return leaf(node, style);
}

/** Lines of a block collection at `indent`, or a scalar/flow text for one line. */
function block(node: Node, style: Style, indent: number, depth: number): string[] | string {
  const empty = Array.isArray(node) ? node.length === 0 : isMap(node) && entriesOf(node).length === 0;
  if (!Array.isArray(node) && !isMap(node)) return leaf(node, style);
  if (empty || depth >= style.flowFrom) return flow(node, style);
  const pad = ' '.repeat(indent);
  const lines: string[] = [];
  if (Array.isArray(node)) {
    for (const item of node) {
      const inner = block(item, style, indent + 2, depth + 1);
      if (typeof inner === 'string') lines.push(`${pad}- ${inner}`);
      // A mapping's first key goes on the dash's line; a nested sequence starts below it.
      else if (isMap(item)) lines.push(`${pad}- ${inner[0]!.trimStart()}`, ...inner.slice(1));
      else lines.push(`${pad}-`, ...inner);
    }
    return lines;
  }
  for (const [k, v] of entriesOf(node)) {
    const inner = block(v, style, indent + 2, depth + 1);
    if (typeof inner === 'string') lines.push(`${pad}${scalar(k, style)}: ${inner}`);
    else lines.push(`${pad}${scalar(k, style)}:`, ...inner);
  }
  return lines;
}

/** The YAML text of a document (a mapping, or anything a case wants at the root). */
export function toYaml(doc: Node, style: Style = PLAIN_STYLE): string {
  const body = block(doc, style, 0, 0);
  const lines = [...(style.comment ? ['# written by test/differential'] : []), ...(typeof body === 'string' ? [body] : body)];
  return lines.join(style.crlf ? '\r\n' : '\n') + (style.crlf ? '\r\n' : '\n');
}
