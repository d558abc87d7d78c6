import YAML from 'yaml';
import { LRUCache } from 'lru-cache';
import { DependencyUnavailable } from './dependencies.ts';
import { blobKey, type ObjectStore } from './objects.ts';
import type { Tree } from './trees.ts';
import { listOf } from './labContract.ts';
import type { LabManifests } from './runtimePins.ts';

const plain = (s: string) => s.replace(/_/g, '');
/** A base-60 scalar (`1:30`, a YAML 1.1 form PyYAML still reads): each part times 60 to the power of its place. */
const sexagesimal = (s: string, part: (p: string) => number) => {
  const sign = s.startsWith('-') ? -1 : 1;
  return sign * s.replace(/^[-+]/, '').split(':').reduce((sum, p) => sum * 60 + part(p), 0);
};

/**
 * The implicit scalar types of PyYAML's safe_load (its resolver's patterns, YAML 1.1), for
 * the `yaml` library: `1e3` and `0o17` are strings there, `yes`, `on` and `017` are not. A
 * date stays a string (JSON has none).
 */
const PYYAML_SCALARS = [
  { tag: 'tag:yaml.org,2002:null', default: true, test: /^(?:~|null|Null|NULL|)$/, resolve: () => null },
  {
    tag: 'tag:yaml.org,2002:bool', default: true, test: /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/,
    resolve: (s: string) => /^(?:yes|Yes|YES|true|True|TRUE|on|On|ON)$/.test(s),
  },
  {
    tag: 'tag:yaml.org,2002:int', default: true, test: /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/,
    resolve: (s: string) => {
      const v = plain(s);
      if (v.includes(':')) return sexagesimal(v, (p) => parseInt(p, 10));
      const digits = v.replace(/^[-+]/, '');
      const n = digits.startsWith('0b') ? parseInt(digits.slice(2), 2) : digits.startsWith('0x') ? parseInt(digits.slice(2), 16) : digits !== '0' && digits.startsWith('0') ? parseInt(digits, 8) : parseInt(digits, 10);
      return v.startsWith('-') ? -n : n;
    },
  },
  {
    tag: 'tag:yaml.org,2002:float', default: true, test: /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/,
    resolve: (s: string) => {
      const v = plain(s).toLowerCase();
      if (v.endsWith('.inf')) return v.startsWith('-') ? -Infinity : Infinity;
      if (v === '.nan') return NaN;
      return v.includes(':') ? sexagesimal(v, parseFloat) : parseFloat(v);
    },
  },
];

/**
 * A lab's or a model's manifest text, parsed as the runtime reads it (PyYAML's safe_load):
 * its scalar types, merge keys, and a repeated key not an error (its last value stands).
 * Throws on text that is not YAML.
 */
export function parseManifestText(text: string): any {
  return YAML.parse(text, { schema: 'failsafe', customTags: PYYAML_SCALARS, merge: true, uniqueKeys: false });
}

/** Python's whitespace (str.isspace): JavaScript's trim() also takes U+FEFF, and leaves U+001C to U+001F and U+0085. */
const PY_SPACE = '\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g');

/** A string as Python's str.strip() leaves it: how the runtime reads an alias, a package or a version. */
export function stripAsPython(s: string): string {
  return s.replace(PY_STRIP, '');
}

/**
 * Parsed manifests by the sha256 of their bytes. A blob never changes under its address,
 * so a run plan (made again when the run is created) reads a release's model.yaml files
 * from the object store once per process, not on every request. Callers only read them.
 */
const parsed = new LRUCache<string, { value: unknown }>({ max: 2000 });

/** A YAML file of a tree parsed, or undefined when absent or unreadable (other checks report that). */
async function yamlOf(objects: ObjectStore, tree: Tree, file: string): Promise<unknown> {
  const entry = tree[file];
  if (!entry) return undefined;
  const hit = parsed.get(entry.sha256);
  if (hit) return hit.value;
  let value: unknown;
  try {
    value = parseManifestText((await objects.getBytes(blobKey(entry.sha256))).toString('utf8'));
  } catch (err) {
    // An unavailable store is not an unreadable file: the caller answers 503.
    if (err instanceof DependencyUnavailable) throw err;
    value = undefined;
  }
  parsed.set(entry.sha256, { value });
  return value;
}

/** A stored tree's lab.yaml, parsed (undefined when absent or unreadable). */
export function labYamlOf(objects: ObjectStore, tree: Tree): Promise<unknown> {
  return yamlOf(objects, tree, 'lab.yaml');
}

/**
 * lab.yaml and the model.yaml of each `models[].path` of a stored tree (a revision's or a
 * release's source), as written: the input of the runtime pin check.
 */
export async function readLabManifests(objects: ObjectStore, tree: Tree, lab?: unknown): Promise<LabManifests> {
  const manifest = lab ?? await labYamlOf(objects, tree);
  const models = listOf((manifest as { models?: Array<{ path?: unknown }> } | undefined)?.models);
  const dirs = [...new Set(models.map((m) => (typeof m?.path === 'string' ? m.path.replace(/^\.\/|\/+$/g, '') : '')).filter(Boolean))];
  return {
    lab: manifest,
    models: await Promise.all(dirs.map(async (dir) => ({ dir, manifest: await yamlOf(objects, tree, `${dir}/model.yaml`) }))),
  };
}
