import YAML from 'yaml';
import { LRUCache } from 'lru-cache';
import { DependencyUnavailable } from './dependencies.ts';
import { blobKey, type ObjectStore } from './objects.ts';
import type { Tree } from './trees.ts';
import { listOf } from './labContract.ts';
import type { LabManifests } from './runtimePins.ts';

/**
 * A lab's or a model's manifest text, parsed as the runtime reads it (PyYAML's safe_load,
 * where a repeated key is not an error: its last value stands). Throws on text that is not YAML.
 */
export function parseManifestText(text: string): any {
  return YAML.parse(text, { uniqueKeys: false });
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
