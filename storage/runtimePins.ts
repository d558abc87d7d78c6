import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { satisfies, validRange } from '@renovatebot/pep440';
import { parsePipRequirementsLine, type EnvironmentMarker, type Requirement } from 'pip-requirements-js';
import type { Finding } from './db/plans.ts';

/** The committed lock of the lab runtime (activities/execution/requirements.lock). */
export const RUNTIME_LOCK_FILE = fileURLToPath(new URL('../activities/execution/requirements.lock', import.meta.url));
/** The committed lock of the PEtab toolkit (activities/petab/toolkit.lock): a runtime the deployment provides beside the default one. */
export const TOOLKIT_LOCK_FILE = fileURLToPath(new URL('../activities/petab/toolkit.lock', import.meta.url));
/** The toolkit's direct pins (activities/petab/toolkit.in): what a lab declares to run in it. */
export const TOOLKIT_PINS = readFileSync(fileURLToPath(new URL('../activities/petab/toolkit.in', import.meta.url)), 'utf8')
  .split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));

/** What every lab runs with: the Python minor version and each installed distribution's version. */
export interface RuntimeLock {
  /** `major.minor`, e.g. "3.11". */
  python: string;
  /** PEP 503 canonical name → installed version. */
  packages: Map<string, string>;
  /** SHA-256 of the lock's bytes: the runtime's identity (two runs under it ran the same code around the lab). */
  sha256: string;
}

/** PEP 503 name normalisation (what pip and the runtime compare names by). */
export function canonicalName(name: string): string {
  return name.replace(/[-_.]+/g, '-').toLowerCase();
}

/** Parses the lock: `# python X.Y` and one exact `name==version` pin a requirement, with or without its `--hash` options. */
export function parseRuntimeLock(text: string): RuntimeLock {
  const python = /^# python (\d+\.\d+)\s*$/m.exec(text)?.[1];
  if (!python) throw new Error('the runtime lock does not state its Python version (# python X.Y)');
  const packages = new Map<string, string>();
  // One requirement per logical line: continuations joined, each file's `--hash` option left out.
  for (const logical of text.replace(/\\\n/g, ' ').split('\n')) {
    const line = logical.replace(/\s--hash=\S+/g, '').trimEnd();
    const req = line.trim() && !line.startsWith('#') ? parsePipRequirementsLine(line) : null;
    if (!req) continue;
    const pin = req.type === 'ProjectName' && req.versionSpec?.length === 1 && req.versionSpec[0]!.operator === '==' ? req.versionSpec[0]!.version : undefined;
    if (!pin || req.type !== 'ProjectName') throw new Error(`the runtime lock pins every distribution exactly; got ${JSON.stringify(line)}`);
    packages.set(canonicalName(req.name), pin);
  }
  return { python, packages, sha256: createHash('sha256').update(text).digest('hex') };
}

/** Reads the committed lock (callers read it once and keep it). */
export function readRuntimeLock(file = RUNTIME_LOCK_FILE): RuntimeLock {
  return parseRuntimeLock(readFileSync(file, 'utf8'));
}

/** A lab's manifests as written: lab.yaml and each model's model.yaml by its folder. */
export interface LabManifests {
  lab: unknown;
  models: Array<{ dir: string; manifest: unknown }>;
}

const record = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : {});

/** Values of an environment marker variable in the runtime (Linux, CPython). */
function markerEnvironment(lock: RuntimeLock): Record<string, string> {
  return {
    python_version: lock.python, python_full_version: lock.python, implementation_version: lock.python,
    os_name: 'posix', sys_platform: 'linux', platform_system: 'Linux', platform_machine: process.arch === 'arm64' ? 'aarch64' : 'x86_64',
    platform_python_implementation: 'CPython', implementation_name: 'cpython', extra: '',
  };
}

