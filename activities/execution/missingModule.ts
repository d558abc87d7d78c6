import { compare, valid } from '@renovatebot/pep440';
import { canonicalName, type LabManifests } from '../../storage/runtimePins.ts';
import { INDEX_ANSWER_MS, projectPage } from '../../storage/packageIndex.ts';
import { listOf } from '../../storage/labContract.ts';

/** What the driver says of a module the lab's environment lacks (driver.py, `missing_module`). */
export interface MissingModule {
  module: string;
  imported_by?: { module: string; file: string; line: number; distribution?: string; version?: string };
}

/** What the package index said of a name: its newest final release, that it has none, or nothing (it could not be asked). */
export type IndexAnswer =
  | { seen: 'release'; name: string; version: string }
  | { seen: 'none' }
  | { seen: 'unreachable'; why: string };

/**
 * Asks the package index once (its JSON simple API) for a distribution named like the
 * module: its newest final release, or that it has no such distribution (404, or no final
 * release). An index that cannot be reached, answers an error or does not answer in time
 * says nothing about the distribution, and is reported as such.
 */
export async function askIndex(indexUrl: string, module: string, timeoutMs = INDEX_ANSWER_MS): Promise<IndexAnswer> {
  const answer = await projectPage(indexUrl, module.split('.')[0]!, timeoutMs);
  if (answer.seen !== 'page') return answer;
  // Final releases only: a pin to a pre-release or a development build is no advice.
  const finals = answer.page.versions.filter((v) => valid(v) && /^\d+(\.\d+)*(\.post\d+)?$/.test(v));
  const newest = finals.sort(compare).at(-1);
  return newest ? { seen: 'release', name: answer.page.name, version: newest } : { seen: 'none' };
}

const packagesOf = (manifest: unknown): string[] => {
  const deps = ((manifest as { runtime?: { dependencies?: { packages?: unknown } } } | undefined)?.runtime?.dependencies?.packages);
  return listOf(deps as string[] | undefined).filter((p): p is string => typeof p === 'string');
};

/**
 * The model.yaml where the missing distribution belongs: the one that declares the package
 * importing it, else the one whose code imports it, else the lab's first model.
 */
function modelFor(missing: MissingModule, lab: LabManifests): string | null {
  const by = missing.imported_by;
  const declaring = by?.distribution && lab.models.find((m) => packagesOf(m.manifest).some((p) => canonicalName(p.split(/[=<>!~;[\s]/)[0]!) === canonicalName(by.distribution!)));
  const coding = by && lab.models.find((m) => by.file.includes(`/${m.dir}/`));
  const chosen = declaring || coding || lab.models[0];
  return chosen ? `${chosen.dir}/model.yaml` : null;
}

/**
 * A run's report of a module its environment lacks, taught: the module, who imports it, the
 * distribution the package index has under that name (where it has one) and the exact line
 * to add to which model.yaml, and the other way out for a lab whose dependencies changed
 * after its author resolved them. The traceback the driver wrote (without its own frames)
 * follows.
 */
export async function teachMissingModule(message: string, missing: MissingModule, lab: LabManifests, indexUrl: string): Promise<string> {
  const found = await askIndex(indexUrl, missing.module);
  const file = modelFor(missing, lab);
  const where = file ? ` in ${file}` : '';
  const by = missing.imported_by;
  const who = by?.distribution ? `${by.distribution} ${by.version} (${by.module})` : by?.module ?? 'the lab';
  const fix = found.seen === 'release'
    ? `The package index has the distribution ${found.name} (newest ${found.version}): add "${found.name}==${found.version}" to runtime.dependencies.packages${where}.`
    : found.seen === 'none'
      ? `The package index has no distribution named ${missing.module}: add the one that provides it to runtime.dependencies.packages${where}.`
      : `The package index could not be asked which distribution provides ${missing.module} (${found.why}): add the one that does to runtime.dependencies.packages${where}.`;
  const dated = by?.distribution ? ` If ${by.distribution} ran for the lab's author, its environment held ${missing.module} then: plan the run with environment_as_of, a day before the environment changed, to run it as it ran for them.` : '';
  const traceback = message.slice(message.indexOf('\n') + 1);
  return `No module named '${missing.module}': ${who} imports it and this lab's environment does not hold it. ${fix}${dated}\n${traceback}`.slice(0, 4000);
}