/** Whether a PEP 508 marker holds in the runtime (so the requirement applies to it). */
function markerHolds(m: EnvironmentMarker, env: Record<string, string>): boolean {
  if ('left' in m && (m.operator === 'and' || m.operator === 'or')) {
    const node = m as { operator: 'and' | 'or'; left: EnvironmentMarker; right: EnvironmentMarker };
    return node.operator === 'and' ? markerHolds(node.left, env) && markerHolds(node.right, env) : markerHolds(node.left, env) || markerHolds(node.right, env);
  }
  const leaf = m as { left: string; operator: string; right: string };
  const value = (side: string) => (/^["']/.test(side) ? side.slice(1, -1) : env[side] ?? '');
  const [l, r] = [value(leaf.left), value(leaf.right)];
  if (leaf.operator === 'in') return r.includes(l);
  if (leaf.operator === 'not in') return !r.includes(l);
  const versionVar = /version/.test(leaf.left) || /version/.test(leaf.right);
  if (versionVar && validRange(`${leaf.operator}${r}`)) return satisfies(l, `${leaf.operator}${r}`, { prereleases: true });
  return leaf.operator === '==' ? l === r : leaf.operator === '!=' ? l !== r : false;
}

function parseRequirement(raw: unknown): Requirement | undefined {
  if (typeof raw !== 'string') return undefined;
  try {
    return parsePipRequirementsLine(raw) ?? undefined;
  } catch {
    return undefined;
  }
}

const spec = (req: Requirement & { type: 'ProjectName' }) => (req.versionSpec ?? []).map((s) => `${s.operator}${s.version}`).join(',');

/**
 * The findings of one requirement list. `exact` lists are the runtime's own
 * (`runtime.dependencies.packages`: it accepts only `==` pins and installs nothing here);
 * other lists (`requirements`) state ranges a model was written against.
 */
function requirementFindings(lock: RuntimeLock, list: unknown, at: string, exact: boolean): Finding[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) return [{ severity: 'blocking', code: 'dependency_invalid', message: `${at} must be a list of requirement strings.`, path: at }];
  const env = markerEnvironment(lock);
  const findings: Finding[] = [];
  list.forEach((raw, i) => {
    const path = `${at}/${i}`;
    const req = parseRequirement(raw);
    if (!req || (req.type !== 'ProjectName' && req.type !== 'ProjectURL')) {
      findings.push({ severity: 'blocking', code: 'dependency_invalid', message: `${JSON.stringify(raw)} is not a PEP 508 requirement.`, path });
      return;
    }
    if (req.environmentMarkerTree && !markerHolds(req.environmentMarkerTree, env)) return;
    if (req.type === 'ProjectURL') {
      findings.push({ severity: 'blocking', code: 'runtime_unsatisfiable', message: `${raw} names a URL; nothing is installed for a lab, so only what the runtime has can be used.`, path });
      return;
    }
    const range = spec(req);
    if (exact && (req.versionSpec?.length !== 1 || req.versionSpec[0]!.operator !== '==' || req.versionSpec[0]!.version.includes('*'))) {
      findings.push({ severity: 'blocking', code: 'dependency_pin_invalid', message: `${raw}: runtime.dependencies.packages takes exact == pins only (the runtime refuses ranges); state ranges under requirements.`, path });
      return;
    }
    const name = canonicalName(req.name);
    const have = lock.packages.get(name);
    if (!have) {
      findings.push({ severity: 'blocking', code: 'runtime_unsatisfiable', message: `${raw} is not installed in the lab runtime (nothing is installed for a lab).`, path });
    } else if (range && !satisfies(have, range, { prereleases: true })) {
      // The runtime supplies its own biosimulant and skips a model's exact pin of it: such a lab still runs.
      const tolerated = name === 'biosimulant' && req.versionSpec?.length === 1 && req.versionSpec[0]!.operator === '==';
      findings.push(tolerated
        ? { severity: 'warning', code: 'runtime_version_differs', message: `${raw} is pinned; the lab runs with the runtime's biosimulant ${have}.`, path }
        : { severity: 'blocking', code: 'runtime_unsatisfiable', message: `${raw} is required; the lab runtime has ${req.name} ${have}.`, path });
    }
  });
  return findings;
}

function pythonFindings(lock: RuntimeLock, runtime: Record<string, unknown>, at: string): Finding[] {
  const wanted = runtime.python_version;
  if (wanted === undefined || wanted === null) return [];
  // YAML reads 3.10 as the number 3.1: the runtime compares str(value), so a number is taken as written there.
  if (String(wanted).trim() === lock.python) return [];
  return [{ severity: 'blocking', code: 'runtime_unsatisfiable', message: `runtime.python_version ${JSON.stringify(wanted)} is required; the lab runtime has Python ${lock.python}.`, path: at }];
}

/** Findings of one manifest's runtime block and requirement lists (lab.yaml or model.yaml). */
function manifestFindings(lock: RuntimeLock, manifest: unknown, file: string): Finding[] {
  const m = record(manifest);
  const runtime = record(m.runtime);
  const deps = record(runtime.dependencies);
  return [
    ...pythonFindings(lock, runtime, `${file}#/runtime/python_version`),
    ...requirementFindings(lock, deps.packages, `${file}#/runtime/dependencies/packages`, true),
    ...requirementFindings(lock, deps.requirements, `${file}#/runtime/dependencies/requirements`, false),
    ...requirementFindings(lock, m.requirements, `${file}#/requirements`, false),
  ];
}

/**
 * A lab's pins against the runtime lock: Python versions, `biosimulant` and other
 * requirements in lab.yaml and every model.yaml. What the runtime satisfies gives no
 * finding, what it tolerates a `warning`, what it cannot a `blocking` one naming the pin.
 * Used at plan time for every run kind and when recording a release.
 */
export function runtimePinFindings(lock: RuntimeLock, lab: LabManifests): Finding[] {
  return [
    ...manifestFindings(lock, lab.lab, 'lab.yaml'),
    ...lab.models.flatMap((m) => manifestFindings(lock, m.manifest, `${m.dir}/model.yaml`)),
  ];
}

/** The blocking findings as `path: message` lines: a release's recorded `runtime_problems`. */
export function runtimeProblems(findings: Finding[]): string[] {
  return findings.filter((f) => f.severity === 'blocking').map((f) => `${f.path}: ${f.message}`);
}
